"""The WEAT/SEAT effect size's bootstrap interval (biascore/stats/effect_size.py ``effect_size_interval``): against
an exact BCa interval computed here by enumerating every bootstrap resample of a tiny word set, and its behaviour
(contains d, narrows as the word sets grow, degenerate sets, determinism)."""
from __future__ import annotations

import itertools
import math
from statistics import NormalDist

import numpy as np
import pytest

from biascore.stats.effect_size import CI_CONVENTION, effect_size_from_associations, effect_size_interval

N = NormalDist()


def _d(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """d of every row of x against every row of y (rows: resamples), written out: (mean x − mean y) / sd(x ∪ y)."""
    both = np.concatenate([x, y], axis=1)
    return (x.mean(1) - y.mean(1)) / both.std(axis=1, ddof=1)


def exact_bca(x: np.ndarray, y: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, float, float]:
    """The exact bootstrap distribution of d and the shares of it below BCa's two ends: the BCa interval (Efron & Tibshirani 1993, §14.3; acceleration from the jackknife of each sample, Eq. 15.36)
    on the exact bootstrap distribution: all n_x^n_x · n_y^n_y equally likely resamples enumerated, no random draws."""
    rx = x[np.array(list(itertools.product(range(len(x)), repeat=len(x))))]
    ry = y[np.array(list(itertools.product(range(len(y)), repeat=len(y))))]
    dist = _d(np.repeat(rx, len(ry), axis=0), np.tile(ry, (len(rx), 1)))
    theta = float(_d(x[None], y[None])[0])
    z0 = N.inv_cdf(((dist < theta).mean() + (dist <= theta).mean()) / 2)  # mid-rank, as for ties at d itself
    nums = dens = 0.0
    for j, sample in enumerate((x, y)):
        jack = []  # d with word i of this sample left out
        for i in range(len(sample)):
            xi, yi = (np.delete(x, i), y) if j == 0 else (x, np.delete(y, i))
            jack.append(float(_d(xi[None], yi[None])[0]))
        jack = np.array(jack)
        u = (len(sample) - 1) * (jack.mean() - jack)
        nums += (u ** 3).sum() / len(sample) ** 3
        dens += (u ** 2).sum() / len(sample) ** 2
    a = nums / (6 * dens ** 1.5)
    shares = [N.cdf(z0 + (z0 + z) / (1 - a * (z0 + z))) for z in (N.inv_cdf((1 - level) / 2), N.inv_cdf((1 + level) / 2))]
    return dist, shares[0], shares[1]


@pytest.mark.parametrize("data_seed", [7, 3])
def test_bca_interval_equals_the_exact_enumeration(data_seed):
    # 4 + 4 target words: all 4^4 · 4^4 = 65,536 resamples enumerated. The engine's 9,999 random resamples must put
    # each end where exact BCa does: at the share of the exact distribution BCa asks for, within 0.01 (one
    # percentage point; over seeds 0–9 the largest miss seen is 0.005 — Monte Carlo error of z0 and of a quantile
    # of 9,999 draws). The distribution is discrete, so the end may sit on an atom: between F(end−) and F(end).
    rng = np.random.default_rng(data_seed)
    x, y = rng.normal(0.4, 1, 4), rng.normal(0, 1, 4)
    low, high, how = effect_size_interval(np.concatenate([x, y]), np.arange(8) < 4, seed=0)
    assert how == "BCa"
    dist, share_low, share_high = exact_bca(x, y)
    for end, share in ((low, share_low), (high, share_high)):
        assert (dist < end).mean() - 0.01 <= share <= (dist <= end).mean() + 0.01
    assert "BCa" in CI_CONVENTION and "9999" in CI_CONVENTION


def test_interval_contains_d_and_narrows_as_the_word_sets_grow():
    rng = np.random.default_rng(3)
    widths = []
    for n in (4, 16, 64):
        s = np.concatenate([rng.normal(0.5, 1, n), rng.normal(0, 1, n)])
        is_x = np.arange(2 * n) < n
        low, high, how = effect_size_interval(s, is_x, seed=1)
        assert low < effect_size_from_associations(s, is_x) < high and how == "BCa"
        widths.append(high - low)
    assert widths[0] > widths[1] > widths[2]
    assert effect_size_interval(s, is_x, seed=1) == (low, high, how)  # seeded: the same numbers again
    assert effect_size_interval(s, is_x, seed=2)[:2] != (low, high)


def test_degenerate_word_sets_are_labelled_never_a_traceback():
    # every resample has the same d (each set holds one value twice): BCa is undefined → the percentile interval, labelled
    low, high, how = effect_size_interval(np.array([1.0, 1.0, 0.0, 0.0]), np.array([1, 1, 0, 0], bool))
    assert how == "percentile (BCa undefined)" and low == high == pytest.approx(math.sqrt(3))
    nan = effect_size_interval(np.array([1.0, 0.0, 0.2]), np.array([1, 0, 0], bool))  # one word in X
    assert np.isnan(nan[:2]).all() and nan[2] == "none"
    flat = effect_size_interval(np.ones(6), np.arange(6) < 3)  # d itself undefined (0 / 0)
    assert np.isnan(flat[:2]).all() and flat[2] == "none"
