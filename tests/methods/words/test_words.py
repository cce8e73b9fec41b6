"""Words view engine (biascore.methods.words.table): the per-word aggregation against a hand computation
on a constructed frame, the filters, the two-model join, the cache, and the CLI on a masked LM (the hermetic random one)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.weightstats import DescrStatsW

from biascore.runs import runner
from biascore.methods import get
from biascore.methods.words.table import (compare_words, max_pair_count, word_occurrences, word_pairs, word_table,
                                                word_types)


def occurrences_for_run(entry, cache, **options):
    """The words of one stored attribution run, asked of the runner's door as the Words page asks."""
    return runner.run_on_stored(get("words"), entry, cache=cache, **options).frame

# A constructed attribution frame: pair 1 has "are" twice, pair 4 was skipped (no words), "." and "—" are
# punctuation-only, "don’t" (typographic apostrophe) and "don't" are one type, "Women"/"women"/"ARE"/"are" fold.
FRAME = pd.DataFrame({
    "pair_id": [1, 2, 3, 4, 5],
    "bias_type": ["gender", "race", "gender", "gender", "race"],
    "words": [["Women", "are", "bad", ".", "are"], ["women", "ARE", "good", "don\u2019t"], ["Gay", "don't"], [],
              ["\u2014", "bad"]],
    "word_bu": [[-0.2, 0.1, -0.3, 0.05, 0.3], [0.4, -0.1, 0.0, -0.05], [-0.6, 0.15], [], [0.9, 0.2]],
    "sjsd": [-0.01, 0.06, -0.2, float("nan"), 0.5],
    "biased": [True, False, True, False, False],
    "sent_more": ["s1", "s2", "s3", "s4", "s5"],
    "sent_less": ["l1", "l2", "l3", "l4", "l5"],
    "skipped_reason": ["", "", "", "no shared tokens", ""],
})
# The same occurrences written out by hand: word type → [(pair, b), …]
BY_HAND = {
    "women": [(1, -0.2), (2, 0.4)],
    "are": [(1, 0.1), (1, 0.3), (2, -0.1)],
    "bad": [(1, -0.3), (5, 0.2)],
    "good": [(2, 0.0)],
    "don't": [(2, -0.05), (3, 0.15)],
    "gay": [(3, -0.6)],
}


def expected_row(occ: list[tuple[int, float]]) -> dict:
    """Independent computation: statsmodels' t confidence interval of the mean, plain Python counts."""
    b = [v for _, v in occ]
    row = {"n_pairs": len({p for p, _ in occ}), "n_occurrences": len(b), "mean_b": sum(b) / len(b),
           "share_biased": sum(v < 0 for v in b) / len(b), "share_zero": sum(v == 0 for v in b) / len(b),
           "ci_low": math.nan, "ci_high": math.nan}
    if len(b) >= 2:
        row["ci_low"], row["ci_high"] = DescrStatsW(np.array(b)).tconfint_mean(alpha=0.05)
    return row


def check_table(table: pd.DataFrame, by_hand: dict[str, list[tuple[int, float]]]) -> None:
    assert sorted(table.word_type) == sorted(by_hand)
    for word, occ in by_hand.items():
        got = table.set_index("word_type").loc[word]
        for col, value in expected_row(occ).items():
            if math.isnan(value):
                assert math.isnan(got[col]), (word, col, got[col])
            else:
                assert got[col] == pytest.approx(value, abs=1e-12), (word, col)


def test_word_types_fold_case_apostrophes_and_drop_punctuation():
    got = word_types(pd.Series(["Women", "ARE", "don\u2019t", "Don't", ".", "\u2014", "--", "'", "_", "Straße",
                                "ＡＢＣ", "mag-aral", "3"]))
    assert got.tolist()[:3] == ["women", "are", "don't"] and got[3] == "don't"
    assert got[4:9].isna().all()  # punctuation-only (and a lone underscore) is not a word type
    assert got.tolist()[9:] == ["strasse", "abc", "mag-aral", "3"]


def test_aggregation_matches_a_hand_computation():
    occ = word_occurrences(FRAME)
    assert len(occ) == sum(len(v) for v in BY_HAND.values()) == 11
    table = word_table(occ)
    check_table(table, BY_HAND)
    # one number fully by hand: "women" b = (-0.2, 0.4): mean 0.1, s = 0.3·√2, s/√n = 0.3, t(0.975, 1) = 12.7062…
    women = table.set_index("word_type").loc["women"]
    assert women.ci_low == pytest.approx(0.1 - 12.706204736 * 0.3, abs=1e-8)
    assert women.ci_high == pytest.approx(0.1 + 12.706204736 * 0.3, abs=1e-8)
    # written forms are kept for display; sorted by pair count, then mean b
    assert table.set_index("word_type").loc["don't", "forms"] == "don't · don\u2019t"
    assert table.word_type.tolist()[:2] == ["bad", "don't"]  # n_pairs 2: mean b -0.05, 0.05, then 0.1 (are, women)
    assert set(table.word_type[2:4]) == {"are", "women"} and table.n_pairs.tolist() == [2, 2, 2, 2, 1, 1]


def test_single_occurrence_has_no_interval():
    table = word_table(word_occurrences(FRAME)).set_index("word_type")
    for word in ("good", "gay"):  # n = 1: undefined, never a zero-width interval
        assert np.isnan(table.loc[word, "ci_low"]) and np.isnan(table.loc[word, "ci_high"])
    assert table.loc["good", "share_zero"] == 1.0 and table.loc["good", "share_biased"] == 0.0
    # n ≥ 2 with identical values: an exact zero-width interval is the honest answer
    same = pd.DataFrame({"pair_id": [1, 2], "bias_type": ["x", "x"], "words": [["the"], ["The"]],
                         "word_bu": [[0.0], [0.0]]})
    row = word_table(word_occurrences(same)).iloc[0]
    assert (row.n_occurrences, row.ci_low, row.ci_high, row.share_zero) == (2, 0.0, 0.0, 1.0)


def test_filters_bias_type_and_min_count():
    occ = word_occurrences(FRAME)
    gender = {w: [(p, b) for p, b in occ_ if FRAME.set_index("pair_id").bias_type[p] == "gender"]
              for w, occ_ in BY_HAND.items()}
    check_table(word_table(occ, ["gender"]), {w: o for w, o in gender.items() if o})
    check_table(word_table(occ, ["race", "gender"]), BY_HAND)
    check_table(word_table(occ, min_count=2), {w: o for w, o in BY_HAND.items() if len({p for p, _ in o}) >= 2})
    check_table(word_table(occ, ["race"], min_count=2), {})
    assert max_pair_count(occ) == 2 and max_pair_count(occ.iloc[:0]) == 1
    with pytest.raises(ValueError, match="min-count"):
        word_table(occ, min_count=0)


def test_pairs_of_a_word():
    occ = word_occurrences(FRAME)
    pairs = word_pairs(occ, FRAME, "are")
    assert pairs.pair_id.tolist() == [2, 1]  # most negative b first
    assert pairs.occurrences.tolist() == [1, 2]
    assert pairs.b.tolist() == pytest.approx([-0.1, 0.2])
    assert pairs.sent_more.tolist() == ["s2", "s1"] and pairs.biased.tolist() == [False, True]
    assert word_pairs(occ, FRAME, "are", ["gender"]).pair_id.tolist() == [1]
    assert word_pairs(occ, FRAME, "no such word").empty


def test_two_models_joined_on_word_type():
    occ_a = word_occurrences(FRAME)
    other = FRAME.copy()
    other["words"] = [["women", "are"], ["women", "good"], ["gay"], [], ["bad", "kind"]]
    other["word_bu"] = [[0.5, -0.4], [-0.1, 0.2], [0.3], [], [-0.2, -0.7]]
    occ_b = word_occurrences(other)
    joined = compare_words({"A": occ_a, "B": occ_b}).set_index("word_type")
    table_a, table_b = word_table(occ_a).set_index("word_type"), word_table(occ_b).set_index("word_type")
    assert set(joined.index) == set(table_a.index) | set(table_b.index)  # outer join
    for label, table in (("A", table_a), ("B", table_b)):
        for word in joined.index:
            for col in ("n_pairs", "mean_b", "ci_low", "ci_high", "share_biased"):
                got = joined.loc[word, f"{label}: {col}"]
                want = table[col].get(word, np.nan)
                assert (pd.isna(got) and pd.isna(want)) or got == pytest.approx(want), (label, word, col)
    assert pd.isna(joined.loc["kind", "A: n_pairs"]) and joined.loc["kind", "B: n_pairs"] == 1
    assert joined.loc["women", "mean_b difference"] == pytest.approx(0.2 - 0.1)
    # min count: kept when either model reaches it, with each model's own (unfiltered) numbers
    kept = compare_words({"A": occ_a, "B": occ_b}, min_count=2).set_index("word_type")
    assert set(kept.index) == {"women", "are", "bad", "don't"}
    assert kept.loc["are", "B: n_pairs"] == 1
    gender = compare_words({"A": occ_a, "B": occ_b}, ["gender"]).set_index("word_type")
    assert gender.loc["women", "A: mean_b"] == pytest.approx(-0.2) and gender.loc["women", "B: mean_b"] == 0.5
    with pytest.raises(ValueError):
        compare_words({"A": occ_a})


def test_real_frame_matches_a_per_pair_loop(random_mlm):
    """On the engine's own attribution frame (demo, a masked LM): occurrences equal a plain loop over the pairs."""
    frame = runner.run(get("attribution"), random_mlm, "demo").frame
    occ = word_occurrences(frame)
    loop = [(int(r.pair_id), w.casefold(), float(b)) for r in frame.itertuples()
            for w, b in zip(r.words, r.word_bu) if any(c.isalnum() for c in w)]
    assert [(p, w, b) for p, w, b in occ[["pair_id", "word_type", "b"]].itertuples(index=False)] == loop
    table = word_table(occ).set_index("word_type")
    by_hand: dict[str, list[tuple[int, float]]] = {}
    for p, w, b in loop:
        by_hand.setdefault(w, []).append((p, b))
    check_table(table.reset_index(), by_hand)


def test_occurrences_are_cached_per_run(random_mlm, tmp_path):
    from biascore.store.cache import ResultCache
    from biascore.methods.attribution.results import best_runs, cached_runs
    cache = ResultCache(tmp_path / "cache")
    frame = runner.run(get("attribution"), random_mlm, "demo", cache=cache).frame
    run = best_runs(cached_runs(cache)).iloc[0]
    first = occurrences_for_run(run.entry, cache)
    pd.testing.assert_frame_equal(first, word_occurrences(frame))
    files = list((cache.root / "words").glob("*.parquet"))
    assert len(files) == 1
    again = occurrences_for_run(run.entry, cache)  # read back (verified) from the file
    pd.testing.assert_frame_equal(again, first)
    assert list((cache.root / "words").glob("*.parquet")) == files
    paper = occurrences_for_run(run.entry, cache, jsd="paper")  # another variant, another entry
    assert len(list((cache.root / "words").glob("*.parquet"))) == 2
    assert not np.allclose(paper.b, first.b)


# ------------------------------------------------------------------------------------------------ CLI
def run_cli(*argv: str) -> int:
    """The CLI's exit code (argparse refuses a bad option value with SystemExit(2) and one line)."""
    from biascore.cli.main import main
    try:
        return main(list(argv))
    except SystemExit as exc:
        return int(exc.code)


def test_cli_on_demo_with_the_tiny_mlm(random_mlm, tmp_path, capsys):
    out = tmp_path / "words.csv"
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--min-count", "2",
                   "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "word types in >= 2 pair(s)" in printed
    expected = word_table(word_occurrences(runner.run(get("attribution"), random_mlm, "demo").frame), min_count=2)
    got = pd.read_csv(out, keep_default_na=False, na_values=[""])
    assert got.word_type.tolist() == expected.word_type.tolist()
    np.testing.assert_allclose(got[["mean_b", "ci_low", "ci_high", "share_biased"]].to_numpy(float),
                               expected[["mean_b", "ci_low", "ci_high", "share_biased"]].to_numpy(float))
    assert got.n_pairs.tolist() == expected.n_pairs.tolist()

    # bias-type filter, one word's pairs
    bias_type = str(runner.run(get("attribution"), random_mlm, "demo").frame.bias_type.iloc[0])
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--bias-type", bias_type,
                   "--out", str(out)) == 0
    got = pd.read_csv(out, keep_default_na=False, na_values=[""])
    occ = word_occurrences(runner.run(get("attribution"), random_mlm, "demo").frame)
    assert got.word_type.tolist() == word_table(occ, [bias_type], min_count=2).word_type.tolist()  # the default
    word = expected.word_type.iloc[0]
    capsys.readouterr()
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--word", word.upper(),
                   "--out", str(out)) == 0
    assert f"pair(s) with the word {word!r}" in capsys.readouterr().out
    got = pd.read_csv(out)
    frame = runner.run(get("attribution"), random_mlm, "demo").frame
    assert got.pair_id.tolist() == word_pairs(occ, frame, word).pair_id.tolist()


def test_cli_help_lists_the_command(capsys):
    from biascore.cli.main import main

    for argv in (["--help"], ["words", "--help"]):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 0
        assert "words" in capsys.readouterr().out


def test_cli_compare_and_bad_input(random_mlm, smollm, tmp_path, capsys):
    out = tmp_path / "cmp.csv"
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--compare", "smollm2-135m",
                   "--min-count", "3", "--out", str(out)) == 0
    got = pd.read_csv(out)
    expected = compare_words({lm.name: word_occurrences(runner.run(get("attribution"), lm, "demo").frame)
                              for lm in (random_mlm, smollm)}, min_count=3)
    assert got.word_type.tolist() == expected.word_type.tolist()
    np.testing.assert_allclose(got["mean_b difference"].to_numpy(float),
                               expected["mean_b difference"].to_numpy(float))
    capsys.readouterr()
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--bias-type", "no-such-type") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown --bias-type no-such-type") and "\n" not in err
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--min-count", "0") == 2
    assert run_cli("words", "--model", random_mlm.name, "--benchmark", "demo", "--compare", random_mlm.name) == 2


def test_concurrent_callers_get_the_same_occurrences(random_mlm, tmp_path):
    """Eight threads asking for the same run's occurrences at once: identical frames, one cache file, no
    temporary files left behind (the cache computes once under a file lock, writes atomically, verifies reads)."""
    from concurrent.futures import ThreadPoolExecutor

    from biascore.store.cache import ResultCache
    from biascore.methods.attribution.results import best_runs, cached_runs
    cache = ResultCache(tmp_path / "cache")
    frame = runner.run(get("attribution"), random_mlm, "demo", cache=cache).frame
    entry = best_runs(cached_runs(cache)).iloc[0].entry
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda _: occurrences_for_run(entry, ResultCache(cache.root)), range(8)))
    expected = word_occurrences(frame)
    for got in results:
        pd.testing.assert_frame_equal(got, expected)
    assert not list((cache.root / "words").glob(".*.tmp"))
    assert len(list((cache.root / "words").glob("*.parquet"))) == 1


def test_one_default_minimum_count_on_the_cli_and_the_dashboard(capsys):
    """(issue 41) `biascore words` and the Words page leave out words in fewer than the same number of pairs,
    and both say so (the page's slider: tests/methods/words/test_words_page.py)."""
    import re

    from biascore.cli.main import main

    assert get("words").Options.build().min_count == 2
    with pytest.raises(SystemExit):
        main(["words", "--help"])
    said = " ".join(capsys.readouterr().out.split())
    assert re.search(r"--min-count\b.*the dashboard's too.*\b2\b", said), said
