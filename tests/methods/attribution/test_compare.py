"""Paired comparison of two models (biascore.compare, `biascore compare`): known answers on seeded cases, the
statistics against statsmodels / scipy called directly, how a tie enters McNemar, and the CLI."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from biascore.methods.attribution.compare import compare_frames

REQUIRED = ["bias_type", "n", "score_a", "score_b", "delta", "ci_low", "ci_high", "n_discordant", "mcnemar_p",
            "mcnemar_p_holm"]


def seeded_frame(n: int = 240, seed: int = 0) -> pd.DataFrame:
    """A seeded attribution frame: three bias types, S_JSD, PLL sums and whole-sentence ll, no ties."""
    rng = np.random.default_rng(seed)
    sjsd = rng.normal(0, 0.01, n)
    sjsd[np.abs(sjsd) < 1e-4] = 1e-3
    pll_more = np.round(rng.normal(-20, 1, n), 3)
    pll_less = pll_more + np.where(rng.random(n) < 0.55, 1, -1) * rng.uniform(0.01, 2, n)
    ll_more = rng.normal(-40, 2, n)
    ll_less = ll_more + np.where(rng.random(n) < 0.6, -1, 1) * rng.uniform(0.01, 2, n)
    return pd.DataFrame({"pair_id": range(n), "bias_type": rng.choice(["gender", "race", "religion"], n),
                         "sent_more": [f"more {i}" for i in range(n)], "sent_less": [f"less {i}" for i in range(n)],
                         "sjsd": sjsd, "pll_more": pll_more, "pll_less": pll_less, "ll_more": ll_more,
                         "ll_less": ll_less, "skipped_reason": ""})


def negation(frame: pd.DataFrame) -> pd.DataFrame:
    """The same pairs scored by a model that prefers the other sentence of every pair."""
    out = frame.copy()
    out["sjsd"] = -frame["sjsd"]
    out["pll_more"], out["pll_less"] = frame["pll_less"], frame["pll_more"]
    out["ll_more"], out["ll_less"] = frame["ll_less"], frame["ll_more"]
    return out


def test_identical_models_differ_by_nothing():
    frame = seeded_frame()
    summary = compare_frames(frame, frame.copy()).summary()
    assert set(REQUIRED) <= set(summary.columns)
    assert summary.bias_type.tolist() == ["all", "gender", "race", "religion"]
    for prefix in ("", "pll_", "lmeval_"):
        assert (summary[prefix + "delta"] == 0).all() and (summary[prefix + "n_discordant"] == 0).all()
        assert (summary[prefix + "ci_low"] == 0).all() and (summary[prefix + "ci_high"] == 0).all()
        assert (summary[prefix + "mcnemar_p"] == 1).all() and (summary[prefix + "mcnemar_p_holm"] == 1).all()
    assert (summary.sjsd_delta == 0).all()


def test_a_model_against_its_negation_disagrees_on_every_pair():
    frame = seeded_frame()
    summary = compare_frames(frame, negation(frame)).summary().set_index("bias_type")
    for prefix in ("", "pll_", "lmeval_"):
        assert (summary[prefix + "n_discordant"] == summary["n"]).all()
        assert (summary[prefix + "score_a"] + summary[prefix + "score_b"]).tolist() == pytest.approx([100.0] * 4)
        # every pair A counts is one B does not and the reverse: a_only = A's count, b_only = B's
        assert summary[prefix + "a_only"].tolist() == pytest.approx((summary[prefix + "score_a"] * summary.n / 100).tolist())
        row = summary.loc["all"]
        assert row[prefix + "mcnemar_p"] == mcnemar([[0, row[prefix + "a_only"]], [row[prefix + "b_only"], 0]],
                                                   exact=True).pvalue
    assert summary.loc["all", "sjsd_delta"] == pytest.approx(-2 * frame.sjsd.mean())


def test_against_statsmodels_and_scipy_directly():
    a = seeded_frame(seed=1)
    b = a.copy()
    rng = np.random.default_rng(5)
    flip = rng.random(len(a)) < 0.25
    b.loc[flip, "sjsd"] = -b.loc[flip, "sjsd"] + 0.002  # a quarter of B's verdicts moved, mostly to "not biased"
    comparison = compare_frames(a, b, n_boot=1000, seed=3)
    summary = comparison.summary().set_index("bias_type")
    ca, cb = (a.sjsd < 0).to_numpy(), (b.sjsd < 0).to_numpy()
    for group in ["all", "gender", "race", "religion"]:
        m = np.ones(len(a), bool) if group == "all" else (a.bias_type == group).to_numpy()
        x, y = ca[m], cb[m]
        row = summary.loc[group]
        table = [[int((x & y).sum()), int((x & ~y).sum())], [int((~x & y).sum()), int((~x & ~y).sum())]]
        assert row["mcnemar_p"] == mcnemar(table, exact=True).pvalue
        assert row["n_discordant"] == table[0][1] + table[1][0]
        # delta is exactly the discordant difference over n
        assert row["delta"] == pytest.approx(100 * (table[1][0] - table[0][1]) / m.sum())
        assert row["score_a"] == pytest.approx(100 * x.mean()) and row["score_b"] == pytest.approx(100 * y.mean())
        res = stats.bootstrap((100.0 * x, 100.0 * y), lambda u, v, axis=-1: v.mean(axis) - u.mean(axis),
                              paired=True, vectorized=True, n_resamples=1000, method="percentile", batch=200,
                              rng=np.random.default_rng(3))
        assert (row["ci_low"], row["ci_high"]) == (res.confidence_interval.low, res.confidence_interval.high)
    family = summary.loc[["gender", "race", "religion"], "mcnemar_p"].to_numpy()
    assert summary.loc[["gender", "race", "religion"], "mcnemar_p_holm"].to_numpy() == pytest.approx(
        multipletests(family, method="holm")[1])
    assert summary.loc["all", "mcnemar_p_holm"] == summary.loc["all", "mcnemar_p"]  # not part of the family
    assert summary.loc["all", "sjsd_delta"] == pytest.approx((b.sjsd - a.sjsd).mean())
    assert "Holm" in comparison.describe() and "McNemar" in comparison.describe()


def test_how_a_tie_enters_mcnemar():
    """A tie counts as its score counts it: a PLL tie (equal at 3 decimals) is "not counted", so a pair tied for
    A and counted for B is discordant (b_only); a B tie counts by the sign of S_JSD, as B does."""
    a = seeded_frame(n=6)
    a["bias_type"] = "gender"
    a["pll_more"], a["pll_less"] = [-5.0, -5.0, -3.0, -3.0, -7.0, -7.0], [-5.0, -5.0, -4.0, -4.0, -6.0, -6.0]
    a["sjsd"] = [-5e-7, 0.0, -0.01, -0.01, 0.01, 0.01]
    b = a.copy()
    b["pll_more"] = [-4.0, -5.0004, -3.0, -3.0, -7.0, -7.0]  # pair 0: tie → counted; pair 1: still a tie
    b["sjsd"] = [0.01, 0.0, -0.01, -0.01, 0.01, 0.01]  # pair 0: B tie counted (S_JSD < 0) → not counted
    row = compare_frames(a, b, n_boot=200).table.set_index("score")
    pll, attribution = row.loc["pll"].iloc[0], row.loc["attribution"].iloc[0]
    assert (pll["ties_a"], pll["ties_b"]) == (2, 1)
    assert (pll["a_only"], pll["b_only"]) == (0, 1)
    assert (attribution["ties_a"], attribution["ties_b"]) == (2, 1)
    assert (attribution["a_only"], attribution["b_only"]) == (1, 0)


def test_different_pairs_are_refused_in_one_line():
    a = seeded_frame(n=10)
    b = a.copy()
    b.loc[3, "sent_more"] = "something else"
    with pytest.raises(ValueError, match="not on the same pairs: pair 3"):
        compare_frames(a, b)
    with pytest.raises(ValueError, match="n_boot must be at least 100"):
        compare_frames(a, a, n_boot=10)


def test_skipped_pairs_are_left_out_and_said(random_mlm):
    a = seeded_frame(n=30)
    b = a.copy()
    b.loc[[0, 1], "skipped_reason"] = "identical sentences"
    comparison = compare_frames(a, b.iloc[:25], n_boot=200)
    assert comparison.summary().set_index("bias_type").loc["all", "n"] == 23
    assert any("23 pairs both scored" in n for n in comparison.notes)


def test_api_and_cli_on_hermetic_models(random_mlm, random_causal, tmp_path, capsys):
    import biascore
    from biascore.cli.main import main

    assert "compare" in dir(biascore) and "compare" in biascore.__all__
    cache = tmp_path / "cache"
    mlm = biascore.run("attribution", random_mlm, "demo", progress=False, cache_dir=cache)
    gpt = biascore.run("attribution", random_causal, "demo", progress=False, cache_dir=cache)
    same = biascore.compare(mlm, mlm).summary()
    assert (same.delta == 0).all() and (same.mcnemar_p == 1).all()
    summary = biascore.compare(mlm, gpt, n_boot=500).summary()
    types = sorted(mlm.frame.bias_type.unique())
    assert summary.bias_type.tolist() == ["all", *types] and set(REQUIRED) <= set(summary.columns)
    assert summary.loc[0, "score_a"] == pytest.approx(mlm.summary().loc[0, "score"])  # no pair skipped in demo
    assert "lmeval_delta" not in summary.columns  # a masked LM has no whole-sentence score
    out = tmp_path / "cmp.csv"
    rc = main(["compare", "--models", str(random_mlm.source), str(random_causal.source), "--benchmark", "demo",
               "--n-boot", "500", "--cache-dir", str(cache), "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0 and "McNemar" in text and "Holm" in text and "mean paired S_JSD difference" in text
    written = pd.read_csv(out)
    assert written.delta.tolist() == pytest.approx(summary.delta.tolist())
    assert written.mcnemar_p.tolist() == pytest.approx(summary.mcnemar_p.tolist())
    with pytest.raises(SystemExit) as exited:  # argparse's one line, exit code 2
        main(["compare", "--models", str(random_mlm.source), str(random_causal.source), "--n-boot", "5"])
    assert exited.value.code == 2 and "must be at least 100" in capsys.readouterr().err


def test_a_bias_type_with_one_pair_against_itself_is_zero_with_interval_zero(random_mlm, tmp_path):
    """Issue 33, item 7: docs/api.md's promise for a model against itself ([0, 0]) holds for a bias type with
    n = 1 too; against another model that one pair gets no interval (blank), not a zero-width one."""
    import biascore

    bench = tmp_path / "three.csv"
    pd.DataFrame({"sent_more": ["He is a nurse.", "She is a nurse.", "The poor man stole it."],
                  "sent_less": ["She is a nurse.", "He is a nurse.", "The rich man stole it."],
                  "bias_type": ["gender", "gender", "socioeconomic"]}).to_csv(bench, index=False)
    mlm = biascore.run("attribution", random_mlm, str(bench), progress=False, cache_dir=tmp_path / "cache")
    same = biascore.compare(mlm, mlm, n_boot=200).summary().set_index("bias_type")
    assert same.loc["socioeconomic", "n"] == 1
    for prefix in ("", "pll_"):
        assert same[prefix + "ci_low"].tolist() == [0.0] * 3 and same[prefix + "ci_high"].tolist() == [0.0] * 3
    assert same.sjsd_ci_low.tolist() == [0.0] * 3 and same.sjsd_ci_high.tolist() == [0.0] * 3
    other = compare_frames(mlm.frame, negation(mlm.frame), n_boot=200).summary().set_index("bias_type")
    assert np.isnan(other.loc["socioeconomic", "ci_low"]) and np.isnan(other.loc["socioeconomic", "sjsd_ci_high"])
    assert other.loc["socioeconomic", "n_discordant"] == 1
