"""The WEAT/SEAT test on embedding matrices (target sets X, Y; attribute sets A, B): :func:`weat` computes the effect
size with :func:`biascore.stats.effect_size.effect_size_from_associations` and the one-sided permutation p-value of
:mod:`biascore.stats.permutation`; the tests are read by :func:`biascore.inputs.seat_tests.load_seat_test`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from biascore.stats.effect_size import association, effect_size_from_associations, effect_size_interval
from biascore.stats.permutation import permutation_p_value


@dataclass(frozen=True)
class WeatResult:
    effect_size: float
    p_value: float
    exact: bool
    n_x: int
    n_y: int
    n_a: int
    n_b: int
    interval: tuple[float, float, str]  # (low, high, ci_method): biascore.stats.effect_size.effect_size_interval

    def as_row(self) -> dict:
        low, high, how = self.interval
        return dict(effect_size=self.effect_size, effect_size_low=low, effect_size_high=high, p_value=self.p_value,
                    n_x=self.n_x, n_y=self.n_y, n_a=self.n_a, n_b=self.n_b, p_exact=self.exact, ci_method=how)


def weat(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, *, max_exact: int = 100_000,
         n_samples: int = 100_000, seed: int = 0) -> WeatResult:
    """Effect size and one-sided permutation p-value of embedding matrices X, Y (targets), A, B (attributes):
    s(w,A,B) = mean_a cos(w,a) − mean_b cos(w,b); ES = (mean_X s − mean_Y s) / std_{X∪Y} s (n − 1)."""
    s = association(np.concatenate([X, Y]), A, B).numpy()
    is_x = np.arange(len(s)) < len(X)
    es = effect_size_from_associations(s, is_x)
    perm = permutation_p_value(s, len(X), max_exact=max_exact, n_samples=n_samples, seed=seed)
    return WeatResult(es, perm.p_value, perm.exact, len(X), len(Y), len(A), len(B),
                      effect_size_interval(s, is_x, seed=seed))
