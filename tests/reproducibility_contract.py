"""The reproducibility contract of the attribution scores: what is bit-identical, and what agrees only within
a stated bound (docs/reproducibility.md; measured by bench/reproducibility.py).

**Bit-identical** (the tests assert these bit for bit):

* the same process, the same batch composition, the same device: the same inputs give the same bits, whichever
  thread asks and whatever else runs on the shared model at the time;
* a cached answer and the fresh computation that stored it (the cache keeps the values losslessly and verifies
  every read).

**Within a bound** — another batch composition (another token budget, one pair alone, another shard), another
process, another thread count, another CPU or kernel path (AVX-512 / AVX2 / plain ATen kernels, another BLAS
code path): float32 sums are added in another order, so a log-probability moves in its last bits. Per token u,
a relative bound::

    |Δ log P(u)| ≤ ε(u) = LOGP_RTOL · max(|log P(u)|, LOGP_FLOOR)

(log-probabilities agree to about four significant digits; the engine computes log P = z_gold −
log1p(Σ_{i≠argmax} exp z_i), so near P = 1 the error shrinks with |log P|, and a model whose logits are large —
unlikely tokens far below the top — moves its log P by more in absolute terms). Everything else follows from it,
with δ(l, ε) the most the distance d (JSD^¼ or √JSD) can move when log P moves by ε
(:func:`distance_bound`)::

    |Δ b(u)|   ≤ β(u) = δ(log P_more(u), ε_more(u)) + δ(log P_less(u), ε_less(u))
    |Δ S_JSD|  ≤ mean over u of β(u)
    |Δ (PLL_more − PLL_less)| ≤ Σ over u of (ε_more(u) + ε_less(u))

so an S_JSD verdict can differ only for a pair with |S_JSD| within its bound, a PLL verdict only for a pair whose
PLL difference is within its bound, and B (the share of biased pairs) only through such pairs. ``LOGP_RTOL`` is
about three times the largest relative deviation measured across those variants on the tiny trained MLM,
SmolLM2-135M and seeded random masked and causal models (bench/results/reproducibility.md); a much larger model
sums over more terms and may deviate more (measure it with bench/reproducibility.py --models NAME).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from biascore.methods.attribution.jsd import JSD_VARIANTS, distance

#: |Δ log P(u)| ≤ LOGP_RTOL · max(|log P(u)|, LOGP_FLOOR) between float32 runs that differ in batch composition,
#: process, thread count or CPU kernel path. Largest measured: 3.2e-5 (bench/results/reproducibility.md).
LOGP_RTOL = 1e-4
#: |log P| below which the bound stops shrinking (P within 1e-7 of 1: the float32 sum of the other
#: probabilities is then near the smallest numbers it can hold), so that log P = 0 in one run and -1e-30 in
#: another still agree.
LOGP_FLOOR = 1e-7


def distance_bound(logp: np.ndarray, eps: float) -> np.ndarray:
    """δ(l, ε): the most |d(l) − d(l')| can be when |l − l'| ≤ ε, over both distance variants."""
    logp = np.minimum(np.asarray(logp, dtype=np.float64), 0.0)
    lower, upper = logp - eps, np.minimum(logp + eps, 0.0)
    bound = np.zeros_like(logp)
    for variant in JSD_VARIANTS:
        d = distance(logp, variant)
        bound = np.maximum(bound, np.maximum(distance(lower, variant) - d, d - distance(upper, variant)))
    return bound


def logp_tolerance(logp) -> np.ndarray:
    """ε(u) = LOGP_RTOL · max(|log P(u)|, LOGP_FLOOR): the most log P(u) may move between two float32 runs."""
    logp = np.asarray(logp, dtype=np.float64)
    return LOGP_RTOL * np.maximum(np.abs(logp), LOGP_FLOOR)


def bu_tolerance(logp_more, logp_less) -> np.ndarray:
    """β(u) = δ(log P_more(u)) + δ(log P_less(u)): the most b(u) may move when each log P moves by ε(u)."""
    more, less = np.asarray(logp_more, dtype=np.float64), np.asarray(logp_less, dtype=np.float64)
    return distance_bound(more, logp_tolerance(more)) + distance_bound(less, logp_tolerance(less))


@dataclass
class Agreement:
    """How two attribution frames of the same pairs compare, against the contract (max over all tokens/pairs).

    ``max_rel_dlogp``: the largest |Δ log P| / max(|log P|, LOGP_FLOOR); ``logp_ratio`` / ``bu_ratio`` /
    ``sjsd_ratio``: the largest observed deviation divided by its bound (≤ 1 inside the contract); ``flips``:
    pairs whose S_JSD verdict differs; ``flips_outside``: those whose |S_JSD| is beyond the bound (a contract
    violation); the same for the PLL verdict. ``problems``: every violation, one line each.
    """

    pairs: int = 0
    tokens: int = 0
    identical: bool = True
    max_dlogp: float = 0.0
    max_rel_dlogp: float = 0.0
    max_dbu: float = 0.0
    max_dsjsd: float = 0.0
    logp_ratio: float = 0.0
    bu_ratio: float = 0.0
    sjsd_ratio: float = 0.0
    flips: int = 0
    flips_outside: int = 0
    max_abs_sjsd_flipped: float = 0.0
    pll_flips: int = 0
    pll_flips_outside: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def within_contract(self) -> bool:
        return not self.problems

    def as_dict(self) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k != "problems"}
        return {**out, "within_contract": self.within_contract, "problems": self.problems[:10]}


def _arrays(cell) -> np.ndarray:
    return np.asarray(cell if cell is not None else [], dtype=np.float64)


def compare_frames(a: pd.DataFrame, b: pd.DataFrame) -> Agreement:
    """Compare two attribution frames of the same benchmark (``pair_id``, ``tokens``, ``logp_more``,
    ``logp_less``, ``bu``, ``sjsd``, ``biased``, ``pll_more``, ``pll_less``) against the contract; ``a`` is
    the reference whose log-probabilities set the bounds. Structure (pairs, tokens, skipped pairs) must match
    exactly."""
    res = Agreement(pairs=len(a))
    if a["pair_id"].tolist() != b["pair_id"].tolist():
        res.problems.append("different pairs")
        res.identical = False
        return res
    for ra, rb in zip(a.itertuples(index=False), b.itertuples(index=False)):
        pid = ra.pair_id
        if list(ra.tokens) != list(rb.tokens):
            res.problems.append(f"pair {pid}: different tokens")
            continue
        lm_a, ll_a, lm_b, ll_b = map(_arrays, (ra.logp_more, ra.logp_less, rb.logp_more, rb.logp_less))
        bu_a, bu_b = _arrays(ra.bu), _arrays(rb.bu)
        res.tokens += len(bu_a)
        same = (np.array_equal(lm_a, lm_b) and np.array_equal(ll_a, ll_b) and np.array_equal(bu_a, bu_b)
                and _same_float(ra.sjsd, rb.sjsd) and _same_float(ra.pll_more, rb.pll_more)
                and _same_float(ra.pll_less, rb.pll_less) and bool(ra.biased) == bool(rb.biased))
        res.identical &= same
        if not len(bu_a) or same:
            continue
        eps_m, eps_l = logp_tolerance(lm_a), logp_tolerance(ll_a)
        d_lp = np.concatenate([np.abs(lm_b - lm_a), np.abs(ll_b - ll_a)])
        eps = np.concatenate([eps_m, eps_l])
        res.max_dlogp = max(res.max_dlogp, float(d_lp.max()))
        res.max_rel_dlogp = max(res.max_rel_dlogp, float(np.max(d_lp / eps)) * LOGP_RTOL)
        res.logp_ratio = max(res.logp_ratio, float(np.max(d_lp / eps)))
        beta = bu_tolerance(lm_a, ll_a)
        d_bu = np.abs(bu_b - bu_a)
        res.max_dbu = max(res.max_dbu, float(d_bu.max()))
        res.bu_ratio = max(res.bu_ratio, float(np.max(d_bu / np.maximum(beta, 1e-300))))
        s_bound = float(beta.mean())
        d_s = abs(float(rb.sjsd) - float(ra.sjsd))
        res.max_dsjsd = max(res.max_dsjsd, d_s)
        res.sjsd_ratio = max(res.sjsd_ratio, d_s / max(s_bound, 1e-300))
        if np.any(d_lp > eps):
            res.problems.append(f"pair {pid}: |Δ log P| {d_lp.max():.3g} beyond its bound")
        if np.any(d_bu > beta):
            res.problems.append(f"pair {pid}: |Δ b(u)| {d_bu.max():.3g} beyond its bound")
        if d_s > s_bound:
            res.problems.append(f"pair {pid}: |Δ S_JSD| {d_s:.3g} beyond its bound {s_bound:.3g}")
        if bool(ra.biased) != bool(rb.biased):
            res.flips += 1
            res.max_abs_sjsd_flipped = max(res.max_abs_sjsd_flipped, abs(float(ra.sjsd)))
            if abs(float(ra.sjsd)) > s_bound:
                res.flips_outside += 1
                res.problems.append(f"pair {pid}: verdict flipped at S_JSD {ra.sjsd:.3g} beyond {s_bound:.3g}")
        pll_bound = float(eps_m.sum() + eps_l.sum())
        margin_a = float(ra.pll_more) - float(ra.pll_less)
        if (margin_a > 0) != (float(rb.pll_more) - float(rb.pll_less) > 0):
            res.pll_flips += 1
            if abs(margin_a) > pll_bound:
                res.pll_flips_outside += 1
                res.problems.append(f"pair {pid}: PLL verdict flipped at margin {margin_a:.3g} beyond {pll_bound:.3g}")
    return res


def _same_float(x, y) -> bool:
    x, y = float(x), float(y)
    return x == y or (np.isnan(x) and np.isnan(y))
