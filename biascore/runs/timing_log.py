"""Timing lines for load tests: where a live request's time goes inside the server.

Off unless ``BIASCORE_TIMING_LOG`` names a file; then :func:`record` appends one JSON line per event (wall-clock
``t`` from ``time.time()``, so a load-test client on the same machine can put its own send and receive times on the
same axis; bench/ws_load_test.py reads them back). Lines are written whole under a lock, so threads of one server
never interleave them.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
import time

_lock = threading.Lock()


def record(event: str, **fields) -> None:
    """Append ``{"event": event, "t": now, **fields}`` as one line to ``BIASCORE_TIMING_LOG`` (nothing when unset)."""
    target = os.environ.get("BIASCORE_TIMING_LOG")
    if not target:
        return
    line = json.dumps({"event": event, "t": time.time(), **fields}, default=str) + "\n"
    with _lock, open(target, "a", encoding="utf-8") as out:
        out.write(line)


def pair_tag(sent_more: str, sent_less: str) -> str:
    """A short tag for a pair (no text in the log), the same in the server and in the load-test client."""
    return hashlib.sha256(f"{sent_more}\x1f{sent_less}".encode()).hexdigest()[:12]
