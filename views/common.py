"""Widgets and drawing helpers shared by every page. No scoring logic here: pages call the engine."""
from __future__ import annotations

import html
import os

import pandas as pd
import streamlit as st

from biascore.core import models as engine_models
from biascore.core import settings

#: Models offered in selectors before the user types their own (embedded ones first).
SUGGESTED_MODELS = ["smollm2-135m", "all-minilm-l6-v2", "gemma3-270m", "bert-base-uncased", "gpt2",
                    "xlm-roberta-base"]


@st.cache_resource(show_spinner="Loading model (once per process)…")
def get_model(name: str, kind: str = "auto", attn_implementation: str | None = None):
    """Load a model once per process (st.cache_resource); errors propagate to :func:`model_or_error`."""
    return engine_models.load_model(name, kind=kind, attn_implementation=attn_implementation)


def model_or_error(name: str, **kwargs):
    """The loaded model, or None after showing the loader's message inline (never a traceback)."""
    try:
        return get_model(name, **kwargs)
    except engine_models.ModelLoadError as exc:
        st.error(str(exc))
        return None


def model_selector(label: str = "Model", key: str = "model", default: str = engine_models.DEFAULT_MODEL,
                   options: list[str] | None = None) -> str:
    """A select box of suggested models plus a free-text field for any hub id or local path."""
    options = list(options or SUGGESTED_MODELS)
    if default not in options:
        options.insert(0, default)
    qp = st.query_params.get(key)
    if qp and qp not in options:
        options.append(qp)
    choice = st.selectbox(label, options + ["other…"], index=options.index(qp) if qp in options else
                          options.index(default), key=f"{key}_select")
    if choice == "other…":
        choice = st.text_input("Hub id, local folder or .gguf path", key=f"{key}_custom").strip() or default
    return choice


def data_dir_notice() -> None:
    """Tell the user where benchmark data is read from and how to get it."""
    st.caption(f"Benchmark data directory: `{settings.data_dir()}` — download the public benchmarks with "
               "`python -m biascore data download` (or set `BIASCORE_DATA_DIR`).")


def csv_download(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", key: str | None = None) -> None:
    st.download_button(label, frame.to_csv(index=False).encode("utf-8"), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}")


def escape(text: str) -> str:
    """All user or benchmark text goes through this before it reaches HTML."""
    return html.escape(str(text), quote=True)


# ---------------------------------------------------------------------------------------------------------
# Shared by the attribution pages (Overview, Token attributions, Try a pair, Translation review)
# ---------------------------------------------------------------------------------------------------------
DEFAULT_BENCHMARK = "demo"


def limit_torch_threads() -> None:
    """Use ``BIASCORE_TORCH_THREADS`` torch threads (default 1) in the dashboard process.

    One live pair is a handful of small matrix products; on a shared CPU a second thread mostly waits
    for the first (measured here: score_pair 1.0 s with 1 thread, 6–9 s with 2 under load).
    """
    import torch

    n = int(os.environ.get("BIASCORE_TORCH_THREADS", "1"))
    if n > 0 and torch.get_num_threads() != n:
        torch.set_num_threads(n)


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
    if missing:
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


def cached_runs() -> pd.DataFrame:
    """The attribution runs in the result cache (re-read when a run file is added, replaced or removed)."""
    from biascore.methods.attribution.results import runs_signature

    return _cached_runs(runs_signature(), str(settings.cache_dir()), str(settings.data_dir()))


@st.cache_data(show_spinner=False, max_entries=8)
def _cached_runs(signature: tuple, cache_dir: str, data_dir: str) -> pd.DataFrame:
    from biascore.methods.attribution.results import cached_runs as engine_cached_runs
    from biascore.core.cache import ResultCache

    return engine_cached_runs(ResultCache(cache_dir), data_dir)


def best_run(model: str, benchmark: str) -> pd.Series | None:
    """The cached run to show for ``model`` on ``benchmark``, or None."""
    from biascore.methods.attribution.results import best_runs

    runs = best_runs(cached_runs())
    hit = runs[(runs.model == model) & (runs.benchmark == benchmark)]
    hit = hit[hit.path.map(os.path.exists)]  # a damaged file found earlier in this run has been removed
    return hit.iloc[0] if len(hit) else None


@st.cache_resource(show_spinner="Reading cached scores…", max_entries=16)
def attribution_frame(path: str, benchmark: str, mtime: float) -> pd.DataFrame:
    """The engine's attribution frame for one cached run (kept in memory; treat as read-only).

    ``st.cache_resource`` rather than ``st.cache_data``: the frame holds list columns for every pair and
    copying it on each rerun would cost more than the page budget for a 12,089-pair benchmark.
    ``mtime`` is part of the key so a re-scored run is re-read.
    """
    from biascore.methods.attribution.results import load_run

    return load_run(path, benchmark)


@st.cache_data(show_spinner=False, max_entries=16)
def pair_table(path: str, benchmark: str, mtime: float) -> pd.DataFrame:
    """The browsing table (no list columns) for one cached run."""
    from biascore.methods.attribution.token_view import pair_table as engine_pair_table

    return engine_pair_table(attribution_frame(path, benchmark, mtime))


#: What reading a cached run can fail with: each carries a one-line message for the page.
def unreadable_run_errors() -> tuple[type[Exception], ...]:
    from biascore.methods.attribution.results import DamagedResult, StaleResult

    return DamagedResult, StaleResult


def verified_run(model: str, benchmark: str, run) -> pd.DataFrame | None:
    """The attribution frame of a cached ``run``, or None after a one-line error on the page when the file
    fails verification (it has then been removed, so "Score now" computes it again) or is stale."""
    try:
        return attribution_frame(run.path, benchmark, float(run.mtime))
    except unreadable_run_errors() as exc:
        st.error(f"{model} on {benchmark}: {exc}")
        return None


def run_frame(model: str, benchmark: str) -> pd.DataFrame | None:
    """The attribution frame of ``model`` on ``benchmark`` from the cache, or None when not scored yet."""
    run = best_run(model, benchmark)
    if run is None:
        return None
    return verified_run(model, benchmark, run)


def score_now(model: str, benchmark: str, key: str) -> bool:
    """A "Score now" button that scores ``model`` on ``benchmark`` with a progress bar and caches the result.

    Returns True when it just finished (the caller reruns to show the new numbers).
    """
    from biascore.core.datasets import BenchmarkError
    from biascore.methods.attribution.scorer import score_benchmark

    if not st.button(f"Score now: {model} on {benchmark}", key=key, type="primary"):
        return False
    lm = model_or_error(model)
    if lm is None:
        return False
    bar = st.progress(0.0, text=f"Scoring {benchmark} with {model}…")

    def progress(done: int, total: int) -> None:
        bar.progress(min(done / max(total, 1), 1.0), text=f"Scoring {benchmark} with {model}: {done}/{total} pairs")

    def waiting(done: int, total: int) -> None:  # another user (tab, process) is computing this very result
        bar.progress(min(done / max(total, 1), 1.0),
                     text=f"Waiting for another user scoring {benchmark} with {model}: {done}/{total} pairs")

    try:
        limit_torch_threads()
        score_benchmark(lm, benchmark, progress=progress, waiting=waiting)
    except (BenchmarkError, ValueError) as exc:
        st.error(str(exc))
        return False
    bar.progress(1.0, text="Done — cached.")
    return True


def figure_downloads(fig, name: str, key: str) -> None:
    """PNG and SVG download buttons for a plotly figure (rendered only when clicked)."""
    from views.charts import export_available, figure_bytes

    ok, why = export_available()
    if not ok:
        st.caption(f"{why}; the camera icon in the chart's toolbar saves a PNG from the browser.")
        return
    cols = st.columns(2)
    for col, fmt, mime in ((cols[0], "png", "image/png"), (cols[1], "svg", "image/svg+xml")):
        col.download_button(f"{fmt.upper()}", data=lambda fmt=fmt: figure_bytes(fig, fmt), file_name=f"{name}.{fmt}",
                            mime=mime, key=f"{key}_{fmt}", on_click="ignore")


@st.cache_data(show_spinner=False, max_entries=256)
def live_pair(model: str, sent_more: str, sent_less: str) -> dict:
    """The engine's :func:`score_pair` for one typed pair (memoised per model and text)."""
    from biascore.methods.attribution.scorer import score_pair

    lm = get_model(model)
    limit_torch_threads()
    return score_pair(lm, sent_more, sent_less)


@st.cache_data(show_spinner=False, max_entries=64)
def summary(path: str, benchmark: str, mtime: float, metric: str) -> pd.DataFrame:
    """The engine's :func:`summarize` (n, score, 95% Wilson interval) for one cached run."""
    from biascore.methods.attribution.scorer import summarize

    return summarize(attribution_frame(path, benchmark, mtime), metric)


def verdict_text(sjsd: float) -> str:
    """The pair's verdict in words (S_JSD < 0: the model prefers the more-biased sentence)."""
    if sjsd != sjsd:  # NaN
        return "not scored"
    return "biased — prefers the more-biased sentence" if sjsd < 0 else "not biased — prefers the less-biased sentence"
