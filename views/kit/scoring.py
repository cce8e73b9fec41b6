"""Inputs, the one progress bar and "Score now": every result a page computes or watches is asked of the
runner's door (:mod:`biascore.runs.runner`: ``run`` and ``computing``)."""
from __future__ import annotations

from typing import Callable, TypeVar

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
    """A select box of the benchmarks present in the data directory (synced with the URL's ``benchmark``).

    Registered benchmarks whose files are missing are named below it with the download command.
    """
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
    """Run ``compute(progress)`` under a :class:`ProgressBar` (pass it where the engine takes ``progress``).

    The bar is removed when ``compute`` returns. An error of a type in ``errors`` (the engine's one-line
    messages for bad input) is shown inline and gives None; anything else propagates.
    """
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
    """The one "Score now" widget: a button that, when pressed, runs ``compute(progress)`` through
    :func:`run_with_progress`. Returns what ``compute`` returned, or None (not pressed, or failed). In a read-only
    snapshot there is no button, only a line saying why. With ``watch`` (the result the button computes): while
    a run of it is announced, its state and progress instead of the button, and (``light``) under the button a
    light watch that redraws the page when a run starts or the result is stored elsewhere (:mod:`views.kit.run_watch`)."""
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
                  before: Callable[[], None] | None = None, keep_watching: bool = True, **options) -> bool:
    """"Score now" for one result of ``method``: computes it through the runner (``biascore.runs.runner.run``,
    cached) under the one progress bar; while someone else computes that very result, its progress instead
    (:func:`score_now_button`). ``before()`` runs just before computing. True when it just finished (the
    caller reruns to show the new result). ``keep_watching=False``: no light watch under the button (a page
    where people type, and whose main content is not this result: the translation review)."""
    def compute(progress: ProgressBar) -> bool:
        if before is not None:
            before()
        handle = get_handle(model)  # the runner loads it, after announcing the run to every page
        if handle.converts:  # tens of seconds, once per machine: said so, not left as a silent wait
            progress.bar.progress(0.0, text=f"Converting {model_label(model)} from its GGUF file (first use on this "
                                            f"machine only, about half a minute), then: {progress.text}")
        elif not handle.loaded:
            progress.bar.progress(0.0, text=f"Loading the model (once per process), then: {progress.text}")
        runner.run(method, handle, input, progress=progress, waiting=progress.waiting, **options)
        return True

    return bool(score_now_button(label, key, text, compute, errors=(BenchmarkError, ModelLoadError, ValueError,
                                                                     FileNotFoundError),
                                 watch=watched(method, model, input, **options), light=keep_watching))
