"""Fast-exact mode: a bf16 pass plus float32 re-checks gives every b(u) within 1e-4 of the float32 run and the same
S_JSD and PLL verdicts. Checked with a simulated fast pass of known error (the guarantee's logic), the δ bound
against sampled errors, and real models on the CPU (bf16 autocast) against their exact float32 runs."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biascore.core.datasets import load_benchmark
from biascore.methods.attribution import fast_exact
from biascore.methods.attribution.fast_exact import TOL_BU, distance_bound, fast_exact_logprobs
from biascore.methods.attribution.jsd import JSD_VARIANTS, distance
from biascore.methods.attribution.scorer import compute_logprobs, attribution_frame

pytestmark = pytest.mark.exactness


def test_distance_bound_holds_for_any_error_within_eps():
    rng = np.random.default_rng(0)
    logp = -np.concatenate([rng.exponential(1e-6, 2000), rng.exponential(1e-2, 2000), rng.exponential(3, 2000)])
    for eps in (1e-4, 1e-3, 2e-2):
        bound = distance_bound(logp, eps)
        for _ in range(5):
            moved = np.minimum(logp + rng.uniform(-eps, eps, logp.shape), 0.0)
            for v in JSD_VARIANTS:
                assert np.all(np.abs(distance(moved, v) - distance(logp, v)) <= bound + 1e-15)


def _simulated(n_pairs: int, noise: float, seed: int):
    """Exact log-probabilities (from P ≈ 1 to P ≈ 1e-6) and a fast pass off by at most ``noise``."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(3, 25, n_pairs)
    exact = []
    for n in lengths:
        for _ in range(2):
            exact.append(-rng.exponential(1.0, n) * rng.choice([1e-7, 1e-3, 0.1, 1, 5], n))
    positions = [list(range(len(e))) for e in exact]
    calls = []

    def runner(which, subsets, fast):
        calls.append((fast, sum(len(s) for s in subsets)))
        out = []
        for s, ps in zip(which, subsets):
            v = exact[s][ps]
            out.append(np.minimum(v + rng.uniform(-noise, noise, len(v)), 0.0) if fast else v.copy())
        return out
    return exact, positions, runner, calls


@pytest.mark.parametrize("noise", [1e-5, 1e-3, 3e-2])
def test_guarantee_with_a_fast_pass_of_known_error(noise):
    exact, positions, runner, calls = _simulated(600, noise, seed=int(noise * 1e6))
    pairs = [(2 * j, 2 * j + 1) for j in range(len(exact) // 2)]
    got = fast_exact_logprobs(positions, pairs, runner)
    report = fast_exact.LAST_REPORT
    assert report.eps >= noise  # calibration found the error (SAFETY × the sampled maximum)
    for a, b in pairs:
        for v in JSD_VARIANTS:
            bu_exact = distance(exact[a], v) - distance(exact[b], v)
            bu_fast = distance(got[a], v) - distance(got[b], v)
            assert np.max(np.abs(bu_fast - bu_exact)) <= TOL_BU
            assert (bu_fast.mean() < 0) == (bu_exact.mean() < 0)
        assert (got[a].sum() > got[b].sum()) == (exact[a].sum() > exact[b].sum())
    # not vacuous: part of the work stayed with the fast pass, part was re-checked
    assert 0 < report.float32_rows < report.rows
    assert calls[0] == (True, report.rows)


def test_non_finite_fast_values_are_rechecked():
    """An fp16 overflow shows as inf/NaN in the fast pass: those rows must come back in float32."""
    exact, positions, runner, _ = _simulated(200, 1e-4, seed=3)

    def overflowing(which, subsets, fast):
        out = runner(which, subsets, fast)
        if fast:
            for v in out[::7]:
                v[::3] = np.nan
        return out
    got = fast_exact_logprobs(positions, [(2 * j, 2 * j + 1) for j in range(len(exact) // 2)], overflowing)
    for g, e in zip(got, exact):
        assert np.isfinite(g).all()
        assert np.max(np.abs(g - e), initial=0.0) < 1e-3


def _exact_and_fast(lm, bench: str, limit: int):
    frame = load_benchmark(bench).frame.head(limit)
    bm = load_benchmark(bench)
    bm = bm.__class__(bm.name, frame, bm.language, bm.description, bm.path)
    exact = attribution_frame(bm, compute_logprobs(lm, frame))
    fast = attribution_frame(bm, compute_logprobs(lm, frame, numerics="fast-exact"))
    return exact, fast


def _check(exact: pd.DataFrame, fast: pd.DataFrame) -> None:
    worst = max((float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(exact["bu"], fast["bu"])
                 if len(a)), default=0.0)
    assert worst <= TOL_BU
    assert (exact["biased"] == fast["biased"]).all()
    assert ((exact["pll_more"] > exact["pll_less"]) == (fast["pll_more"] > fast["pll_less"])).all()


@pytest.mark.parametrize("masked, bench, limit", [("random_mlm", "demo", 38),
                                                 pytest.param("tiny_mlm", "crows-en-gso", 120,
                                                              marks=pytest.mark.shared("tiny_mlm", "data"))])
def test_tiny_mlm_fast_exact_equals_float32(masked, bench, limit, request):
    exact, fast = _exact_and_fast(request.getfixturevalue(masked), bench, limit)
    _check(exact, fast)
    report = fast_exact.LAST_REPORT
    assert report.rows > 0 and report.eps >= report.calibration_max_error


@pytest.mark.parametrize("bench", ["demo", pytest.param("crows-en-gso", marks=pytest.mark.shared("data"))])
def test_causal_fast_exact_equals_float32(smollm, bench):
    exact, fast = _exact_and_fast(smollm, bench, 16)
    _check(exact, fast)


def test_fast_exact_needs_a_float32_model(random_mlm):
    import dataclasses
    bf16 = dataclasses.replace(random_mlm, extra={**random_mlm.extra, "dtype": "bfloat16"})
    with pytest.raises(ValueError, match="float32"):
        compute_logprobs(bf16, load_benchmark("demo").frame.head(2), numerics="fast-exact")
