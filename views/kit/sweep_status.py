"""Sweeps writing into this cache (``python -m biascore sweep``): tasks done / running / failed.

Drawing only: the numbers come from the sweep's status files (:func:`biascore.sweep.status.read_sweeps`).
While a sweep runs, this part of the page refreshes itself every few seconds, and the whole page is
redrawn when a task finishes, so the tables above list its results as they arrive.
"""
from __future__ import annotations

import time

import streamlit as st

from biascore import settings
from biascore.sweep import SweepProgress, read_sweeps
from views.kit.common import public_text

REFRESH_S = 3.0
#: finished sweeps stay on the page this long when they had failures or were interrupted
RECENT_S = 24 * 3600


def _visible() -> list[SweepProgress]:
    now = time.time()
    return [s for s in read_sweeps(settings.cache_dir(), finished_since=now - RECENT_S)
            if s.in_progress or (now - s.updated < RECENT_S and (s.failed or s.interrupted))]


def show() -> None:
    """The sweep panel (nothing when no sweep is running or recently failed)."""
    active = any(s.in_progress for s in _visible())
    st.fragment(_draw, run_every=REFRESH_S if active else None)()


def _draw() -> None:
    sweeps = _visible()
    done = sum(s.counts["done"] for s in sweeps)
    seen = st.session_state.get("_sweep_done_seen")
    st.session_state["_sweep_done_seen"] = done
    if seen is not None and seen != done:
        st.rerun()  # a task finished: redraw the page so the Overview tables include its result
    for s in sweeps:
        c = s.counts
        started = time.strftime("%H:%M UTC", time.gmtime(s.started))
        state = "running" if s.in_progress else ("interrupted" if s.interrupted else "finished")
        st.subheader("Sweep in progress" if s.in_progress else f"Sweep {state}")
        st.progress((c["done"] + c["failed"]) / max(s.total, 1),
                    text=f"{c['done']} done · {c['running']} running · {c['failed']} failed · "
                         f"{c['pending']} pending — {s.total} tasks, started {started}")
        st.text(f"sweep {s.id} on {s.executor}")
        for name, pairs_done, pairs_total in s.running:
            st.text(f"running: {public_text(name)}" + (f" ({pairs_done}/{pairs_total} pairs)" if pairs_total else ""))
        for name, error in s.failed:
            st.text(f"failed: {public_text(name)}" + ("" if settings.public_mode() else f": {error}"))
        if s.interrupted:
            st.caption("This sweep stopped before all its tasks ran. Run the same command again to resume: "
                       "finished tasks are answered from the cache.")
