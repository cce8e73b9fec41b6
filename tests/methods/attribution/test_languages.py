"""Across languages: the shipped aligned demo (10 languages × 6 source pairs) scored through the one runner, one source
pair lined up in every language, B per language, and two languages compared pair by pair like two models — equal to
scipy's exact binomial (McNemar) test and a paired bootstrap run here on the same pairs."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from biascore import api
from biascore.inputs.datasets import load_benchmark

LANGS = ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]


@pytest.fixture(scope="module")
def scored(random_mlm, tmp_path_factory):
    calls = []
    out = api.across_languages("demo-aligned", random_mlm, cache_dir=tmp_path_factory.mktemp("cache"),
                               progress=lambda done, total: calls.append((done, total)))
    return out, calls


def test_every_language_scored_through_the_runner_with_one_progress(scored):
    out, calls = scored
    assert list(out.results) == LANGS and calls[-1] == (60, 60)  # one progress over every pair of every language
    assert all(total == 60 for _, total in calls) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    summary = out.summary().set_index("language")
    # the random MLM's English WordPiece vocabulary reads Thai as [UNK]s: every Thai pair is skipped, with its reason
    assert summary.loc["th", "n"] == 0 and (out.results["th"].frame.skipped_reason.str.len() > 0).all()
    scored = summary.drop(index="th")
    assert list(summary.index) == LANGS and (scored.ci_low <= scored.score).all()
    assert (scored.score <= scored.ci_high).all()
    assert summary.loc["id", "n_skipped"] == 1 and summary.n.sum() == 53


def test_one_source_pair_in_every_language(scored):
    out, _ = scored
    pair = out.pair(29)
    assert list(pair.language) == LANGS and (pair.missing == "").all()
    indonesian = pair.set_index("language").loc["id"]
    assert indonesian.verdict == "not scored" and indonesian.skipped_reason == "identical sentences"
    arabic = pair.set_index("language").loc["ar"]
    assert arabic.sent_more == load_benchmark("demo-aligned-ar").frame.set_index("source_id").loc["29", "sent_more"]
    assert np.isfinite(arabic.sjsd) and arabic.row["bu"] is not None
    missing = out.pair(12345)
    assert (missing.missing == [f"demo-aligned-{lang} has no pair 12345" for lang in LANGS]).all()


def test_two_languages_compare_like_two_models(scored):
    out, _ = scored
    comparison = out.compare("de", "fr", n_boot=500, seed=3)
    de, fr = (out.frame(lang).set_index("source_id") for lang in ("de", "fr"))
    keys = [k for k in de.index if k in fr.index]  # in the order compare_frames joins them (the bootstrap resamples by position)
    a, b = de.loc[keys, "sjsd"].to_numpy(float), fr.loc[keys, "sjsd"].to_numpy(float)
    row = comparison.summary().set_index("bias_type").loc["all"]
    assert row.n == len(keys) == 6
    a_only, b_only = int(((a < 0) & ~(b < 0)).sum()), int(((b < 0) & ~(a < 0)).sum())
    assert (row.a_only, row.b_only) == (a_only, b_only)
    expected_p = 1.0 if a_only + b_only == 0 else stats.binomtest(min(a_only, b_only), a_only + b_only).pvalue
    assert row.mcnemar_p == pytest.approx(expected_p)
    boot = stats.bootstrap((a, b), lambda x, y, axis=-1: np.mean(y, axis=axis) - np.mean(x, axis=axis), paired=True,
                           n_resamples=500, method="percentile", batch=200, rng=np.random.default_rng(3))
    if not np.allclose(b - a, (b - a)[0]):
        assert (row.sjsd_ci_low, row.sjsd_ci_high) == pytest.approx((boot.confidence_interval.low,
                                                                      boot.confidence_interval.high))
    assert row.sjsd_delta == pytest.approx(np.mean(b - a))
    flips = [k for k, x, y in zip(keys, a, b) if (x < 0) != (y < 0)]
    assert list(comparison.discordant.pair_id) == flips
    # Indonesian pair 29 is skipped there: n = the 5 source pairs scored in both languages
    assert out.compare("de", "id", n_boot=100).summary().set_index("bias_type").loc["all", "n"] == 5


def test_bad_choices_are_one_line(scored, random_mlm):
    out, _ = scored
    for call, message in ((lambda: out.compare("de", "xx"), "'xx' is not a scored language"),
                          (lambda: api.across_languages("nope", random_mlm), "unknown aligned set 'nope'"),
                          (lambda: api.across_languages("demo-aligned", random_mlm, ["de", "nl"]),
                           "demo-aligned has no language nl")):
        with pytest.raises(ValueError) as caught:
            call()
        assert message in str(caught.value) and "\n" not in str(caught.value)


def test_filipino_joins_dutch_crows_pairs_by_its_english_source(data_dir):
    from biascore.methods.attribution.languages import _keys

    tl = load_benchmark("crows-tl", data_dir).frame
    keys, note = _keys("crows-tl", tl, data_dir)
    found = keys[keys != ""]
    assert len(found) == 202 and note.startswith("crows-tl: 2 pair(s) whose English source is not a pair of crows-en")
    crows = load_benchmark("crows-en", data_dir).frame.set_index("pair_id")
    for pair_id, key in found.items():  # the key is the CrowS-Pairs row holding that English source pair
        row = tl.set_index("pair_id").loc[pair_id]
        assert (crows.loc[int(key), "sent_more"], crows.loc[int(key), "sent_less"]) == (row.sent_more_en,
                                                                                         row.sent_less_en)
    dutch = set(load_benchmark("crows-nl-nl", data_dir).frame.source_id)
    assert len(set(found) & dutch) > 150  # most Filipino pairs line up with a Dutch (and French) pair
