"""Agreement (Krippendorff's α, Cohen's κ, Fleiss' κ, the confusion table, each reviewer's agreement with the
others) against hand-worked examples and the krippendorff package, the disagreement list, how reviews combine
into final decisions, and the corrected benchmark: written by the CLI, loaded by the custom-CSV loader, scored by
`python -m biascore score` on the tiny MLM with the same B the dashboard's before/after shows."""
from __future__ import annotations

import os
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest

from biascore.inputs.datasets import load_benchmark
from biascore.review.agreement import agreement, confusion, disagreements, reviewer_agreement, reviewer_overview
from biascore.review.corrections import (before_after, corrected_benchmark, corrected_frame, decision_counts,
                                         final_decisions, reviewable_pairs)
from biascore.review.store import ADJUDICATION_COLUMNS, ReviewStore
from tests.cli_shell import Shell

REPO = Path(__file__).resolve().parents[2]
A, N, R = "accept", "needs correction", "reject"


def _reviews(rows: list[tuple]) -> pd.DataFrame:
    """(pair_id, reviewer, status[, corrected_more, corrected_less]) → a reviews frame like the store returns."""
    full = [(p, r, s, *(rest or ("", ""))) for p, r, s, *rest in rows]
    return pd.DataFrame(full, columns=["pair_id", "reviewer", "status", "corrected_more", "corrected_less"])


NO_ADJ = pd.DataFrame(columns=ADJUDICATION_COLUMNS)


def test_cohens_kappa_matches_a_hand_computation():
    # Ana: A A A N R A; Ben: A A N N R R.  p_o = 4/6; Ana's shares (4,1,1)/6, Ben's (2,2,2)/6
    # p_e = (4·2 + 1·2 + 1·2)/36 = 1/3;  κ = (2/3 − 1/3)/(1 − 1/3) = 1/2
    ana, ben = [A, A, A, N, R, A], [A, A, N, N, R, R]
    reviews = _reviews([(i, "Ana", s) for i, s in enumerate(ana)] + [(i, "Ben", s) for i, s in enumerate(ben)]
                       + [(6, "Ana", R)])  # reviewed by one only: not in κ
    pairs = pd.DataFrame({"pair_id": range(7), "bias_type": ["gender"] * 3 + ["age"] * 4})
    p_o, p_e = Fraction(4, 6), Fraction(4 * 2 + 1 * 2 + 1 * 2, 36)
    table = agreement(reviews, pairs).set_index("bias_type")
    row = table.loc["all"]
    assert row.method == "Cohen" and row.n_pairs == 6 and row.n_reviewers == 2
    assert row.kappa == pytest.approx(float((p_o - p_e) / (1 - p_e))) == pytest.approx(0.5)
    assert row.observed == pytest.approx(4 / 6)
    # per bias type: gender = pairs 0-2 (A/A, A/A, A/N): p_o = 2/3, p_e = (3·2 + 0·1)/9 = 2/3 → κ = 0
    assert table.loc["gender"].kappa == pytest.approx(0.0)
    # age = pairs 3-5 (N/N, R/R, A/R): p_o = 2/3; Ana (1,1,1)/3, Ben (0,1,2)/3: p_e = (0 + 1 + 2)/9 = 1/3 → κ = 1/2
    assert table.loc["age"].kappa == pytest.approx(0.5)


def test_alpha_and_the_confusion_table_match_a_hand_computation():
    import krippendorff

    # the pairs of the Cohen example: (A,A) (A,A) (A,N) (N,N) (R,R) (R,A), plus pair 6 reviewed once (left out)
    # coincidences: o_AA = 2 + 2, o_AN = o_NA = 1, o_NN = 2, o_RR = 2, o_AR = o_RA = 1 → n_A = 6, n_N = 3, n_R = 3,
    # n = 12;  α = 1 − (n − 1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k = 1 − 11·4 / (2·(6·3 + 6·3 + 3·3)) = 1 − 44/90 = 23/45
    ana, ben = [A, A, A, N, R, A], [A, A, N, N, R, R]
    reviews = _reviews([(i, "Ana", s) for i, s in enumerate(ana)] + [(i, "Ben", s) for i, s in enumerate(ben)]
                       + [(6, "Ana", R)])
    pairs = pd.DataFrame({"pair_id": range(7), "bias_type": "gender"})
    row = agreement(reviews, pairs).set_index("bias_type").loc["all"]
    assert row.alpha == pytest.approx(float(1 - Fraction(44, 90))) == pytest.approx(23 / 45)
    assert row.alpha_pairs == 6 and row.alpha_low <= row.alpha <= row.alpha_high
    code = {A: 0, N: 1, R: 2}
    data = [[code[s] for s in ana] + [code[R]], [code[s] for s in ben] + [float("nan")]]
    assert row.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"))
    # confusion: each two reviewers of a pair once; diagonal A: pairs 0, 1; N: pair 3; R: pair 4
    table = confusion(reviews)
    assert table.loc[A].tolist() == [2, 1, 1] and table.loc[N].tolist() == [1, 1, 0] and table.loc[R].tolist() == [
        1, 0, 1]


def test_alpha_uses_every_pair_whatever_its_number_of_reviews():
    # three reviewers, 2 pairs with 3 reviews and 3 with 2: Fleiss uses only the 2-review pairs (the most common
    # number), α all five
    rows = [(0, "Ana", A), (0, "Ben", A), (0, "Cy", A), (1, "Ana", N), (1, "Ben", N), (1, "Cy", R),
            (2, "Ana", R), (2, "Cy", R), (3, "Ben", A), (3, "Cy", N), (4, "Ana", A), (4, "Ben", A)]
    pairs = pd.DataFrame({"pair_id": range(5), "bias_type": "age"})
    row = agreement(_reviews(rows), pairs).set_index("bias_type").loc["all"]
    assert row.n_pairs == 3 and row.ratings_per_pair == 2 and row.alpha_pairs == 5
    counts = pd.crosstab(_reviews(rows).pair_id, _reviews(rows).status).reindex(columns=[A, N, R], fill_value=0)
    import krippendorff
    assert row.alpha == pytest.approx(krippendorff.alpha(value_counts=counts.to_numpy(),
                                                         level_of_measurement="nominal"))


def test_each_reviewers_agreement_with_the_others_matches_a_hand_computation():
    # pair 0: Ana A, Ben A, Cy R;  pair 1: Ana N, Ben N;  pair 2: Ana R, Cy R;  pair 3: Ben A alone
    rows = [(0, "Ana", A), (0, "Ben", A), (0, "Cy", R), (1, "Ana", N), (1, "Ben", N), (2, "Ana", R), (2, "Cy", R),
            (3, "Ben", A)]
    table = reviewer_agreement(_reviews(rows)).set_index("reviewer")
    # Ana vs others: pair 0 Ben same, Cy not; pair 1 Ben same; pair 2 Cy same → 3/4.  Ben: 2/3.  Cy: 1/3
    assert table.agreement.tolist() == pytest.approx([3 / 4, 2 / 3, 1 / 3])
    assert table.shared_pairs.tolist() == [3, 2, 2] and table.reviews.tolist() == [3, 3, 2]
    # Ana's κ: with Ben on (A,A),(N,N) κ = 1; with Cy on (A,R),(R,R): p_o = 1/2, p_e = 1/2·0 + 1/2·1 → κ = 0;
    # weighted by 2 and 2 shared pairs → 1/2.  Cy with Ben: one shared pair only → left out; Cy's κ = 0 (with Ana)
    assert table.loc["Ana", "kappa"] == pytest.approx(0.5) and table.loc["Cy", "kappa"] == pytest.approx(0.0)
    # α without Ana: only pair 0 (A,R) is pairable → 1 − 1·2/2 = 0;  without Cy: (A,A), (N,N) → 1;
    # without Ben: pairs 0 (A,R) and 2 (R,R): n_A = 1, n_R = 3 → 1 − 3·2/(2·3) = 0
    assert table.alpha_without.tolist() == pytest.approx([0.0, 0.0, 1.0])
    assignments = pd.DataFrame({"pair_id": [0, 1, 2, 3], "reviewer": ["Ana", "Ana", "Cy", "Dan"]})
    overview = reviewer_overview(assignments, _reviews(rows)).set_index("reviewer")
    assert overview.loc["Ana", ["assigned", "reviewed", "remaining", "reviews"]].tolist() == [2, 2, 0, 3]
    assert overview.loc["Dan", ["assigned", "reviewed", "reviews"]].tolist() == [1, 0, 0]
    assert overview.loc["Ben", ["assigned", "reviews"]].tolist() == [0, 3]  # reviewed without an assignment


def test_fleiss_kappa_matches_a_hand_computation():
    # 3 reviewers, 4 pairs: (A,A,A) (A,A,N) (N,N,R) (R,R,R)
    # P_i = (Σ n_ik² − 3)/6: 1, 1/3, 1/3, 1 → P̄ = 2/3;  p = (5, 3, 4)/12 → P̄_e = 50/144;  κ = 23/47
    ratings = [(A, A, A), (A, A, N), (N, N, R), (R, R, R)]
    rows = [(p, who, s) for p, trio in enumerate(ratings) for who, s in zip(("Ana", "Ben", "Cara"), trio)]
    rows += [(4, "Ana", A), (4, "Ben", R)]  # two ratings only: Fleiss needs the same number per pair
    pairs = pd.DataFrame({"pair_id": range(5), "bias_type": "gender"})
    p_bar, p_e = Fraction(2, 3), Fraction(25 + 9 + 16, 144)
    row = agreement(_reviews(rows), pairs).set_index("bias_type").loc["all"]
    assert row.method == "Fleiss" and row.n_pairs == 4 and row.ratings_per_pair == 3 and row.n_reviewers == 3
    assert row.kappa == pytest.approx(float((p_bar - p_e) / (1 - p_e))) == pytest.approx(23 / 47)
    assert row.observed == pytest.approx(2 / 3)


def test_kappa_is_undefined_when_it_must_be():
    pairs = pd.DataFrame({"pair_id": range(3), "bias_type": "gender"})
    same = agreement(_reviews([(i, r, A) for i in range(3) for r in ("Ana", "Ben")]), pairs).iloc[0]
    assert same.kappa != same.kappa and "chance agreement is 1" in same.note and same.observed == 1.0
    lone = agreement(_reviews([(0, "Ana", A), (1, "Ben", R)]), pairs).iloc[0]
    assert lone.kappa != lone.kappa and "fewer than two reviewers" in lone.note
    empty = agreement(_reviews([]), pairs)
    assert list(empty.bias_type) == ["all"] and empty.iloc[0].n_pairs == 0


def test_disagreements_list_status_and_correction_conflicts_with_adjudication():
    reviews = _reviews([(0, "Ana", A), (0, "Ben", A),                       # agree
                        (1, "Ana", A), (1, "Ben", R),                       # status differs
                        (2, "Ana", N, "X.", ""), (2, "Ben", N, "Y.", ""),   # corrections differ
                        (3, "Ana", N, "X.", ""), (3, "Ben", N, "X.", ""),   # same correction
                        (4, "Ana", R)])
    pairs = pd.DataFrame({"pair_id": range(5), "bias_type": ["gender", "age", "age", "gender", "age"]})
    adj = pd.DataFrame([("demo", 1, R, "", "", "", "Cara", "2026-01-01T00:00:00+00:00")], columns=ADJUDICATION_COLUMNS)
    table = disagreements(reviews, pairs, adj)
    assert table[["pair_id", "why", "adjudicated", "final_status", "adjudicator"]].values.tolist() == [
        [1, "different statuses", True, R, "Cara"], [2, "different corrections", False, "", ""]]


def test_final_decisions_combine_reviews_and_adjudication():
    reviews = _reviews([(0, "Ana", A), (0, "Ben", A),
                        (1, "Ana", A), (1, "Ben", R),
                        (2, "Ana", N, "X.", ""), (2, "Ben", N, "Y.", ""),
                        (3, "Ana", N, "Bago.", "Luma."), (3, "Ben", N, "Bago.", "Luma."),
                        (4, "Ana", R),
                        (5, "Ana", N),                                      # asked for, not written
                        (6, "Ana", A), (6, "Ben", R)])
    adj = pd.DataFrame([("demo", 6, N, "", "Tama.", "", "Cara", "t")], columns=ADJUDICATION_COLUMNS)
    d = final_decisions(range(8), reviews, adj).set_index("pair_id")
    assert list(d.decision) == [A, "unresolved", "unresolved", N, R, "correction not written", N, "unreviewed"]
    assert d.loc[3, ["corrected_more", "corrected_less"]].tolist() == ["Bago.", "Luma."]
    assert d.loc[6, ["corrected_more", "corrected_less", "source"]].tolist() == ["", "Tama.", "adjudicated by Cara"]
    assert decision_counts(d.reset_index()) == {A: 1, N: 2, R: 1, "unresolved": 2, "correction not written": 1,
                                                "unreviewed": 1}


def test_corrected_frame_applies_corrections_and_drops_the_rest():
    pairs = pd.DataFrame({"pair_id": [10, 11, 12, 13], "bias_type": ["gender", "age", "age", "religion"],
                          "sent_more": ["m10", "m11", "m12", "m13"], "sent_less": ["l10", "l11", "l12", "l13"],
                          "sent_more_en": ["e10", "e11", "e12", "e13"], "sent_less_en": ["f10", "f11", "f12", "f13"]})
    reviews = _reviews([(10, "Ana", A), (11, "Ana", N, "", "fixed less"), (12, "Ana", R), (13, "Ana", N)])
    out = corrected_frame(pairs, final_decisions(pairs.pair_id, reviews, NO_ADJ))
    assert out.to_dict("list") == {
        "sent_more": ["m10", "m11"], "sent_less": ["l10", "fixed less"], "bias_type": ["gender", "age"],
        "sent_more_en": ["e10", "e11"], "sent_less_en": ["f10", "f11"], "source_pair_id": [10, 11],
        "review_status": [A, N], "corrected": [False, True]}


# ------------------------------------------------------------------------------------ end to end through the CLI
@pytest.fixture(scope="module")
def cli(processes):
    """`python -m biascore` in the repository: this module's commands, one after another in one interpreter."""
    with Shell(REPO, dict(os.environ)) as shell:
        yield shell


def test_corrected_csv_is_scored_by_the_cli_like_the_dashboard_comparison(tmp_path, tiny_mlm, cli):
    from biascore.methods.attribution.scorer import summarize
    from biascore.runs import runner
    from biascore.methods import get

    db, out = tmp_path / "reviews.sqlite", tmp_path / "corrected.csv"
    bm = load_benchmark("demo")
    pairs = reviewable_pairs(bm)
    assert len(pairs) == 16 and set(pairs.language) == {"tl"}
    store = ReviewStore(db)
    ids = list(pairs.pair_id)
    for pid in ids[:10]:
        store.save("demo", pid, "Ana", A)
    store.save("demo", ids[10], "Ana", R, ["mistranslation"])
    store.save("demo", ids[11], "Ana", N, ["mistranslation"], "", "Laging nahuhuli sa bawat pulong ang mga Pilipino.")
    store.save("demo", ids[12], "Ana", A)
    store.save("demo", ids[12], "Ben", R)                       # disagreement …
    store.adjudicate("demo", ids[12], "Cara", N, "", "", "Ang binagong pangungusap para sa pagsubok.")  # … decided
    store.save("demo", ids[13], "Ana", A)
    store.save("demo", ids[13], "Ben", R)                       # unresolved: left out

    done = cli("review", "corrected", "--db", str(db), "--benchmark", "demo", "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "wrote 12 pairs of demo" in done.stdout and "unresolved: 1" in done.stdout
    loaded = load_benchmark(str(out))
    assert len(loaded) == 12 and not loaded.malformed
    assert {"sent_more_en", "sent_less_en", "language"} <= set(loaded.frame.columns)
    assert list(loaded.frame.bias_type) == list(pairs.set_index("pair_id").loc[ids[:10] + ids[11:13]].bias_type)
    assert loaded.frame.sent_more.iloc[10] == "Laging nahuhuli sa bawat pulong ang mga Pilipino."
    assert loaded.frame.sent_less.iloc[11] == "Ang binagong pangungusap para sa pagsubok."
    assert loaded.frame.sent_more_en.iloc[0] == pairs.sent_more_en.iloc[0]

    scored = cli("score", "--model", tiny_mlm.name, "--benchmark", str(out))
    assert scored.returncode == 0, scored.stderr
    line = next(l for l in scored.stdout.splitlines() if l.strip().startswith("all"))
    n_cli, b_cli = int(line.split()[1]), float(line.split()[2])

    corrected = pd.read_csv(out, keep_default_na=False)
    table = before_after(tiny_mlm, bm, corrected).set_index("bias_type")
    assert table.loc["all", "n_after"] == n_cli
    assert table.loc["all", "B_after"] == pytest.approx(b_cli, abs=0.005)
    # independent: B after = the engine's B on the loaded CSV; B before = B on demo's Filipino pairs
    direct = summarize(runner.run(get("attribution"), tiny_mlm, loaded).frame).set_index("bias_type")
    assert table.loc["all", "B_after"] == pytest.approx(direct.loc["all", "score"])
    full = runner.run(get("attribution"), tiny_mlm, bm).frame
    tl = full[full.pair_id.isin(ids) & (full.skipped_reason == "")]
    assert table.loc["all", "B_before"] == pytest.approx(100 * tl.biased.mean())
    kept = tl[tl.pair_id.isin(ids[:10] + ids[11:13])]
    assert table.loc["all", "B_kept_before"] == pytest.approx(100 * kept.biased.mean())
    assert corrected_benchmark(bm, corrected).content_hash == loaded.content_hash  # same pairs as the CSV
    compared = cli("review", "compare", "--db", str(db), "--benchmark", "demo", "--model", tiny_mlm.name)
    assert compared.returncode == 0, compared.stderr
    row = next(l for l in compared.stdout.splitlines() if l.strip().startswith("all")).split()
    header = next(l for l in compared.stdout.splitlines() if l.strip().startswith("bias_type")).split()
    shown = dict(zip(header, row))
    assert float(shown["B_after"]) == pytest.approx(table.loc["all", "B_after"], abs=0.0005)
    assert float(shown["B_before"]) == pytest.approx(table.loc["all", "B_before"], abs=0.0005)


def test_review_cli_agreement_export_and_adjudicate(tmp_path, cli):
    db = tmp_path / "reviews.sqlite"
    store = ReviewStore(db)
    ids = list(reviewable_pairs(load_benchmark("demo")).pair_id)
    for pid, (a, b) in zip(ids, [(A, A), (A, R), (N, N), (R, R)]):
        store.save("demo", pid, "Ana", a)
        store.save("demo", pid, "Ben", b)
    done = cli("review", "agreement", "--db", str(db), "--benchmark", "demo", "--out", str(tmp_path / "k.csv"))
    assert done.returncode == 0, done.stderr
    k = pd.read_csv(tmp_path / "k.csv").set_index("bias_type")
    assert k.loc["all", "method"] == "Cohen" and k.loc["all", "n_pairs"] == 4
    assert k.loc["all", "alpha"] == pytest.approx(agreement(store.reviews("demo"), reviewable_pairs(
        load_benchmark("demo"))).set_index("bias_type").loc["all", "alpha"])
    assert "diagonal = agreements" in done.stdout
    assert k.loc["all", "kappa"] == pytest.approx(agreement(store.reviews("demo"), reviewable_pairs(
        load_benchmark("demo"))).set_index("bias_type").loc["all", "kappa"])
    assert cli("review", "disagreements", "--db", str(db), "--benchmark", "demo").stdout.startswith(
        "1 pair(s) to adjudicate in demo, 0 adjudicated")
    bad = cli("review", "adjudicate", "--db", str(db), "--benchmark", "demo", "--pair", "0", "--by", "Cara",
               "--status", "accept")
    assert bad.returncode == 2 and bad.stderr.strip() == "error: pair 0 is not a reviewable pair of demo"
    ok = cli("review", "adjudicate", "--db", str(db), "--benchmark", "demo", "--pair", str(ids[1]), "--by", "Cara",
              "--status", "reject")
    assert ok.returncode == 0, ok.stderr
    assert store.adjudications("demo").status.tolist() == [R]
    exported = cli("review", "export", "--db", str(db), "--out", str(tmp_path / "all.csv"))
    assert exported.returncode == 0 and len(pd.read_csv(tmp_path / "all.csv")) == 8
    missing = cli("review", "export", "--db", str(tmp_path / "none.sqlite"), "--out", str(tmp_path / "x.csv"))
    assert missing.returncode == 2 and "no review database" in missing.stderr
    assert not (tmp_path / "none.sqlite").exists()
