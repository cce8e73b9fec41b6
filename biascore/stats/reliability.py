"""Krippendorff's α for nominal codes, with a bootstrap interval over units.

Value counts ``counts[u, c]`` = how many coders gave unit u the value c, any number of coders per unit
(Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"; Hayes & Krippendorff 2007). Only units with
m_u = Σ_c n_uc ≥ 2 count; coincidences o_ck = Σ_u (n_uc·n_uk − [c = k]·n_uc) / (m_u − 1), n_c = Σ_k o_ck,
n = Σ_c n_c; nominal α = 1 − (n − 1) · Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k (NaN when D_e = 0 or under two values).

:func:`nominal_alpha` is the ``krippendorff`` package's estimate (Castro); :func:`alpha_interval` is the percentile
bootstrap over units (Efron & Tibshirani 1993; not Hayes & Krippendorff's, which resamples values), all resamples
in one matrix product of per-unit coincidences (:func:`unit_coincidences`; bench/bench_review_agreement.py),
undefined resamples dropped and counted.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000


@dataclass(frozen=True)
class AlphaEstimate:
    """α with its bootstrap interval. ``n_units``: pairable units; ``n_values``: pairable values (ratings);
    ``n_resamples``: bootstrap resamples in which α was defined."""

    alpha: float
    low: float
    high: float
    n_units: int
    n_values: int
    n_resamples: int


def pairable(counts: np.ndarray) -> np.ndarray:
    """The rows (units) of a value-count matrix with at least two values."""
    counts = np.asarray(counts, dtype=np.float64)
    if counts.ndim != 2:
        raise ValueError(f"value counts must be a units × values matrix, got shape {counts.shape}")
    return counts[counts.sum(axis=1) >= 2]


def nominal_alpha(counts: np.ndarray) -> float:
    """Krippendorff's α (nominal) of a units × values count matrix (``krippendorff.alpha``); NaN when undefined."""
    import krippendorff
    usable = pairable(counts)
    if usable.sum() < 2 or (usable.sum(axis=0) > 0).sum() < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(krippendorff.alpha(value_counts=usable, level_of_measurement="nominal"))


def unit_coincidences(counts: np.ndarray) -> np.ndarray:
    """Per pairable unit its coincidence matrix, shape (units, values, values):
    (n_uc·n_uk − [c = k]·n_uc) / (m_u − 1)."""
    usable = pairable(counts)
    m = usable.sum(axis=1)
    outer = usable[:, :, None] * usable[:, None, :]
    diag = np.einsum("uc,ck->uck", usable, np.eye(usable.shape[1]))
    return (outer - diag) / (m - 1)[:, None, None]


def alpha_from_coincidences(coincidences: np.ndarray) -> np.ndarray:
    """Nominal α from coincidence matrices (…, values, values): 1 − (n − 1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k;
    NaN where the expected disagreement is 0."""
    o = np.asarray(coincidences, dtype=np.float64)
    n_c = o.sum(axis=-1)
    n = n_c.sum(axis=-1)
    observed = o.sum(axis=(-2, -1)) - np.trace(o, axis1=-2, axis2=-1)
    expected = n ** 2 - (n_c ** 2).sum(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1.0) * observed / expected
    return np.where(expected > 0, alpha, np.nan)


def resampled_alphas(counts: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """α of each resample: ``weights[b, u]`` = how many times pairable unit u is drawn in resample b (shape
    resamples × pairable units). Equals :func:`nominal_alpha` of the units repeated by their weights."""
    usable = pairable(counts)
    weights = np.asarray(weights, dtype=np.float64)
    if weights.ndim != 2 or weights.shape[1] != len(usable):
        raise ValueError(f"weights must be resamples × {len(usable)} pairable units, got shape {weights.shape}")
    values = usable.shape[1]
    per_unit = unit_coincidences(usable).reshape(len(usable), -1)
    return alpha_from_coincidences((weights @ per_unit).reshape(len(weights), values, values))


def alpha_interval(counts: np.ndarray, *, level: float = 0.95, resamples: int = DEFAULT_RESAMPLES,
                   seed: int = 0) -> AlphaEstimate:
    """α (:func:`nominal_alpha`) with a percentile-bootstrap interval over units (see the module docstring).
    ``resamples`` bootstrap samples drawn with ``numpy.random.default_rng(seed)``: the same data and seed give the same
    interval. The interval is (NaN, NaN) when α is undefined or fewer than two units are pairable."""
    usable = pairable(counts)
    alpha = nominal_alpha(usable)
    n_units, n_values = len(usable), int(usable.sum())
    if n_units < 2 or alpha != alpha:
        return AlphaEstimate(alpha, float("nan"), float("nan"), n_units, n_values, 0)
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(n_units, np.full(n_units, 1.0 / n_units), size=resamples)
    boot = resampled_alphas(usable, weights)
    boot = boot[~np.isnan(boot)]
    if not len(boot):
        return AlphaEstimate(alpha, float("nan"), float("nan"), n_units, n_values, 0)
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return AlphaEstimate(alpha, float(low), float(high), n_units, n_values, int(len(boot)))
