"""The WEAT/SEAT effect size — one differentiable implementation for the association tests and the
attention-head scorer.

Caliskan et al. (2017), May et al. (2019, SEAT)::

    s(w, A, B) = mean_{a in A} cos(w, a) − mean_{b in B} cos(w, b)
    ES = (mean_{x in X} s(x, A, B) − mean_{y in Y} s(y, A, B)) / std_{w in X ∪ Y} s(w, A, B)

with the sample standard deviation (n − 1). Inputs are embedding matrices (rows = words or sentences);
torch tensors keep the autograd graph, so ``|ES|`` can be differentiated with respect to head masks
(attention-head bias paper, Yang et al.).
"""
from __future__ import annotations

import numpy as np
import torch


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
    s = np.asarray(s, dtype=float)
    is_x = np.asarray(is_x, dtype=bool)
    return float((s[is_x].mean() - s[~is_x].mean()) / s.std(ddof=1))
