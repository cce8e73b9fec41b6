"""Confidence intervals: proportions (B, PLL), Student-t intervals of means (words), cluster bootstrap (LABDet).

B = 100·k/n and the PLL bias score are shares of pairs, so they get a binomial interval: the Wilson score interval
(Wilson 1927; scipy's ``binomtest(k, n).proportion_ci(method="wilson")``) stays honest on small or all-one-way
groups (k = 4, n = 4 → [51.0, 100] %) where a percentile bootstrap collapses to zero width; ``exact`` gives
Clopper–Pearson. Means: :func:`t_interval_halfwidth` (per word) and :func:`cluster_bootstrap_ci` (LABDet,
resampling whole templates).
"""
from __future__ import annotations

import math

import numpy as np
from scipy.stats import binomtest
from scipy.stats import t as t_dist

#: The interval the engine reports for B and the PLL score.
METHOD = "wilson"


def proportion_ci(k: int, n: int, level: float = 0.95, method: str = METHOD) -> tuple[float, float]:
    """The ``level`` confidence interval of the proportion k/n (both ends in [0, 1]); (nan, nan) when n = 0. ``method``:
    ``wilson`` (default), ``exact`` (Clopper–Pearson) or ``wilsoncc``, as scipy names them."""
    if n == 0:
        return math.nan, math.nan
    if not 0 <= k <= n:
        raise ValueError(f"need 0 ≤ k ≤ n, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method=method)
    return float(ci.low), float(ci.high)


def t_interval_halfwidth(sd: np.ndarray, n: np.ndarray, level: float = 0.95) -> np.ndarray:
    """Half-width of the Student-t interval of a mean: t_{(1+level)/2, n−1} · s / √n, element-wise; NaN where
    n < 2 (one observation has no interval — never a zero-width one). ``sd`` with ddof = 1."""
    sd, n = np.asarray(sd, dtype=float), np.asarray(n, dtype=float)
    half = np.full(np.broadcast(sd, n).shape, np.nan)
    ok = n >= 2
    half[ok] = t_dist.ppf(0.5 + level / 2, n[ok] - 1) * sd[ok] / np.sqrt(n[ok])
    return half


def cluster_bootstrap_ci(values: np.ndarray, clusters: np.ndarray, *, n_boot: int = 2000, level: float = 0.95,
                         rng: np.random.Generator) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` when whole clusters (e.g. LABDet's templates) are
    resampled with replacement: each draw takes as many clusters as there are, and its mean is
    Σ (cluster sums) / Σ (cluster sizes) over the drawn clusters."""
    names, inverse = np.unique(clusters, return_inverse=True)
    sums = np.bincount(inverse, weights=np.asarray(values, dtype=float), minlength=len(names))
    counts = np.bincount(inverse, minlength=len(names)).astype(float)
    draws = rng.integers(0, len(names), size=(n_boot, len(names)))
    means = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)
