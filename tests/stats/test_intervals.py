"""Wilson score intervals for B and the PLL score (shares of pairs), checked against the closed form."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from biascore.methods.attribution.scorer import summarize
from biascore.stats.intervals import proportion_ci


def _wilson_by_hand(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson (1927): (k + z²/2)/(n + z²) ± z/(n + z²)·√(k(n−k)/n + z²/4)."""
    z = norm.ppf(0.5 + level / 2)
    centre = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * math.sqrt(k * (n - k) / n + z * z / 4)
    return centre - half, centre + half


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (4, 4), (0, 4), (2, 4), (17, 40), (115, 231), (9000, 12089)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_the_closed_form(k, n, level):
    lo, hi = proportion_ci(k, n, level)
    elo, ehi = _wilson_by_hand(k, n, level)
    assert lo == pytest.approx(max(elo, 0.0), abs=1e-12) and hi == pytest.approx(min(ehi, 1.0), abs=1e-12)
    assert 0.0 <= lo <= k / n <= hi <= 1.0


def test_clopper_pearson_is_available_and_wider():
    lo_w, hi_w = proportion_ci(4, 4)
    lo_e, hi_e = proportion_ci(4, 4, method="exact")
    assert hi_e == 1.0 and lo_e == pytest.approx(0.025 ** (1 / 4))  # exact: lower end solves p⁴ = α/2
    assert lo_e < lo_w


def test_empty_and_invalid():
    assert all(math.isnan(x) for x in proportion_ci(0, 0))
    with pytest.raises(ValueError):
        proportion_ci(5, 4)


def test_small_groups_keep_an_honest_interval():
    """The demo's cases from issue 11: a bootstrap gave [100, 100] for n = 4, B = 100 and [0, 0] for n = 1."""
    rows = [("socioeconomic", True)] * 4 + [("physical-appearance", False)] + [("gender", b) for b in
                                                                                 [True, False] * 10]
    frame = pd.DataFrame({"bias_type": [g for g, _ in rows], "biased": [b for _, b in rows],
                          "skipped_reason": [""] * len(rows), "pll_more": np.zeros(len(rows)),
                          "pll_less": np.ones(len(rows))})
    s = summarize(frame).set_index("bias_type")
    assert s.loc["socioeconomic", "score"] == 100.0
    assert s.loc["socioeconomic", "ci_low"] == pytest.approx(100 * _wilson_by_hand(4, 4)[0])  # ≈ 51.0
    assert s.loc["socioeconomic", "ci_high"] == pytest.approx(100.0)
    assert s.loc["physical-appearance", "ci_low"] == pytest.approx(0.0, abs=1e-12)
    assert s.loc["physical-appearance", "ci_high"] == pytest.approx(100 * _wilson_by_hand(0, 1)[1])  # ≈ 79.3
    p = summarize(frame, "pll").set_index("bias_type")  # PLL: more > less never holds here
    assert p.loc["all", "score"] == 0.0 and p.loc["all", "ci_high"] == pytest.approx(
        100 * _wilson_by_hand(0, len(rows))[1])
