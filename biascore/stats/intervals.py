"""Confidence intervals for proportions: B and the CrowS PLL bias score are shares of pairs.

B = 100·k/n where k pairs of n are biased (S_JSD < 0); the PLL bias score likewise counts pairs with
score(more) > score(less). A share of n Bernoulli outcomes gets a binomial interval, not a percentile
bootstrap: the bootstrap of an all-0 or all-1 group collapses to zero width ([100, 100] for n = 4, B = 100),
while the Wilson score interval (Wilson 1927; scipy's ``binomtest(k, n).proportion_ci(method="wilson")``)
stays honest on small groups, e.g. k = 4, n = 4 → [51.0, 100] %. ``exact`` gives Clopper–Pearson.
"""
from __future__ import annotations

import math

from scipy.stats import binomtest

#: The interval the engine reports for B and the PLL score, and the words the dashboard uses for it.
METHOD = "wilson"
METHOD_LABEL = {"wilson": "Wilson score interval", "exact": "Clopper–Pearson (exact) interval",
                "wilsoncc": "Wilson score interval with continuity correction"}


def proportion_ci(k: int, n: int, level: float = 0.95, method: str = METHOD) -> tuple[float, float]:
    """The ``level`` confidence interval of the proportion k/n (both ends in [0, 1]); (nan, nan) when n = 0.

    ``method``: ``wilson`` (default), ``exact`` (Clopper–Pearson) or ``wilsoncc``, as scipy names them.
    """
    if n == 0:
        return math.nan, math.nan
    if not 0 <= k <= n:
        raise ValueError(f"need 0 ≤ k ≤ n, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(confidence_level=level, method=method)
    return float(ci.low), float(ci.high)
