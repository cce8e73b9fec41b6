"""Jensen–Shannon divergence between a model distribution P and the one-hot gold distribution G.

Bias attribution score paper (Gamboa & Lee, "bias attribution score b(u)"): the distance of the model's
distribution at token u to the one-hot distribution of the gold token u. It depends only on p = P(u):
with M = (P + G)/2,

    KL(G‖M) = log2(2 / (1 + p))
    KL(P‖M) = p·log2(2p / (1 + p)) + Σ_{i≠u} P_i·log2(2) = p·log2(2p / (1 + p)) + (1 − p)
    JSD(P‖G) = ½[KL(P‖M) + KL(G‖M)] = 1 + ½·[p·log2 p − (1 + p)·log2(1 + p)]      (bits, in [0, 1])

so no vocabulary-sized one-hot vector is ever built. Distances offered:

* ``paper``: d = √JSD, the Jensen–Shannon distance, as the paper writes it;
* ``reference``: d = JSD^¼ — the published code takes √ of scipy's ``jensenshannon``, which already
  returns the distance √JSD. The published tables come from that code, so this is the default.
"""
from __future__ import annotations

from typing import Literal

import numpy as np

JsdVariant = Literal["reference", "paper"]
JSD_VARIANTS: tuple[str, ...] = ("reference", "paper")
_LN2 = np.log(2.0)


def jsd_to_onehot(logp) -> np.ndarray:
    """JSD(P‖G) in bits from log P(gold) (natural log), computed stably in float64. For p → 1 the two terms cancel; we
    write them with log1p/expm1 so that JSD ≈ (1 − p)/2 keeps its relative precision down to 1 − p ≈ 1e-16."""
    logp = np.minimum(np.asarray(logp, dtype=np.float64), 0.0)
    p = np.exp(logp)
    one_minus_p = -np.expm1(logp)
    # With E = ln(1+p) − ln 2 = log1p((p−1)/2):
    #   2·ln2·JSD = 2 ln2 + p ln p − (1+p) ln(1+p) = (1−p)·ln2 + p·ln p − (1+p)·E
    # Near p = 1 the last two terms cancel to O((1−p)²) and (1−p)·ln2 (exact via expm1) dominates.
    excess = np.log1p(-one_minus_p / 2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        p_lnp = np.where(p > 0, p * logp, 0.0)
    jsd = (one_minus_p * _LN2 + p_lnp - (1.0 + p) * excess) / (2.0 * _LN2)
    return np.clip(jsd, 0.0, 1.0)


def distance(logp, variant: JsdVariant = "reference") -> np.ndarray:
    """d(P_u) from log P(u): JSD^¼ (``reference``) or √JSD (``paper``)."""
    jsd = jsd_to_onehot(logp)
    if variant == "reference":
        return np.sqrt(np.sqrt(jsd))
    if variant == "paper":
        return np.sqrt(jsd)
    raise ValueError(f"unknown JSD variant {variant!r}; choose 'reference' (JSD^1/4) or 'paper' (sqrt JSD)")


def bias_attribution(logp_more, logp_less, variant: JsdVariant = "reference") -> np.ndarray:
    """b(u) = d(P_u,more) − d(P_u,less); b(u) < 0 means u pushes the model toward the biased sentence."""
    return distance(logp_more, variant) - distance(logp_less, variant)

