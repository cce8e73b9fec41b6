"""Each statistic in biascore/stats against a library's own implementation (statsmodels, scipy), beside the
hand-worked checks in the other files: Wilson and Clopper–Pearson intervals (statsmodels ``proportion_confint``),
the standard error lm-eval reports (scipy ``sem``), the WEAT/SEAT effect size (a plain numpy re-statement of
Caliskan et al.'s formula) and the permutation p-value's exact enumeration (scipy ``permutation_test``)."""
from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.proportion import proportion_confint

from biascore.stats.effect_size import effect_size, effect_size_from_associations
from biascore.stats.intervals import proportion_ci
from biascore.stats.permutation import permutation_p_value
from biascore.stats.standard_error import mean_stderr


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 7), (3, 7), (115, 231), (133, 231), (9000, 12089)])
@pytest.mark.parametrize("ours,theirs", [("wilson", "wilson"), ("exact", "beta")])
def test_proportion_intervals_equal_statsmodels(k, n, ours, theirs):
    lo, hi = proportion_ci(k, n, 0.95, method=ours)
    elo, ehi = proportion_confint(k, n, alpha=0.05, method=theirs)
    assert lo == pytest.approx(elo, abs=1e-9) and hi == pytest.approx(ehi, abs=1e-9)


@pytest.mark.parametrize("values", [[0, 1, 1, 0, 1], [1.5, -2.0, 0.25], list(np.linspace(-3, 8, 231))])
def test_mean_stderr_equals_scipy_sem(values):
    assert mean_stderr(values) == pytest.approx(float(stats.sem(values, ddof=1)), rel=1e-12)


def test_effect_size_equals_the_formula_in_numpy():
    """d = (mean_x s(x,A,B) − mean_y s(y,A,B)) / std_{w∈X∪Y} s(w,A,B), s = mean cos(w,A) − mean cos(w,B);
    the standard deviation with ddof = 1, as the published WEAT/SEAT code (torch's default)."""
    rng = np.random.default_rng(0)
    X, Y, A, B = (rng.normal(size=(n, 16)) for n in (5, 6, 4, 7))

    def cos(u, v):
        return (u / np.linalg.norm(u, axis=1, keepdims=True)) @ (v / np.linalg.norm(v, axis=1, keepdims=True)).T

    def s(W):
        return cos(W, A).mean(1) - cos(W, B).mean(1)

    both = np.concatenate([s(X), s(Y)])
    expected = (s(X).mean() - s(Y).mean()) / both.std(ddof=1)
    assert float(effect_size(X, Y, A, B)) == pytest.approx(expected, rel=1e-5)
    is_x = np.r_[np.ones(5, bool), np.zeros(6, bool)]
    assert effect_size_from_associations(both, is_x) == pytest.approx(expected, rel=1e-12)


def test_exact_permutation_p_value_equals_scipy():
    """One-sided p = share of equal-size re-partitions of X∪Y whose test statistic Σ_X s − Σ_Y s is at least the
    observed one (Caliskan et al.); scipy enumerates the same partitions."""
    rng = np.random.default_rng(1)
    s = rng.normal(size=10)
    ours = permutation_p_value(s, 5)
    res = stats.permutation_test((s[:5], s[5:]), lambda x, y, axis: x.sum(axis) - y.sum(axis),
                                 permutation_type="independent", alternative="greater", n_resamples=np.inf,
                                 vectorized=True)
    assert ours.exact and ours.n_partitions == 252  # C(10, 5)
    assert ours.p_value == pytest.approx(res.pvalue, abs=1e-12)
