"""Random-effects meta-analysis: the DerSimonian-Laird combination of effect sizes (CEAT's combined effect size).

DerSimonian & Laird (1986), as Guo & Caliskan (2021) use it for CEAT (their "random-effects model", Hedges
1983). Effect sizes ES_i with within-study variances V_i:

    W_i = 1 / V_i
    Q = Σ W_i ES_i² − (Σ W_i ES_i)² / Σ W_i                      (Cochran's Q)
    c = Σ W_i − Σ W_i² / Σ W_i
    σ²_between = max(0, (Q − (k − 1)) / c)                        (τ², the between-study variance)
    v_i = 1 / (V_i + σ²_between)
    CES = Σ v_i ES_i / Σ v_i,  SE = √(1 / Σ v_i),  z = CES / SE,  p = 2 (1 − Φ(|z|))   (two-sided)

Checked against statsmodels' ``combine_effects(..., method_re="dl")`` in tests/stats/test_meta_analysis.py.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class RandomEffects:
    """The combined estimate: ``ces`` (CES), its ``se``, ``z``, two-sided ``p_value``, ``sigma2_between`` (τ²),
    Cochran's ``q``, the scaling ``c`` and the number ``n`` of effect sizes combined."""

    ces: float
    se: float
    z: float
    p_value: float
    sigma2_between: float
    q: float
    c: float
    n: int


def random_effects(es: Sequence[float], v: Sequence[float]) -> RandomEffects:
    """Combine effect sizes ``es`` with within-study variances ``v`` (DerSimonian-Laird; module docstring)."""
    es, v = np.asarray(es, dtype=float), np.asarray(v, dtype=float)
    if es.shape != v.shape or es.ndim != 1 or len(es) < 2:
        raise ValueError("need at least two effect sizes with one variance each")
    if np.any(v <= 0) or not np.all(np.isfinite(v)):
        raise ValueError("in-sample variances must be positive and finite")
    w = 1.0 / v
    q = float((w * es ** 2).sum() - (w * es).sum() ** 2 / w.sum())
    c = float(w.sum() - (w ** 2).sum() / w.sum())
    between = max(0.0, (q - (len(es) - 1)) / c) if c > 0 else 0.0
    vw = 1.0 / (v + between)
    ces = float((vw * es).sum() / vw.sum())
    se = math.sqrt(1.0 / vw.sum())
    z = ces / se
    p = math.erfc(abs(z) / math.sqrt(2.0))  # = 2 (1 − Φ(|z|))
    return RandomEffects(ces, se, z, p, between, q, c, len(es))
