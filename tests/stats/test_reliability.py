"""Krippendorff's α (nominal) against a hand-worked example and the ``krippendorff`` package, and its
bootstrap interval: every resample equals the package on the resampled units, seeded, NaN when undefined."""
from __future__ import annotations

from fractions import Fraction

import krippendorff
import numpy as np
import pytest

from biascore.stats.reliability import (alpha_from_coincidences, alpha_interval, nominal_alpha, resampled_alphas,
                                        unit_coincidences)

#: Four reviewed pairs and one pair with a single review; values 0 = accept, 1 = needs correction, 2 = reject.
#: Reliability data (reviewers × pairs, NaN = not reviewed) and the same as value counts (pairs × values).
RELIABILITY = np.array([[0, 0, 1, 2, 0],
                        [0, 1, 1, 2, np.nan],
                        [np.nan, np.nan, 1, 0, np.nan]])
COUNTS = np.array([[2, 0, 0], [1, 1, 0], [0, 3, 0], [1, 0, 2], [1, 0, 0]])


def test_alpha_matches_a_hand_computation():
    # coincidences o_ck = Σ_u (n_uc·n_uk − [c=k]·n_uc)/(m_u − 1), pair 5 (one review) is not pairable:
    #   pair 1 (A,A): o_AA += 2;  pair 2 (A,N): o_AN += 1, o_NA += 1;  pair 3 (N,N,N): o_NN += (9 − 3)/2 = 3;
    #   pair 4 (R,R,A): o_RR += (4 − 2)/2 = 1, o_AR += 2·1/2 = 1, o_RA += 1
    # n_A = 2 + 1 + 1 = 4, n_N = 1 + 3 = 4, n_R = 1 + 1 = 2, n = 10
    # α = 1 − (n − 1)·Σ_{c≠k} o_ck / Σ_{c≠k} n_c·n_k = 1 − 9·4 / (2·(4·4 + 4·2 + 4·2)) = 1 − 36/64 = 7/16
    o = np.zeros((3, 3))
    o[0, 0], o[0, 1], o[1, 0], o[1, 1], o[2, 2], o[0, 2], o[2, 0] = 2, 1, 1, 3, 1, 1, 1
    n_c = o.sum(axis=1)
    assert n_c.tolist() == [4, 4, 2]
    expected = 1 - Fraction(9 * 4, int(sum(n_c[c] * n_c[k] for c in range(3) for k in range(3) if c != k)))
    assert expected == Fraction(7, 16)
    assert np.allclose(unit_coincidences(COUNTS).sum(axis=0), o)
    assert nominal_alpha(COUNTS) == pytest.approx(float(expected), abs=1e-12)
    assert float(alpha_from_coincidences(o)) == pytest.approx(float(expected), abs=1e-12)
    # the package from the reviewer × pair layout (an independent input path)
    assert krippendorff.alpha(reliability_data=RELIABILITY, level_of_measurement="nominal") == pytest.approx(
        float(expected), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_the_coincidence_formula_equals_the_package_on_random_data(seed):
    rng = np.random.default_rng(seed)
    n_values = 3 + seed % 2
    data = rng.integers(0, n_values, size=(2 + seed, 30 + 10 * seed)).astype(float)
    data[rng.random(data.shape) < 0.4] = np.nan  # missing reviews
    counts = np.stack([(data == v).sum(axis=0) for v in range(n_values)], axis=1)
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement="nominal",
                                   value_domain=list(range(n_values)))
    assert float(alpha_from_coincidences(unit_coincidences(counts).sum(axis=0))) == pytest.approx(reference, abs=1e-12)
    assert nominal_alpha(counts) == pytest.approx(reference, abs=1e-12)


def test_each_resample_equals_the_package_on_the_resampled_pairs():
    rng = np.random.default_rng(3)
    counts = rng.integers(0, 3, size=(40, 3))
    usable = counts[counts.sum(axis=1) >= 2]
    weights = rng.multinomial(len(usable), np.full(len(usable), 1 / len(usable)), size=25)
    fast = resampled_alphas(counts, weights)
    for w, got in zip(weights, fast):
        drawn = np.repeat(usable, w, axis=0)
        assert got == pytest.approx(krippendorff.alpha(value_counts=drawn, level_of_measurement="nominal"), abs=1e-12)


def test_the_interval_is_seeded_and_brackets_alpha():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 3, size=200)
    data = np.stack([np.where(rng.random(200) < 0.8, truth, rng.integers(0, 3, size=200)) for _ in range(3)])
    counts = np.stack([(data == v).sum(axis=0) for v in range(3)], axis=1)
    est = alpha_interval(counts, seed=1)
    assert est == alpha_interval(counts, seed=1)
    assert est != alpha_interval(counts, seed=2)
    assert est.low < est.alpha < est.high and est.high - est.low < 0.2
    assert (est.n_units, est.n_values, est.n_resamples) == (200, 600, 1000)
    # a wider level gives a wider interval
    wide = alpha_interval(counts, seed=1, level=0.99)
    assert wide.low <= est.low and wide.high >= est.high


def test_undefined_alpha_is_nan_not_an_error():
    same = np.array([[2, 0, 0], [3, 0, 0], [2, 0, 0]])  # every review the same status: no expected disagreement
    est = alpha_interval(same)
    assert np.isnan(est.alpha) and np.isnan(est.low) and np.isnan(est.high) and est.n_units == 3
    alone = np.array([[1, 0, 0], [0, 1, 0]])  # no pair has two reviews
    assert np.isnan(nominal_alpha(alone)) and alpha_interval(alone).n_units == 0
    perfect = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 3], [2, 0, 0]])
    est = alpha_interval(perfect)
    assert est.alpha == 1.0 and est.low == est.high == 1.0
