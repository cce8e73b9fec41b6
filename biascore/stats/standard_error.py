"""Standard error of a mean, the closed form lm-evaluation-harness reports beside every ``mean``-aggregated metric.

For values x_1 … x_n with mean x̄ (lm-eval 0.4.13, ``lm_eval/api/metrics.py``: ``mean_stderr`` =
``sample_stddev / sqrt(n)``, chosen by ``stderr_for_metric`` for the ``mean`` aggregation — no bootstrap):

    s   = sqrt( Σ (x_i − x̄)² / (n − 1) )      (sample standard deviation)
    SE  = s / sqrt(n)

For a 0/1 outcome with share p this is sqrt(p(1 − p) / (n − 1)). n < 2 gives NaN (lm-eval divides by zero there).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np


def mean_stderr(values: Sequence[float] | np.ndarray) -> float:
    """SE of the mean of ``values`` = sample standard deviation (n − 1) / √n; NaN for fewer than two values."""
    x = np.asarray(values, dtype=np.float64)
    n = len(x)
    if n < 2:
        return math.nan
    return float(np.std(x, ddof=1) / math.sqrt(n))
