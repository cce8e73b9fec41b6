"""Chance-corrected agreement of raters on nominal codes: Cohen's κ (two raters) and Fleiss' κ (m raters).

* Cohen (1960): κ = (p_o − p_e) / (1 − p_e), p_o the share of items both raters coded alike, p_e = Σ_c
  p_1c · p_2c from each rater's own code shares; computed by :func:`sklearn.metrics.cohen_kappa_score`.
* Fleiss (1971), m ratings per item in a count table n_ic (items × codes): P_i = (Σ_c n_ic² − m) / (m (m − 1))
  the agreement on item i, P̄ = mean P_i (the observed agreement), p_c = Σ_i n_ic / (N m), P̄_e = Σ_c p_c²,
  κ = (P̄ − P̄_e) / (1 − P̄_e); computed by :func:`statsmodels.stats.inter_rater.fleiss_kappa`.

Both are undefined (NaN here) with fewer than two items or when every rating has one code (chance agreement
is 1). Checked against independent computations of the formulas in tests/stats/test_kappa.py.
"""
from __future__ import annotations

import warnings
from typing import Sequence

import numpy as np


def cohen_kappa(a: Sequence, b: Sequence, labels: Sequence) -> float:
    """Cohen's κ of two raters' codes ``a`` and ``b`` on the same items (codes among ``labels``); NaN with fewer
    than two items or one code only."""
    from sklearn.metrics import cohen_kappa_score
    a, b = np.asarray(a), np.asarray(b)
    if len(a) < 2 or len(set(a.tolist()) | set(b.tolist())) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(cohen_kappa_score(a, b, labels=list(labels)))


def fleiss_kappa(ratings: np.ndarray, n_codes: int) -> tuple[float, float]:
    """(Fleiss' κ, observed agreement P̄) of ``ratings``: one row per item, its m ratings as code indices
    0..n_codes-1 (m ≥ 2, the same for every item). κ is NaN with fewer than two items or one code only."""
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa as sm_fleiss_kappa
    ratings = np.asarray(ratings)
    m = ratings.shape[1]
    table, _ = aggregate_raters(ratings, n_cat=n_codes)
    observed = float((((table ** 2).sum(axis=1) - m) / (m * (m - 1))).mean())
    if len(ratings) < 2 or (table.sum(axis=0) > 0).sum() < 2:
        return float("nan"), observed
    return float(sm_fleiss_kappa(table, method="fleiss")), observed
