"""Runs in progress on the pages: whoever started them (another person, tab, the CLI, the API, a sweep).

A page whose selection has an announced run (:mod:`biascore.runs.announce`) shows its state and progress
instead of "Score now" (:func:`follow`); a page that says "not scored yet" keeps a light watch (:func:`keep_watching`):
every :data:`RUN_POLL_S` seconds it reads the announcements (a few small files) and looks whether the result's
file exists (one ``stat``) — no model, no result read — and redraws itself when a run is announced or the result
is there. Nothing here computes; the engine answers (:func:`biascore.runs.runner.selection`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st

from biascore.runs import announce
from biascore import settings
from biascore.display import code_span, markdown_literal
from biascore.models.names import display_name

#: Seconds between two looks at a run in progress or at a result not stored yet.
RUN_POLL_S = 2.0


@dataclass(frozen=True)
class Watched:
    """One method's result for a model (by name) on an input, as a page shows it."""

    method: str
    model: str
    #: the input's name (a benchmark, a language, a SEAT test) or the loaded input
    input: object
    #: what is counted while it scores
    unit: str = "pairs"
    options: tuple = ()

    def selection(self, handle=None) -> announce.Selection | None:
        """Where to look (tag, key); ``handle`` (the page's shared one) or a fresh handle, whose identity is read
        from the model's files now (e.g. once a GGUF file has been converted elsewhere). None in a read-only
        snapshot or for an input that cannot be read."""
        from biascore.errors import user_errors
        from biascore.models.handle import ModelHandle
        from biascore.runs.runner import selection
        from biascore.methods import get
        from biascore.snapshot import active

        if active() is not None:
            return None
        try:
            handle = handle or ModelHandle(settings.model_target(self.model), label=self.model)  # a served label
            return selection(get(self.method), handle, self.input, **dict(self.options))
        except user_errors():
            return None

    @property
    def label(self) -> str:
        name = display_name(self.model) if settings.public_mode() else self.model
        if self.input is None:  # the method's default input
            return code_span(name)
        return f"{code_span(name)} on {code_span(getattr(self.input, 'name', self.input))}"


def _line(watched: Watched, run: announce.Announcement) -> str:
    ago = max(0, int(time.time() - run.started))
    if run.state == announce.SCORING and run.total:
        state = f"{run.done}/{run.total} {watched.unit}"
    elif run.state == announce.CONVERTING:
        state = "converting the model (a GGUF file's first load, once per cache)"
    else:
        state = markdown_literal(run.describe(watched.unit))
    return (f"⏳ {watched.label} is being scored right now (by another person, tab, the command line or a sweep; "
            f"started {ago} s ago): {state}. The result shows here when it is stored.")


def _draw(watched: Watched, run: announce.Announcement) -> None:
    share = run.done / run.total if run.total else 0.0
    st.progress(min(max(share, 0.0), 1.0), text=_line(watched, run))


def follow(watched: Watched, handle=None) -> bool:
    """When a run of ``watched`` is announced: show its state and progress, looked at again every
    :data:`RUN_POLL_S` seconds without anyone pressing anything, redraw the whole page once it has ended (its
    result then shows, or "Score now" again if it failed), and return True. False when none is going on."""
    sel = watched.selection(handle)
    if sel is None:
        return False
    runs = sel.runs()
    if not runs:
        return False
    stored_before = sel.stored()

    @st.fragment(run_every=RUN_POLL_S)
    def run_in_progress() -> None:
        now = sel.runs()
        if not now or (sel.stored() and not stored_before):
            st.rerun()  # the run has ended: the whole page again, now with its result
        _draw(watched, announce.furthest(now))

    run_in_progress()
    return True


def keep_watching(watched: Watched, handle=None) -> None:
    """Under a "not scored yet": look every :data:`RUN_POLL_S` seconds for a run announced for ``watched`` or its
    stored result (from any tab, the CLI, the API or a sweep) and redraw the whole page when either appears.
    The last failed run of it, if it ended moments ago, is named."""
    sel = watched.selection(handle)
    if sel is None:
        return
    failed = [a for a in sel.runs(live_only=False) if a.state == announce.FAILED]
    if failed:
        st.caption(f"The last run of {watched.label} failed: {markdown_literal(failed[-1].error or '')}")

    stored_before = sel.stored()  # (a result the page did not show stays so: no redraw for it)

    @st.fragment(run_every=RUN_POLL_S)
    def result_watch() -> None:
        now = sel if sel.key is not None else (watched.selection() or sel)
        if now.runs() or (now.stored() and not stored_before):
            st.rerun()

    result_watch()
