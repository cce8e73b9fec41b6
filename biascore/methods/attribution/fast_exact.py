"""Fast-exact log-probabilities: a half-precision pass over everything, a float32 re-check of what it cannot
guarantee.

The guarantee, against the exact (float32) run: every b(u) within ``TOL_BU`` = 1e-4, every S_JSD verdict and
every CrowS PLL verdict the same, for both distance variants (JSD^¼ and √JSD).

1. **Fast pass.** Every row (a masked variant, or a causal sentence) runs with the base model under fp16
   autocast on CUDA (bf16 elsewhere) and the LM head in float32
   (:func:`biascore.core.lm_scoring.position_logits`, ``fast=True``): l̃ ≈ l = log P(u). A value that is not
   finite (fp16 overflow) is re-checked.
2. **Calibration.** A spread sample of sequences (``CALIBRATION_ROWS`` rows, all lengths) also runs in
   float32; ε = max(``SAFETY`` × the largest |l − l̃| seen, ``EPS_FLOOR``) bounds the fast pass's error on
   log P(u) for this model. The sampled rows keep their float32 values.
3. **Per token.** d falls as l rises, so with |l − l̃| ≤ ε,
   δ = max(d(l̃ − ε) − d(l̃), d(l̃) − d(min(l̃ + ε, 0))) bounds |d(l) − d(l̃)| (the larger over both variants).
   A row with δ > TOL_BU / 2 is re-run in float32, so |Δb(u)| ≤ δ_more + δ_less ≤ TOL_BU for the rest.
4. **Per pair.** With δ = 0 for float32 rows, S_JSD is known to within the mean of (δ_more + δ_less); the
   PLL difference to within ε × (number of fast rows). A pair whose S_JSD or PLL difference is not farther
   from 0 than that has all its fast rows re-run in float32, so no verdict can flip.

Near P = 1 the distance is steep (d ≈ ((1 − P)/2)^¼), so confident tokens are re-checked: the share of
re-checked rows depends on the model and is reported (:data:`LAST_REPORT`, bench/results/gpu_bench.md).
The autocast is thread-local: callers sharing the model in other threads keep exact numerics.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Sequence

import numpy as np

from biascore.methods.attribution.jsd import JSD_VARIANTS, distance

TOL_BU = 1e-4
SAFETY = 4.0
EPS_FLOOR = 2e-3
CALIBRATION_ROWS = 1024

#: runner(sequence indices, positions per sequence, fast) -> log-probabilities per sequence
Runner = Callable[[Sequence[int], Sequence[Sequence[int]], bool], list]
#: combine(pair index, values of its more sequence, values of its less sequence) -> aligned (more, less) arrays
Combine = Callable[[int, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


@dataclass
class FastExactReport:
    rows: int = 0
    calibration_rows: int = 0
    calibration_max_error: float = 0.0
    eps: float = 0.0
    rechecked_tokens: int = 0
    rechecked_pairs: int = 0
    pairs: int = 0

    @property
    def float32_rows(self) -> int:
        return self.calibration_rows + self.rechecked_tokens

    def as_dict(self) -> dict:
        return {**asdict(self), "float32_share": self.float32_rows / max(self.rows, 1)}


#: What the last fast-exact call did, and every call's report since the last :func:`reset_reports` (bench/).
LAST_REPORT = FastExactReport()
REPORTS: list[FastExactReport] = []


def reset_reports() -> None:
    REPORTS.clear()


def total_report() -> dict:
    """The reports since :func:`reset_reports` added up (eps and calibration error: the largest)."""
    tot = FastExactReport()
    for r in REPORTS:
        for f in ("rows", "calibration_rows", "rechecked_tokens", "rechecked_pairs", "pairs"):
            setattr(tot, f, getattr(tot, f) + getattr(r, f))
        tot.eps, tot.calibration_max_error = max(tot.eps, r.eps), max(tot.calibration_max_error,
                                                                      r.calibration_max_error)
    return tot.as_dict()


def distance_bound(logp: np.ndarray, eps: float) -> np.ndarray:
    """δ: the most |d(l) − d(l̃)| can be when |l − l̃| ≤ ε, over both distance variants."""
    logp = np.minimum(np.asarray(logp, dtype=np.float64), 0.0)
    lower, upper = logp - eps, np.minimum(logp + eps, 0.0)
    bound = np.zeros_like(logp)
    for variant in JSD_VARIANTS:
        d = distance(logp, variant)
        bound = np.maximum(bound, np.maximum(distance(lower, variant) - d, d - distance(upper, variant)))
    return bound


def _calibration_sample(positions: Sequence[Sequence[int]], rows: int) -> list[int]:
    """Sequences spread evenly over length order holding about ``rows`` rows."""
    order = np.argsort([len(p) for p in positions], kind="stable")
    order = [int(i) for i in order if len(positions[i])]
    total = sum(len(positions[i]) for i in order)
    if total <= rows:
        return order
    step = max(1, int(round(total / rows)))
    return order[::step]


def _pair_verdicts_safe(more: np.ndarray, less: np.ndarray, d_more: np.ndarray, d_less: np.ndarray,
                        fast_more: np.ndarray, fast_less: np.ndarray, eps: float) -> bool:
    """True when the S_JSD verdicts (both variants) and the PLL verdict cannot differ from float32."""
    if len(more) == 0:
        return True
    s_bound = float(np.mean(d_more + d_less))
    for variant in JSD_VARIANTS:
        s = float(np.mean(distance(more, variant) - distance(less, variant)))
        if abs(s) <= s_bound:
            return False
    pll_bound = eps * (int(fast_more.sum()) + int(fast_less.sum()))
    return abs(float(more.sum() - less.sum())) > pll_bound


def fast_exact_logprobs(positions: Sequence[Sequence[int]], pairs: Sequence[tuple[int, int]], runner: Runner,
                        combine: Combine | None = None) -> list[np.ndarray]:
    """log P per sequence and position, guaranteed as in the module docstring.

    ``positions[s]``: the scored positions of sequence s; ``pairs``: (more, less) sequence indices of each pair;
    ``runner`` computes log-probabilities of given sequences at given positions (``fast`` = bf16 pass);
    ``combine`` aligns a pair's two arrays token by token (identity when None).
    """
    global LAST_REPORT
    combine = combine or (lambda _j, m, l: (m, l))
    n_seq = len(positions)
    values = [np.asarray(v, dtype=np.float64) for v in runner(range(n_seq), positions, True)]
    fast = [np.ones(len(p), dtype=bool) for p in positions]  # True: the value still comes from the fast pass
    report = FastExactReport(rows=sum(len(p) for p in positions), pairs=len(pairs))

    def recheck(which: dict[int, np.ndarray]) -> int:
        seqs = [s for s, mask in which.items() if mask.any()]
        if not seqs:
            return 0
        subsets = [[positions[s][k] for k in np.flatnonzero(which[s])] for s in seqs]
        exact = runner(seqs, subsets, False)
        for s, lp in zip(seqs, exact):
            idx = np.flatnonzero(which[s])
            values[s][idx] = lp
            fast[s][idx] = False
        return sum(len(x) for x in subsets)

    # calibration: the fast pass's error on this model, measured on a spread sample
    sample = _calibration_sample(positions, CALIBRATION_ROWS)
    before = {s: values[s].copy() for s in sample}
    report.calibration_rows = recheck({s: np.ones(len(positions[s]), dtype=bool) for s in sample})
    errors = [np.max(np.abs(values[s] - before[s])) for s in sample
              if len(before[s]) and np.isfinite(before[s]).all()]
    report.calibration_max_error = float(max(errors, default=0.0))
    eps = report.eps = max(SAFETY * report.calibration_max_error, EPS_FLOOR)

    # per token: re-check every fast row whose distance is not pinned down to TOL_BU / 2
    bounds = [np.where(np.isfinite(v), distance_bound(np.nan_to_num(v), eps), np.inf) for v in values]
    report.rechecked_tokens = recheck({s: fast[s] & (bounds[s] > TOL_BU / 2) for s in range(n_seq)})

    # per pair: re-check every fast row of a pair whose verdicts are not guaranteed
    todo: dict[int, np.ndarray] = {}
    for j, (a, b) in enumerate(pairs):
        da, db = np.where(fast[a], bounds[a], 0.0), np.where(fast[b], bounds[b], 0.0)
        more, less = combine(j, values[a], values[b])
        d_more, d_less = combine(j, da, db)
        f_more, f_less = combine(j, fast[a].astype(float), fast[b].astype(float))
        if (fast[a].any() or fast[b].any()) and not _pair_verdicts_safe(more, less, d_more, d_less, f_more, f_less,
                                                                         eps):
            todo[a], todo[b] = fast[a].copy(), fast[b].copy()
            report.rechecked_pairs += 1
    report.rechecked_tokens += recheck(todo)
    LAST_REPORT = report
    REPORTS.append(report)
    return values
