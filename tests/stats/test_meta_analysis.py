"""The DerSimonian-Laird random-effects combination (CEAT) against statsmodels' own implementation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from biascore.stats.meta_analysis import random_effects


@pytest.mark.parametrize("seed", range(5))
def test_random_effects_equal_statsmodels_dersimonian_laird(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(2, 40))
    es = rng.normal(0.4, 0.5, k)
    v = rng.uniform(0.01, 0.3, k)
    ours = random_effects(es, v)
    ref = combine_effects(es, v, method_re="dl")
    assert ours.q == pytest.approx(ref.q, rel=1e-12) and ours.n == k
    if ref.tau2 >= 0:
        mean, sd = ref.mean_effect_re, ref.sd_eff_w_re
        assert ours.sigma2_between == pytest.approx(ref.tau2, rel=1e-10, abs=1e-15)
    else:  # statsmodels leaves the one-step estimate negative; DerSimonian-Laird truncate it at 0: fixed effects
        mean, sd = ref.mean_effect_fe, ref.sd_eff_w_fe
        assert ours.sigma2_between == 0
    assert ours.ces == pytest.approx(mean, rel=1e-12, abs=1e-14)
    assert ours.se == pytest.approx(sd, rel=1e-12)
    assert ours.p_value == pytest.approx(2 * stats.norm.sf(abs(mean / sd)), rel=1e-9)


def test_the_seeds_cover_both_cases():
    """Among the seeds above, some have between-study variance and some are truncated at 0."""
    signs = set()
    for seed in range(5):
        rng = np.random.default_rng(seed)
        k = int(rng.integers(2, 40))
        es, v = rng.normal(0.4, 0.5, k), rng.uniform(0.01, 0.3, k)
        signs.add(combine_effects(es, v, method_re="dl").tau2 > 0)
    assert signs == {True, False}


def test_homogeneous_effects_have_no_between_variance_and_give_the_fixed_effect_mean():
    es, v = np.array([0.5, 0.5, 0.5]), np.array([0.1, 0.2, 0.4])
    r = random_effects(es, v)
    assert r.sigma2_between == 0 and r.ces == pytest.approx(0.5)
    assert r.se == pytest.approx(math.sqrt(1 / (10 + 5 + 2.5)))


@pytest.mark.parametrize("es, v", [([0.1], [0.1]), ([0.1, 0.2], [0.1, 0.0]), ([0.1, 0.2], [0.1, float("nan")])])
def test_unusable_inputs_are_refused(es, v):
    with pytest.raises(ValueError):
        random_effects(es, v)
