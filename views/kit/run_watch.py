"""Runs in progress on the pages: whoever started them (another person, tab, the CLI, the API, a sweep).

A page follows a run announced for its selection (:mod:`biascore.runs.announce`; :func:`follow`) or keeps a light
watch (:func:`keep_watching`) by reading the announcements (a few small files) and the fingerprint of the method's
stored results (file names and times): no model, no key, no result read. Nothing here computes; the engine
answers, matching runs by names alone (:func:`biascore.runs.runner.watch`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import streamlit as st

from biascore import api
from biascore.errors import user_errors
from biascore.runs import runner
from biascore.display import code_span, markdown_literal
from views.kit.models import active_snapshot, model_label

#: Seconds between two looks at a run in progress or at a result not stored yet.
RUN_POLL_S = 2.0


@dataclass(frozen=True)
class Watched:
    """One method's result for a model (by name) on an input, as a page shows it."""

    method: Any
    model: str
    #: the input's name (a benchmark, a language, a SEAT test) or the loaded input
    input: object
    #: what is counted while it scores
    unit: str = "pairs"
    options: tuple = ()

    def watch(self) -> runner.Selection | None:
        """Where to look: the runs announced for it, matched by names (a served label by its target). None in a
        read-only snapshot or for options the method refuses."""
        if active_snapshot() is not None:
            return None
        try:
            target = api.ModelSpec.configured(self.model).name
            return runner.watch(self.method, target, self.input, **dict(self.options))
        except user_errors():
            return None

    @property
    def label(self) -> str:
        name = model_label(self.model)
        if self.input is None:  # the method's default input
            return code_span(name)
        return f"{code_span(name)} on {code_span(getattr(self.input, 'name', self.input))}"


def _line(watched: Watched, run: runner.Announcement) -> str:
    ago = max(0, int(time.time() - run.started))
    if run.state == runner.SCORING and run.total:
        state = f"{run.done}/{run.total} {watched.unit}"
    elif run.state == runner.CONVERTING:
        state = "converting the model (a GGUF file's first load, once per cache)"
    else:
        state = markdown_literal(run.describe(watched.unit))
    return (f"⏳ {watched.label} is being scored right now (by another person, tab, the command line or a sweep; "
            f"started {ago} s ago): {state}. The result shows here when it is stored.")


def follow(watched: Watched) -> bool:
    """When a run of ``watched`` is announced: show its state and progress, looked at again every
    :data:`RUN_POLL_S` seconds without anyone pressing anything, redraw the whole page once it has ended (its
    result then shows, or "Score now" again if it failed), and return True. False when none is going on."""
    sel = watched.watch()
    if sel is None or not sel.runs():
        return False
    stored_before = runner.stored_version(watched.method)

    @st.fragment(run_every=RUN_POLL_S)
    def run_in_progress() -> None:
        now = sel.runs()
        if not now or runner.stored_version(watched.method) != stored_before:
            st.rerun()  # the run has ended: the whole page again, now with its result
        run = runner.furthest(now)
        st.progress(min(max(run.done / run.total if run.total else 0.0, 0.0), 1.0), text=_line(watched, run))

    run_in_progress()
    return True


def keep_watching(watched: Watched) -> None:
    """Under a "not scored yet": look every :data:`RUN_POLL_S` seconds for a run announced for ``watched`` or its
    stored result (from any tab, the CLI, the API or a sweep) and redraw the whole page when either appears.
    The last failed run of it, if it ended moments ago, is named."""
    sel = watched.watch()
    if sel is None:
        return
    failed = [a for a in sel.runs(live_only=False) if a.state == runner.FAILED]
    if failed:
        st.caption(f"The last run of {watched.label} failed: {markdown_literal(failed[-1].error or '')}")

    stored_before = runner.stored_version(watched.method)  # (what is stored now the page has drawn already)

    @st.fragment(run_every=RUN_POLL_S)
    def result_watch() -> None:
        if sel.runs() or runner.stored_version(watched.method) != stored_before:
            st.rerun()

    result_watch()
