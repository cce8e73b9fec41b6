"""The one progress bar: a resumed run's rate counts only its own items (the shards finished before it are
its starting point, not work done in its first instant: the red team saw "289084337 pair/s")."""
from __future__ import annotations

import re
import time

from biascore.progress import Bar


def _rate(text: str, unit: str) -> float:
    """Items per second as tqdm shows them (``12.3pair/s`` or, when slow, ``4.56s/pair``)."""
    fast = re.search(rf"([\d.]+)\s*{unit}/s", text)
    if fast:
        return float(fast.group(1))
    slow = re.search(rf"([\d.]+)\s*s/{unit}", text)
    assert slow, text
    return 1 / float(slow.group(1))


def test_a_resumed_run_counts_its_rate_from_its_own_pairs():
    bar = Bar("resumed", unit="pair")
    start = time.monotonic()
    bar(289_000, 300_000)  # the first report of a resumed run: 289,000 pairs were done by an earlier process
    while time.monotonic() - start < 0.2:  # let some time pass, so the rate is measured over it
        time.sleep(0.05)
    bar(289_010, 300_000)  # then this run scores 10 pairs
    state = bar._bar.format_dict
    elapsed = state["elapsed"]
    shown = str(bar._bar)  # the bar's line as drawn
    bar.close()
    assert state["n"] - state["initial"] == 10
    assert _rate(shown, "pair") <= 10 / elapsed * 1.01 + 1e-9, shown  # 10 pairs over the elapsed time, at most
    assert "289010/300000" in shown


def test_a_fresh_run_starts_at_zero():
    bar = Bar("fresh", unit="pair")
    bar(0, 5)
    bar(5, 5)
    assert bar._bar.format_dict["initial"] == 0 and bar._bar.n == 5
    bar.close()
