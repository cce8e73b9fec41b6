"""Paired comparisons of two models scored on the same items (each a documented use of scipy / statsmodels, checked
against them in tests/stats/test_paired.py; Dietterich 1998 for McNemar on paired classifiers, Koehn 2004 and
Berg-Kirkpatrick et al. 2012 for the paired bootstrap in NLP).

* :func:`paired_bootstrap_ci`: percentile interval of mean(b) − mean(a), resampling items jointly;
* :func:`mcnemar_exact`: with n01 = #(a counted, b not), n10 = #(b counted, a not),
  p = min(1, 2 · BinomCDF(min(n01, n10); n01 + n10, ½)); p = 1 when nothing is discordant;
* :func:`holm`: Holm's step-down adjustment (``multipletests(method="holm")``), NaN left out of the family.
"""
from __future__ import annotations

import numpy as np
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests


def paired_bootstrap_ci(a: np.ndarray, b: np.ndarray, *, n_boot: int = 2000, level: float = 0.95,
                        seed: int = 0) -> tuple[float, float]:
    """The ``level`` percentile bootstrap interval of mean(b) − mean(a), resampling items jointly (``n_boot``
    resamples, ``seed``).

    Small samples, whatever ``n``:

    * ``a`` and ``b`` equal on every item (a model against itself), n ≥ 1: (0, 0) — every resample's difference
      is 0, an exact statement rather than an estimate;
    * no items: (nan, nan);
    * one item with a non-zero difference d: (nan, nan). One item has one possible resample, so the percentile
      interval would be the zero-width point [d, d]: it says nothing about uncertainty and is left undefined
      (blank), never shown as zero width;
    * n ≥ 2 with the same difference d on every item: (d, d), the bootstrap distribution's single point.
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    diff = b - a
    if len(a) and np.all(diff == 0):
        return 0.0, 0.0
    if len(a) < 2:
        return float("nan"), float("nan")
    if np.all(diff == diff[0]):  # every resample gives the same mean: the interval is that point
        return float(diff[0]), float(diff[0])

    def statistic(x, y, axis=-1):
        return np.mean(y, axis=axis) - np.mean(x, axis=axis)

    res = stats.bootstrap((a, b), statistic, paired=True, vectorized=True, n_resamples=n_boot,
                          confidence_level=level, method="percentile", batch=200, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def mcnemar_exact(a: np.ndarray, b: np.ndarray) -> tuple[int, int, float]:
    """(n01, n10, p): the discordant counts of two paired binary outcomes (n01: ``a`` true and ``b`` false;
    n10: the reverse) and McNemar's exact two-sided p-value (statsmodels; 1.0 when nothing is discordant)."""
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if len(a) != len(b):
        raise ValueError(f"paired samples differ in length: {len(a)} and {len(b)}")
    n11, n01, n10, n00 = int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum()), int((~a & ~b).sum())
    if n01 + n10 == 0:
        return n01, n10, 1.0
    return n01, n10, float(mcnemar([[n11, n01], [n10, n00]], exact=True).pvalue)


def holm(pvalues) -> np.ndarray:
    """Holm-adjusted p-values of a family (statsmodels ``multipletests(method="holm")``); NaN stays NaN and is
    not counted in the family."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    if ok.any():
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out
