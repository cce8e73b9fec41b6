"""Inputs, the one progress bar and "Score now": every result a page computes or watches is asked of the
runner's door (:mod:`biascore.runs.runner`: ``run`` and ``computing``)."""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, ContextManager, TypeVar

import streamlit as st

from biascore import api
from biascore.errors import BenchmarkError, ModelLoadError
from biascore.runs import runner
from views.kit import run_watch
from views.kit.common import show_error
from views.kit.links import keep, link_choice
from views.kit.models import active_snapshot, get_handle, model_label, read_only_notice

T = TypeVar("T")


def benchmark_selector(only: list[str] | None = None, default: str = "demo") -> str | None:
    """A select box of the benchmarks present in the data directory (synced with the URL's ``benchmark``). Registered
    benchmarks whose files are missing are named below it with the download command."""
    benches = [b for b in api.available_benchmarks() if only is None or b["name"] in only]
    present = [b["name"] for b in benches if b["available"]]
    missing = [b["name"] for b in benches if not b["available"]]
    if missing and active_snapshot() is None:
        st.caption(f"Not in the data directory: {', '.join(missing)}. Download them with "
                   "`python -m biascore data download` (or set `BIASCORE_DATA_DIR`); they then appear here.")
    if not present:
        st.info("No benchmark available yet — see the download command above.")
        return None
    fallback = default if default in present else present[0]
    wanted = link_choice("benchmark", present, fallback, noun="benchmarks in the data directory",
                         control="benchmark_select")
    choice = st.selectbox("Benchmark", present, index=present.index(wanted), key="benchmark_select")
    keep("benchmark", choice)
    return choice


class ProgressBar:
    """A Streamlit progress bar driven by the engine's ``progress(done, total)`` (call the object itself);
    :meth:`waiting` moves the same bar while another user (tab, process) computes the very same result."""

    def __init__(self, text: str):
        self.text = text
        self.bar = st.progress(0.0, text=text)

    def __call__(self, done: int, total: int, text: str | None = None) -> None:
        self.bar.progress(min(done / max(total, 1), 1.0), text=f"{text or self.text} {done}/{total}")

    def waiting(self, done: int, total: int) -> None:
        self(done, total, f"Waiting for another user — {self.text}")


def run_with_progress(text: str, compute: Callable[[ProgressBar], T],
                      errors: tuple[type[Exception], ...] = (ValueError, FileNotFoundError)) -> T | None:
    """Run ``compute(progress)`` under a :class:`ProgressBar`, removed when it returns; an error of a type in
    ``errors`` (the engine's one-line messages) is shown inline and gives None, anything else propagates."""
    progress = ProgressBar(text)
    try:
        return compute(progress)
    except errors as exc:
        show_error(exc)
        return None
    finally:
        progress.bar.empty()


def score_now_button(label: str, key: str, text: str, compute: Callable[[ProgressBar], T],
                     errors: tuple[type[Exception], ...] = (ValueError, FileNotFoundError),
                     watch: run_watch.Watched | None = None, light: bool = True) -> T | None:
    """The one "Score now" widget: a button that runs ``compute(progress)`` (:func:`run_with_progress`); what it
    returned, or None. In a snapshot a line says why there is none. With ``watch``: an announced run of it is
    followed instead, and (``light``) a light watch under the button redraws the page (:mod:`views.kit.run_watch`)."""
    if read_only_notice(label) or (watch is not None and run_watch.follow(watch)):
        return None
    if not st.button(label, key=key, type="primary"):
        if watch is not None and light:
            run_watch.keep_watching(watch)
        return None
    return run_with_progress(text, compute, errors)


def watch_computing(method, model: str, input, **options) -> bool:
    """When someone else (another person, tab, the CLI, the API or a sweep) is computing ``method``'s result for
    ``model`` on ``input`` right now: follow it on the page and return True (:func:`views.kit.run_watch.follow`)."""
    return run_watch.follow(watched(method, model, input, **options))


def watched(method, model: str, input, **options) -> run_watch.Watched:
    """``method``'s result for ``model`` on ``input`` as a page watches it (:mod:`views.kit.run_watch`)."""
    return run_watch.Watched(method, model, input, f"{method.input_kind.unit}s", tuple(options.items()))


def score_now_for(method, model: str, input, *, key: str, label: str, text: str,
                  around: Callable[[], ContextManager] = nullcontext, keep_watching: bool = True, **options) -> bool:
    """"Score now" for one result of ``method`` through the runner (:func:`score_now_button`); the computation runs
    inside ``around()``. True when it just finished. ``keep_watching=False``: no light watch (a page where people
    type: the translation review)."""
    def compute(progress: ProgressBar) -> bool:
        handle = get_handle(model)  # the runner loads it, after announcing the run to every page
        if not handle.loaded:  # said so, not left as a silent wait (a GGUF file's conversion: once per machine)
            progress.bar.progress(0.0, text=f"{handle.load_line(model_label(model))}, then: {progress.text}")
        with around():
            runner.run(method, handle, input, progress=progress, waiting=progress.waiting, **options)
        return True

    return bool(score_now_button(label, key, text, compute, errors=(BenchmarkError, ModelLoadError, ValueError,
                                                                     FileNotFoundError),
                                 watch=watched(method, model, input, **options), light=keep_watching))
