"""The WEAT/SEAT effect size — one differentiable implementation for the association tests and the
attention-head scorer.

Caliskan et al. (2017), May et al. (2019, SEAT)::

    s(w, A, B) = mean_{a in A} cos(w, a) − mean_{b in B} cos(w, b)
    ES = (mean_{x in X} s(x, A, B) − mean_{y in Y} s(y, A, B)) / std_{w in X ∪ Y} s(w, A, B)

with the sample standard deviation (n − 1). Inputs are embedding matrices (rows = words or sentences);
torch tensors keep the autograd graph, so ``|ES|`` can be differentiated with respect to head masks
(attention-head bias paper, Yang et al.).

Its interval (:func:`effect_size_interval`): a 95 % BCa bootstrap of d (scipy's ``stats.bootstrap``, 9,999 seeded
resamples), X and Y each resampled within itself, numerator and pooled denominator recomputed per resample; A and B
stay fixed (conditional on the attribute words, whose choice moves d too: Antoniak & Mimno 2021). Where BCa is
undefined (one d in every resample, an undefined jackknife d) the percentile interval is given, labelled so.
"""
from __future__ import annotations

import warnings

import numpy as np
import torch
from scipy import stats

#: the resampling convention every stored WEAT/SEAT-style interval follows (stored with each result)
CI_LEVEL, CI_RESAMPLES = 0.95, 9999
CI_CONVENTION = f"{CI_LEVEL:.0%} BCa bootstrap over targets X, Y (A, B fixed), {CI_RESAMPLES} resamples, seeded by --seed"


def _as_tensor(x) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x if x.is_floating_point() else x.double()
    return torch.as_tensor(np.asarray(x), dtype=torch.float64)


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def association(w, A, B) -> torch.Tensor:
    """s(w, A, B) for every row of ``w``: mean cosine to A minus mean cosine to B."""
    w, A, B = _unit(_as_tensor(w)), _unit(_as_tensor(A)), _unit(_as_tensor(B))
    return (w @ A.T).mean(dim=1) - (w @ B.T).mean(dim=1)


def effect_size(X, Y, A, B) -> torch.Tensor:
    """WEAT/SEAT effect size (a 0-d tensor; differentiable when the inputs carry gradients)."""
    sx, sy = association(X, A, B), association(Y, A, B)
    both = torch.cat([sx, sy])
    return (sx.mean() - sy.mean()) / both.std(unbiased=True)


def effect_size_from_associations(s: np.ndarray, is_x: np.ndarray) -> float:
    """Effect size from precomputed associations s(w) and a boolean mask marking X members. Used by the permutation
    test, which re-partitions X ∪ Y many times without recomputing cosines."""
    s, is_x = np.asarray(s, dtype=float), np.asarray(is_x, dtype=bool)
    return float(_d(s[is_x], s[~is_x]))


def _d(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:  # ES of resamples along ``axis``
    with np.errstate(divide="ignore", invalid="ignore"):
        return (x.mean(axis) - y.mean(axis)) / np.concatenate([x, y], axis=axis).std(axis=axis, ddof=1)


def effect_size_interval(s: np.ndarray, is_x: np.ndarray, *, seed: int = 0, resamples: int = CI_RESAMPLES,
                         level: float = CI_LEVEL) -> tuple[float, float, str]:
    """(low, high, method) of d's bootstrap interval (module docstring): BCa, else the percentile interval labelled
    "percentile (BCa undefined)"; (nan, nan, "none") when d is undefined or a target set has one word (scipy
    resamples sets of two or more)."""
    s, is_x = np.asarray(s, dtype=float), np.asarray(is_x, dtype=bool)
    x, y = s[is_x], s[~is_x]
    for method in ("BCa", "percentile") if len(x) > 1 and len(y) > 1 and np.isfinite(_d(x, y)) else ():
        with warnings.catch_warnings():  # a degenerate jackknife or resample: nan, and the next method
            warnings.simplefilter("ignore")
            ci = stats.bootstrap((x, y), _d, n_resamples=resamples, confidence_level=level, method=method,
                                 rng=np.random.default_rng(seed)).confidence_interval
        if np.isfinite(ci.low) and np.isfinite(ci.high):
            return float(ci.low), float(ci.high), "BCa" if method == "BCa" else "percentile (BCa undefined)"
    return float("nan"), float("nan"), "none"
