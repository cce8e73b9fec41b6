"""Hypothesis tests used by the methods (each a thin, documented use of scipy, checked in tests/stats).

* :func:`wilcoxon_p` — two-sided Wilcoxon signed-rank test against 0 (LABDet, §5.2 of the paper);
* :func:`cluster_wilcoxon_p` — the same test over cluster means (LABDet at the level of its templates);
* :func:`pearson` — Pearson r and its p-value (LABDet's robustness checks, §5.3), NaN when undefined;
* :func:`one_sample_t_greater` — one-sided one-sample t-test that the mean is > 0 (the counter-stereotype
  test of the attention-head paper, Figure 4).
"""
from __future__ import annotations

import numpy as np
from scipy import stats


def wilcoxon_p(values: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of ``values`` against 0 (1.0 when every value is 0)."""
    values = np.asarray(values, dtype=float)
    if not np.any(values != 0):
        return 1.0
    return float(stats.wilcoxon(values, alternative="two-sided").pvalue)


def cluster_wilcoxon_p(values: np.ndarray, clusters: np.ndarray) -> float:
    """Two-sided Wilcoxon signed-rank p-value of the per-cluster means against 0. Items of one cluster (LABDet: the 20
    adjectives of one template) are not independent, so the test takes one observation per cluster, m̄_c = mean of the
    items of cluster c, and runs :func:`wilcoxon_p` on the m̄_c (exact null distribution for up to 50 clusters, as scipy
    chooses). Copying items inside their clusters leaves it unchanged; with C clusters its smallest possible p is 2 /
    2^C."""
    names, inverse = np.unique(np.asarray(clusters), return_inverse=True)
    sums = np.bincount(inverse, weights=np.asarray(values, dtype=float), minlength=len(names))
    return wilcoxon_p(sums / np.bincount(inverse, minlength=len(names)))


def pearson(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(r, p) of Pearson's correlation; (nan, nan) with fewer than 3 points or a constant series."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 3 or np.std(a) == 0 or np.std(b) == 0:
        return float("nan"), float("nan")
    r = stats.pearsonr(a, b)
    return float(r.statistic), float(r.pvalue)


def one_sample_t_greater(values: np.ndarray) -> tuple[float, float]:
    """t and p of the one-sample t-test that the mean of ``values`` is > 0 (NaN when N < 2)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return float("nan"), float("nan")
    res = stats.ttest_1samp(values, 0.0, alternative="greater")
    return float(res.statistic), float(res.pvalue)
