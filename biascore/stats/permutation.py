"""One-sided permutation p-value of the WEAT/SEAT effect size (Caliskan et al. 2017).

The associations s(w, A, B) of all target items w ∈ X ∪ Y are fixed; a re-partition (X_i, Y_i) of
X ∪ Y into sets of the original sizes |X|, |Y| gives effect size ES_i. The p-value is

    p = #{i : ES_i ≥ ES_observed} / #partitions

over *all* C(|X|+|Y|, |X|) partitions when there are at most ``max_exact`` of them (the observed
partition counts, so p ≥ 1/#partitions), otherwise over ``n_samples`` random partitions drawn with a
seeded generator, as (1 + #{ES_i ≥ ES_observed}) / (1 + n_samples).

Because the standard deviation over X ∪ Y does not change under re-partition, ES_i ≥ ES_obs exactly
when the sum of s over X_i is ≥ that over X, so only sums are computed (vectorised with numpy).
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

#: Relative tolerance when comparing a partition's statistic with the observed one (float round-off).
_TOL = 1e-12


@dataclass(frozen=True)
class PermutationResult:
    p_value: float
    exact: bool
    n_partitions: int  # enumerated partitions, or samples drawn


def permutation_p_value(s: np.ndarray, n_x: int, *, max_exact: int = 100_000, n_samples: int = 100_000,
                        seed: int = 0, chunk: int = 20_000) -> PermutationResult:
    """p-value for the first ``n_x`` entries of ``s`` being X (the rest Y); see the module docstring."""
    s = np.asarray(s, dtype=float)
    n = len(s)
    if not 1 <= n_x < n:
        raise ValueError(f"need non-empty X and Y (got |X|={n_x}, |X ∪ Y|={n})")
    observed = s[:n_x].sum()
    tol = _TOL * max(1.0, float(np.abs(s).sum()))
    total = math.comb(n, n_x)
    if total <= max_exact:
        hits = 0
        combos = itertools.combinations(range(n), n_x)
        while True:
            block = np.fromiter(itertools.chain.from_iterable(itertools.islice(combos, chunk)), dtype=np.int64)
            if block.size == 0:
                break
            sums = s[block.reshape(-1, n_x)].sum(axis=1)
            hits += int((sums >= observed - tol).sum())
        return PermutationResult(hits / total, True, total)
    rng = np.random.default_rng(seed)
    hits, left = 0, n_samples
    while left > 0:
        m = min(chunk, left)
        picks = np.argsort(rng.random((m, n)), axis=1)[:, :n_x]  # a uniform random X_i per row
        hits += int((s[picks].sum(axis=1) >= observed - tol).sum())
        left -= m
    return PermutationResult((1 + hits) / (1 + n_samples), False, n_samples)
