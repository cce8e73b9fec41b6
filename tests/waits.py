"""How long a test waits for an event before it gives up: a safety net, never a schedule.

Tests wait for the event itself (a line from a process, a file, an element on the page); the limit below only
stops a test that would otherwise hang, so it is generous: CI machines are shared and a busy one may take many
times as long as an idle one (the suite also runs its waiting tests once more with both cores loaded, .ci/run).
``BIASCORE_TEST_SAFETY_S`` changes it.
"""
from __future__ import annotations

import os
import time
from typing import Callable

SAFETY_S = float(os.environ.get("BIASCORE_TEST_SAFETY_S", "900"))
SAFETY_MS = SAFETY_S * 1000


def wait_until(condition: Callable[[], object], what: str, *, timeout: float = SAFETY_S, poll: float = 0.1,
               alive: Callable[[], object] | None = None) -> object:
    """Return ``condition()``'s first true value, looking every ``poll`` seconds; AssertionError naming ``what``
    after ``timeout`` seconds, or as soon as ``alive()`` (e.g. a process still running) turns false."""
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if alive is not None and not alive():
            value = condition()  # the last look after the process ended
            if value:
                return value
            raise AssertionError(f"gave up waiting for {what}: the process it depends on ended")
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(poll)
