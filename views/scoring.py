"""Inputs, the one progress bar and "Score now": every result a page computes or watches is asked of the
runner's door (:mod:`biascore.core.runner`: ``run`` and ``computing``)."""
from __future__ import annotations

from typing import Callable, TypeVar

import streamlit as st

from biascore.core.display import code_span
from views.common import show_error
from views.models import active_snapshot, get_handle, model_label, model_or_error, read_only_notice

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------------------
# Inputs, progress and "Score now": every result is asked of the runner's door (biascore.core.runner)
# ---------------------------------------------------------------------------------------------------------
DEFAULT_BENCHMARK = "demo"


def query_param(key: str, default: str | None = None) -> str | None:
    value = st.query_params.get(key)
    return value if value not in (None, "") else default


def benchmark_selector(label: str = "Benchmark", key: str = "benchmark", only: list[str] | None = None,
                       default: str = DEFAULT_BENCHMARK) -> str | None:
    """A select box of the benchmarks present in the data directory (synced with the URL's ``benchmark``).

    Registered benchmarks whose files are missing are named below it with the download command.
    """
    from biascore.core.datasets import available_benchmarks

    benches = [b for b in available_benchmarks() if only is None or b["name"] in only]
    present = [b["name"] for b in benches if b["available"]]
    missing = [b["name"] for b in benches if not b["available"]]
    if missing and active_snapshot() is None:
        st.caption(f"Not in the data directory: {', '.join(missing)}. Download them with "
                   "`python -m biascore data download` (or set `BIASCORE_DATA_DIR`); they then appear here.")
    if not present:
        st.info("No benchmark available yet — see the download command above.")
        return None
    wanted = query_param(key, default)
    index = present.index(wanted) if wanted in present else (present.index(default) if default in present else 0)
    choice = st.selectbox(label, present, index=index, key=f"{key}_select")
    st.query_params[key] = choice
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
                     errors: tuple[type[Exception], ...] = (ValueError, FileNotFoundError)) -> T | None:
    """The one "Score now" widget: a button that, when pressed, runs ``compute(progress)`` through
    :func:`run_with_progress`. Returns what ``compute`` returned, or None (not pressed, or failed). In a read-only
    snapshot there is no button, only a line saying why."""
    if read_only_notice(label):
        return None
    if not st.button(label, key=key, type="primary"):
        return None
    return run_with_progress(text, compute, errors)


#: Seconds between two looks at a result being computed elsewhere (:func:`watch_computing`).
RUN_POLL_S = 2.0


def watch_computing(method, model: str, input, **options) -> bool:
    """When someone else — another person, tab, the CLI or a sweep — is computing ``method``'s result for
    ``model`` on ``input`` right now (the runner's :func:`~biascore.core.runner.computing`): show how far it has
    got, looked at again every :data:`RUN_POLL_S` seconds without anyone pressing anything (a fragment with
    ``run_every``), redraw the whole page once it has ended (its result then shows, or "Score now" again if it
    stopped), and return True. False when nothing is being computed (or the model's identity needs a load to
    be known: a hub id)."""
    from biascore.core import runner

    if active_snapshot() is not None:
        return False
    handle = get_handle(model)

    def now():
        try:
            return runner.computing(method, handle, input, **options)
        except (ValueError, FileNotFoundError):  # an input that cannot be read is not being computed either
            return None

    if now() is None:
        return False

    @st.fragment(run_every=RUN_POLL_S)
    def progress_of_the_run() -> None:
        report = now()
        if report is None:
            st.rerun()  # the run has ended: the whole page again, now with its result
        unit = method.input_kind.unit
        st.progress(min(report.done / max(report.total, 1), 1.0),
                    text=f"⏳ {code_span(model_label(model))} is being scored on {getattr(input, 'name', input)} right now (by another "
                         f"person, tab, the command line or a sweep): {report.done}/{report.total} {unit}s. The "
                         "result shows here when it is stored.")

    progress_of_the_run()
    return True


def score_now_for(method, model: str, input, *, key: str, label: str, text: str,
                  before: Callable[[], None] | None = None, **options) -> bool:
    """"Score now" for one result of ``method``: computes it through the runner (``biascore.core.runner.run``,
    cached) under the one progress bar; while someone else computes that very result, its progress instead
    (:func:`watch_computing`). ``before()`` runs just before computing. True when it just finished (the
    caller reruns to show the new result)."""
    from biascore.core import runner
    from biascore.core.datasets import BenchmarkError

    if watch_computing(method, model, input, **options):
        return False

    def compute(progress: ProgressBar) -> bool:
        handle = model_or_error(model)
        if handle is None:
            return False
        if before is not None:
            before()
        runner.run(method, handle, input, progress=progress, waiting=progress.waiting, **options)
        return True

    return bool(score_now_button(label, key, text, compute, errors=(BenchmarkError, ValueError, FileNotFoundError)))
