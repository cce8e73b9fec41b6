"""The paired statistics of biascore.stats.paired against scipy / statsmodels called directly, and by hand."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests

from biascore.stats.paired import holm, mcnemar_exact, paired_bootstrap_ci


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mcnemar_equals_statsmodels_and_the_exact_binomial_test(seed):
    rng = np.random.default_rng(seed)
    a = rng.random(200) < 0.55
    b = np.where(rng.random(200) < 0.2, ~a, a)  # 20 % of the outcomes flipped
    n01, n10, p = mcnemar_exact(a, b)
    assert n01 == int((a & ~b).sum()) and n10 == int((~a & b).sum())
    table = [[int((a & b).sum()), n01], [n10, int((~a & ~b).sum())]]
    assert p == mcnemar(table, exact=True).pvalue
    # McNemar's exact test is the two-sided binomial test of n01 out of n01 + n10 at 1/2
    assert p == pytest.approx(stats.binomtest(n01, n01 + n10, 0.5).pvalue, rel=1e-12)


def test_mcnemar_edge_cases():
    same = np.array([True, False, True, True])
    assert mcnemar_exact(same, same) == (0, 0, 1.0)  # nothing discordant
    assert mcnemar_exact(same, ~same) == (3, 1, pytest.approx(0.625))  # 2·P(X ≤ 1 | 4, ½) = 2·5/16
    everything = np.ones(10, dtype=bool)
    n01, n10, p = mcnemar_exact(everything, ~everything)
    assert (n01, n10) == (10, 0) and p == pytest.approx(2 * 0.5 ** 10)


def test_holm_equals_statsmodels_and_the_step_down_rule():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    # by hand: sorted p·(m − rank), running maximum, capped at 1
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.2])  # 0.01·4, max(0.03·3, 0.04·2), 0.2·1
    with_nan = holm([0.01, np.nan, 0.04])
    assert np.isnan(with_nan[1]) and with_nan[[0, 2]] == pytest.approx([0.02, 0.04])


def test_paired_bootstrap_matches_an_independent_resampling_and_beats_an_unpaired_one():
    rng = np.random.default_rng(0)
    base = rng.normal(0, 1, 400)
    a, b = base + rng.normal(0, 0.2, 400), base + 0.1 + rng.normal(0, 0.2, 400)  # strongly paired
    lo, hi = paired_bootstrap_ci(a, b, n_boot=4000, seed=1)
    # an independent percentile bootstrap written here: resample item indices, both models together
    idx = np.random.default_rng(7).integers(0, 400, (4000, 400))
    ref = np.percentile(b[idx].mean(axis=1) - a[idx].mean(axis=1), [2.5, 97.5])
    width = ref[1] - ref[0]
    assert lo == pytest.approx(ref[0], abs=0.1 * width) and hi == pytest.approx(ref[1], abs=0.1 * width)
    assert lo < b.mean() - a.mean() < hi
    # resampling the two models independently ignores the pairing and is far wider
    ia, ib = np.random.default_rng(8).integers(0, 400, (2, 4000, 400))
    unpaired = np.percentile(b[ib].mean(axis=1) - a[ia].mean(axis=1), [2.5, 97.5])
    assert hi - lo < 0.5 * (unpaired[1] - unpaired[0])
    # the same call as scipy's own, so the numbers are scipy's
    res = stats.bootstrap((a, b), lambda x, y, axis=-1: y.mean(axis) - x.mean(axis), paired=True,
                          vectorized=True, n_resamples=4000, method="percentile", batch=200,
                          rng=np.random.default_rng(1))
    assert (lo, hi) == (res.confidence_interval.low, res.confidence_interval.high)


def test_paired_bootstrap_edge_cases():
    x = np.array([0.0, 100.0, 100.0, 0.0])
    assert paired_bootstrap_ci(x, x) == (0.0, 0.0)
    assert paired_bootstrap_ci(x, x + 5) == (5.0, 5.0)
    assert all(np.isnan(paired_bootstrap_ci([1.0], [2.0])))
    with pytest.raises(ValueError):
        paired_bootstrap_ci([1.0, 2.0], [1.0])


def test_one_item_gives_zero_for_identical_sides_and_no_interval_otherwise():
    """n = 1 (issue 33, item 7): a model against itself is [0, 0] exactly; a single non-zero difference has one
    possible resample, so no interval (not the zero-width [d, d])."""
    assert paired_bootstrap_ci([100.0], [100.0]) == (0.0, 0.0)
    assert paired_bootstrap_ci([0.0], [0.0]) == (0.0, 0.0)
    assert all(np.isnan(paired_bootstrap_ci([], [])))
    assert all(np.isnan(paired_bootstrap_ci([0.0], [100.0])))
