"""The hypothesis tests and intervals the methods use (biascore/stats), each against scipy and an
independent computation: Wilcoxon by enumeration, Pearson by numpy, the one-sided t-test by hand, the
Student-t interval by scipy's t.interval, the cluster bootstrap by a plain loop."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from biascore.stats.intervals import cluster_bootstrap_ci, t_interval_halfwidth
from biascore.stats.tests import cluster_wilcoxon_p, one_sample_t_greater, pearson, wilcoxon_p


def _exact_wilcoxon_p(x: np.ndarray) -> float:
    """Two-sided exact signed-rank p by enumerating every sign pattern (no ties, no zeros)."""
    ranks = stats.rankdata(np.abs(x))
    w = ranks[x > 0].sum()
    null = np.array([sum(r for r, s in zip(ranks, signs) if s)
                     for signs in itertools.product([0, 1], repeat=len(x))])
    mean = ranks.sum() / 2
    return float(np.mean(np.abs(null - mean) >= abs(w - mean) - 1e-9))


def test_wilcoxon_matches_enumeration_and_scipy():
    x = np.array([0.31, -0.05, 0.12, 0.44, -0.21, 0.08, 0.27, 0.19, -0.02, 0.36])
    assert wilcoxon_p(x) == pytest.approx(_exact_wilcoxon_p(x), rel=1e-9)
    assert wilcoxon_p(x) == pytest.approx(stats.wilcoxon(x).pvalue, rel=1e-12)
    assert wilcoxon_p(np.zeros(5)) == 1.0


def test_pearson_matches_numpy_and_scipy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=20)
    b = 0.6 * a + rng.normal(size=20)
    r, p = pearson(a, b)
    assert r == pytest.approx(np.corrcoef(a, b)[0, 1], rel=1e-12)
    assert p == pytest.approx(stats.pearsonr(a, b).pvalue, rel=1e-12)
    t = r * math.sqrt(18 / (1 - r * r))  # the p-value by hand: two-sided t with n − 2 degrees of freedom
    assert p == pytest.approx(2 * stats.t.sf(abs(t), 18), rel=1e-9)
    assert all(math.isnan(v) for v in pearson(a[:2], b[:2]) + pearson(np.ones(5), b[:5]))


def test_one_sided_t_matches_scipy_and_hand_formula():
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.05, 0.2, -0.05, 0.15])
    t, p = one_sample_t_greater(d)
    t_hand = d.mean() / (d.std(ddof=1) / math.sqrt(len(d)))
    assert t == pytest.approx(t_hand)
    assert p == pytest.approx(stats.t.sf(t_hand, df=len(d) - 1))
    assert p == pytest.approx(stats.ttest_1samp(d, 0.0, alternative="greater").pvalue)
    assert all(math.isnan(v) for v in one_sample_t_greater(np.array([1.0])))


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_t_interval_matches_scipy(level):
    rng = np.random.default_rng(2)
    samples = [rng.normal(size=n) for n in (2, 3, 10, 57)]
    half = t_interval_halfwidth([s.std(ddof=1) for s in samples], [len(s) for s in samples], level)
    for h, s in zip(half, samples):
        lo, hi = stats.t.interval(level, len(s) - 1, loc=s.mean(), scale=stats.sem(s))
        assert (s.mean() - h, s.mean() + h) == pytest.approx((lo, hi), rel=1e-12)
    assert np.isnan(t_interval_halfwidth([0.0], [1])[0])  # one observation: no interval, never zero width


def test_cluster_bootstrap_matches_a_loop():
    rng = np.random.default_rng(3)
    templates = np.repeat(["t1", "t2", "t3", "t4"], [3, 5, 4, 2])
    values = rng.normal(size=len(templates))
    low, high = cluster_bootstrap_ci(values, templates, n_boot=500, rng=np.random.default_rng(7))
    draws = np.random.default_rng(7).integers(0, 4, size=(500, 4))
    names = sorted(set(templates))
    means = []
    for row in draws:
        picked = [v for k in row for v, t in zip(values, templates) if t == names[k]]
        means.append(sum(picked) / len(picked))
    assert (low, high) == pytest.approx(tuple(np.percentile(means, [2.5, 97.5])))


def test_cluster_wilcoxon_is_wilcoxon_over_cluster_means():
    rng = np.random.default_rng(3)
    clusters = np.repeat(list("abcdefgh"), [3, 5, 2, 4, 4, 6, 1, 3])
    values = rng.normal(0.2, 1.0, len(clusters))
    means = [values[clusters == c].mean() for c in sorted(set(clusters))]  # by hand, in sorted order
    assert cluster_wilcoxon_p(values, clusters) == pytest.approx(stats.wilcoxon(means).pvalue, rel=1e-12)
    assert cluster_wilcoxon_p(values, clusters) == pytest.approx(_exact_wilcoxon_p(np.array(means)), rel=1e-9)
    # copies inside the clusters change nothing; the item-level test gets "surer"
    more_v, more_c = np.tile(values, 4), np.tile(clusters, 4)
    assert cluster_wilcoxon_p(more_v, more_c) == pytest.approx(cluster_wilcoxon_p(values, clusters), rel=1e-12)
    assert wilcoxon_p(more_v) < wilcoxon_p(values)
