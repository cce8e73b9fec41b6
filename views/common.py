"""Widgets and drawing helpers shared by every page. No scoring logic here: pages call the engine."""
from __future__ import annotations

import os
import re
import urllib.parse
from typing import Callable, TypeVar

import pandas as pd
import streamlit as st

from biascore.core import models as engine_models
from biascore.core import settings
from biascore.core.display import code_span, markdown_literal, plotly_label
from biascore.core.errors import one_line
from biascore.core.model_names import display_name, is_local_path, redact_paths
from views import run_watch

T = TypeVar("T")

#: Models offered in selectors before the user types their own (embedded ones first).
SUGGESTED_MODELS = ["smollm2-135m", "all-minilm-l6-v2", "gemma3-270m", "bert-base-uncased", "gpt2",
                    "xlm-roberta-base"]


# ---------------------------------------------------------------------------------------------------------
# Offline snapshots (BIASCORE_SNAPSHOT): results and benchmark rows from a verified zip, nothing computed
# ---------------------------------------------------------------------------------------------------------
def open_snapshot() -> bool:
    """Serve the snapshot named by ``BIASCORE_SNAPSHOT`` (verified and unpacked once per process), or the normal
    cache when it is unset. False after showing why a snapshot is refused (one line)."""
    from biascore import snapshot

    path = settings.snapshot_file()
    if path is None:
        snapshot.deactivate()
        return True
    try:
        opened = snapshot.activate(path)
    except snapshot.SnapshotError as exc:
        snapshot.deactivate()
        st.error(f"Snapshot refused: {one_line(exc)}")
        return False
    st.sidebar.caption(f"📦 Read-only snapshot {opened.describe()}")
    return True


def active_snapshot():
    """The snapshot in use (:class:`biascore.snapshot.OpenedSnapshot`), or None."""
    from biascore.snapshot import active

    return active()


def read_only_notice(what: str) -> bool:
    """In a snapshot: say that ``what`` needs a model or a computation and is off; True then (skip it)."""
    snap = active_snapshot()
    if snap is None:
        return False
    st.info(f"{what} — off in this read-only snapshot ({code_span(snap.label)}): it shows cached results only.")
    return True


def get_handle(name: str):
    """The one model handle per model name and server process (st.cache_resource: shared by every session;
    the handle loads the weights once, on first use, thread-safely). In a snapshot: a stand-in with the
    exported results' identity that never loads (only the embedded default model runs live)."""
    snap = active_snapshot()
    return _handle(name, str(snap.root) if snap is not None else None)


@st.cache_resource(show_spinner=False)
def _handle(name: str, snapshot_root: str | None):
    """Keyed by the snapshot too, so that a handle made before a snapshot was opened (or for another one) is
    never reused in it: a live handle would compute where only the snapshot's results may be shown."""
    from biascore.core.handle import ModelHandle

    if snapshot_root is not None and name != engine_models.DEFAULT_MODEL:
        from biascore.snapshot.standin import standin_handle

        return standin_handle(name, active_snapshot().model_facts(name) or {})
    return ModelHandle(name)


def get_model(name: str):
    """The loaded model (loaded once per process by its handle); errors propagate to :func:`model_or_error`."""
    with st.spinner("Loading model (once per process)…") if not get_handle(name).loaded else _nothing():
        return get_handle(name).load()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def model_or_error(name: str, live: bool = False, **kwargs):
    """The model's handle, loaded (or, in a snapshot unless ``live``, a stand-in whose cache keys find the
    snapshot's results for ``name``: nothing is loaded); None after showing the loader's message inline
    (never a traceback)."""
    snap = active_snapshot()
    if snap is not None and not live:
        if snap.model_facts(name) is None:
            st.info(f"{code_span(name)} has no results in this snapshot ({code_span(snap.label)}).")
            return None
        return get_handle(name)
    try:
        get_model(name)
        return get_handle(name)
    except (engine_models.ModelLoadError, settings.ReadOnlySnapshotError) as exc:
        show_error(exc)
        return None


def model_for_cache(name: str):
    """``name``'s handle for reading its cached results without loading it (pages load a model only to compute):
    the runner finds a cached result from the identity the handle reads off the model's files, and loads the
    weights only when a computation needs them (Score now). In a snapshot its stand-in; None after an inline
    line when the snapshot has no results of it."""
    if active_snapshot() is not None:
        return model_or_error(name)
    return get_handle(name)


def model_label(name: str) -> str:
    """How a model is named on the page: in public mode a local path shows as its folder name (no server path;
    :mod:`biascore.core.model_names`); otherwise as given."""
    return display_name(name) if settings.public_mode() else str(name)


def public_text(text: object) -> str:
    """``text`` for the page: in public mode with every server path reduced to its last component."""
    return redact_paths(str(text)) if settings.public_mode() else str(text)


def model_visible(name: str) -> bool:
    """Whether a cached model's results may be listed: always, except in public mode, where only the allow-list's
    models (a folder also under another path to it, e.g. through a link) and those cached under a display name
    (an alias or hub id, not a path) are."""
    if not settings.public_mode() or not is_local_path(name):
        return True
    allowed = settings.allowed_models()
    return name in allowed or os.path.realpath(name) in {os.path.realpath(a) for a in allowed if is_local_path(a)}


def set_model_param(model: str, key: str = "model") -> None:
    """Write the chosen model to the URL (its display name in public mode: no server path in a link)."""
    st.query_params[key] = model_label(model)


def offered_models() -> list[str]:
    """The models the dashboard offers: the server's allow-list in public mode, else the suggested models."""
    return list(settings.allowed_models()) if settings.public_mode() else list(SUGGESTED_MODELS)


def _trusted_link_models() -> set[str]:
    """Models a link (``?model=``) may name: the allow-list, and outside public mode the suggested models
    and those already in the result cache. Never an arbitrary path: a URL must not make the server read
    and hash folders of its choosing."""
    trusted = set(settings.allowed_models())
    if not settings.public_mode():
        trusted |= set(SUGGESTED_MODELS) | set(cached_runs().model)
    return trusted


def model_selector(label: str = "Model", key: str = "model", default: str = engine_models.DEFAULT_MODEL,
                   options: list[str] | None = None, scorer: str | tuple[str, ...] | None = None) -> str:
    """A select box of models, synced with the URL parameter ``key``.

    Public mode (``BIASCORE_PUBLIC=1``): only the server's allow-list (``BIASCORE_MODELS``), no free field.
    Otherwise: suggested models plus an "other…" field for any hub id, local folder or .gguf path.
    A link's ``?model=`` is accepted only when :func:`_trusted_link_models` lists it.
    In a snapshot: its models only (those with results of cache scorer ``scorer`` when given); nothing is loaded.
    """
    snap = active_snapshot()
    if snap is not None:
        names = list(options or snap.model_names(scorer)) or [default]
        qp = st.query_params.get(key)
        index = names.index(qp) if qp in names else (names.index(default) if default in names else 0)
        return st.selectbox(label, names, index=index, key=f"{key}_select")
    allowed = settings.allowed_models()
    if settings.public_mode():
        options = [m for m in (options or allowed) if m in allowed] or list(allowed)
        free = False
    else:
        options, free = list(options or offered_models()), True
    if default not in options:
        if free:
            options.insert(0, default)
        else:
            default = options[0]
    qp = st.query_params.get(key)
    if qp and qp not in options:
        labelled = [m for m in options if model_label(m) == qp]  # a link written in public mode: display names
        if labelled:
            qp = labelled[0]
        elif qp in _trusted_link_models():
            options.append(qp)
        else:
            st.warning(f"The link names a model this server does not offer; showing {code_span(model_label(default))} "
                       "instead.")
            qp = None
    choice = st.selectbox(label, options + (["other…"] if free else []), format_func=model_label,
                          index=options.index(qp) if qp in options else options.index(default), key=f"{key}_select")
    if choice == "other…":
        choice = st.text_input("Hub id, local folder or .gguf path", key=f"{key}_custom").strip() or default
    return choice


def data_dir_notice() -> None:
    """Tell the user where benchmark data is read from and how to get it (no server path in public mode)."""
    snap = active_snapshot()
    if snap is not None:
        st.caption(f"Read-only snapshot {code_span(snap.label)} (engine {snap.manifest['engine_version']}, made "
                   f"{snap.manifest.get('created_at', '?')}): results and benchmark rows come from it; "
                   "nothing is scored here.")
        return
    if settings.public_mode():
        return
    st.caption(f"Benchmark data directory: {code_span(settings.data_dir())} — download the public benchmarks with "
               "`python -m biascore data download` (or set `BIASCORE_DATA_DIR`).")


def csv_download(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", key: str | None = None) -> None:
    st.download_button(label, frame.to_csv(index=False).encode("utf-8"), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}")


# ---------------------------------------------------------------------------------------------------------
# Text stays text: benchmark and user sentences never reach a markdown or HTML renderer
# ---------------------------------------------------------------------------------------------------------
def literal(text: object, label: str | None = None) -> None:
    """Show benchmark or user text exactly as written: ``st.text`` parses no markdown and no HTML, so no
    link, image, bold or formula renders and the browser fetches nothing. ``label`` (our own words) goes in
    front, also as plain text."""
    st.text(f"{label}: {text}" if label else str(text))


def error_text(exc: BaseException, public_text: str | None = None) -> str:
    """An exception as one line for a markdown-rendering element (``st.error``, toasts), every character literal
    (:func:`biascore.core.display.markdown_literal`). In public mode the line names no server path: an error's
    path-free ``reason`` when it has one (e.g. ``ReviewError``), else ``public_text`` when given, else
    :func:`biascore.core.errors.one_line`'s line with paths replaced."""
    line = one_line(exc)
    if settings.public_mode():
        line = getattr(exc, "reason", None) or public_text or line
    return markdown_literal(line)


def show_error(exc: BaseException, public_text: str | None = None) -> None:
    """An exception as one literal line on the page (never a traceback; no server path in public mode)."""
    st.error(error_text(exc, public_text), icon="⚠️")


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
def run_result_frame(path: str, benchmark: str, mtime: float) -> pd.DataFrame:
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

    return engine_pair_table(run_result_frame(path, benchmark, mtime))


#: What reading a cached run can fail with: each carries a one-line message for the page.
def unreadable_run_errors() -> tuple[type[Exception], ...]:
    from biascore.methods.attribution.results import DamagedResult, StaleResult

    return DamagedResult, StaleResult


def verified_run(model: str, benchmark: str, run) -> pd.DataFrame | None:
    """The attribution frame of a cached ``run``, or None after a one-line error on the page when the file
    fails verification (it has then been removed, so "Score now" computes it again) or is stale."""
    try:
        return run_result_frame(run.path, benchmark, float(run.mtime))
    except unreadable_run_errors() as exc:
        st.error(f"{code_span(model_label(model))} on {benchmark}: {one_line(exc)}")
        return None


@st.cache_data(show_spinner="Collecting the words of every pair…", max_entries=16)
def word_occurrences(path: str, benchmark: str, mtime: float) -> pd.DataFrame:
    """The engine's word occurrences of one cached run (:func:`~biascore.methods.words.scorer.occurrences_for_run`,
    itself cached as parquet)."""
    from biascore.methods.words.scorer import occurrences_for_run

    return occurrences_for_run(path, benchmark)


def token_page_link(benchmark: str, model: str, pair_id: int) -> str:
    """A link to one pair on the Token attributions page (for a st.column_config.LinkColumn)."""
    return "/token_attributions?" + urllib.parse.urlencode({"benchmark": benchmark, "model": model_label(model),
                                                           "pair": int(pair_id)})


def scored_models(benchmark: str) -> list[str]:
    """Models with a usable (not stale) cached attribution run on ``benchmark`` (in public mode only the
    allowed ones)."""
    runs = cached_runs()
    return [m for m in sorted(runs[(runs.benchmark == benchmark) & ~runs.stale.astype(bool)].model.unique())
            if not settings.public_mode() or m in settings.allowed_models()]


def require_run(model: str, benchmark: str, key: str) -> pd.Series:
    """The cached run of ``model`` on ``benchmark``; when there is none, follow the run in progress of it, or say
    so and offer "Score now", and stop the page (it reruns when a run finishes or the result is stored)."""
    run = best_run(model, benchmark)
    if run is None:
        if watch_run(model, benchmark):  # someone is scoring it right now: the page follows that run
            st.stop()
        st.info(f"{code_span(model_label(model))} has not been scored on {benchmark} yet.")
        if score_now(model, benchmark, key=key):
            st.rerun()
        st.stop()
    return run


def compare_selector(others: list[str], key: str, url_key: str | None = None) -> str | None:
    """A "compare with a second model" box over ``others`` (models scored on the same benchmark); None for
    none. With ``url_key`` the choice is read from and written to that URL parameter."""
    options = ["(none)"] + others
    wanted = query_param(url_key) if url_key else None
    wanted = next((m for m in others if wanted in (m, model_label(m))), None)
    choice = st.selectbox("Compare with a second model", options, format_func=model_label,
                          index=options.index(wanted) if wanted else 0, key=key,
                          help="Models already scored on this benchmark (score more on the Overview page).")
    if url_key:
        if choice == "(none)":
            st.query_params.pop(url_key, None)
        else:
            set_model_param(choice, url_key)
    return None if choice == "(none)" else choice


def run_picker(score_key: str, compare_key: str, compare_url_key: str | None = None
               ) -> tuple[str, str, pd.Series, str | None]:
    """The header of the pages that browse one cached run: benchmark, model (those scored first) and an
    optional second model to compare, in three columns. Stops the page (offering "Score now") when the
    model is not scored on the benchmark. Returns ``(benchmark, model, run, compare or None)``."""
    top = st.columns(3)
    with top[0]:
        benchmark = benchmark_selector()
    if benchmark is None:
        st.stop()
    scored = scored_models(benchmark)
    with top[1]:
        model = model_selector(key="model", options=scored or None)
    set_model_param(model)
    run = require_run(model, benchmark, key=score_key)
    with top[2]:
        compare = compare_selector([m for m in scored if m != model], key=compare_key, url_key=compare_url_key)
    return benchmark, model, run, compare


def run_frame(model: str, benchmark: str) -> pd.DataFrame | None:
    """The attribution frame of ``model`` on ``benchmark`` from the cache, or None when not scored yet."""
    run = best_run(model, benchmark)
    if run is None:
        return None
    return verified_run(model, benchmark, run)


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
                     watch: "run_watch.Watched | None" = None) -> T | None:
    """The one "Score now" widget: a button that, when pressed, runs ``compute(progress)`` through
    :func:`run_with_progress`. Returns what ``compute`` returned, or None (not pressed, or failed). In a read-only
    snapshot there is no button, only a line saying why. With ``watch`` (the result the button computes): while
    a run of it is announced, its state and progress instead of the button (:func:`views.run_watch.follow`), and
    under the button a light watch that redraws the page when a run starts or the result is stored elsewhere."""
    if read_only_notice(label):
        return None
    if watch is not None and run_watch.follow(watch):
        return None
    if not st.button(label, key=key, type="primary"):
        if watch is not None:
            run_watch.keep_watching(watch)
        return None
    return run_with_progress(text, compute, errors)


def attribution_watch(model: str, benchmark: str) -> "run_watch.Watched":
    """The whole-benchmark attribution run of ``model`` on ``benchmark`` as the pages watch it
    (:mod:`views.run_watch`)."""
    return run_watch.Watched("attribution", model, benchmark)


def watch_run(model: str, benchmark: str) -> bool:
    """When someone else — another person, tab, the CLI, the API or a sweep — is scoring ``model`` on the whole of
    ``benchmark`` right now (from its first second: loading or converting the model, waiting, scoring): show
    that run's state and progress, followed without anyone pressing anything, and return True
    (:func:`views.run_watch.follow`). False when no such run is going on."""
    return run_watch.follow(attribution_watch(model, benchmark), get_handle(model))


def score_now(model: str, benchmark: str, key: str) -> bool:
    """"Score now" for the attribution pages: scores ``model`` on ``benchmark`` and caches the result. While
    someone else is computing that very run, its state and progress instead (:func:`watch_run`); without a run,
    a light watch redraws the page when a run starts or the result is stored elsewhere.

    Returns True when it just finished (the caller reruns to show the new numbers).
    """
    from biascore.core.datasets import BenchmarkError
    from biascore.methods.attribution.scorer import score_benchmark

    if watch_run(model, benchmark):
        return False

    def compute(progress: ProgressBar) -> bool:
        limit_torch_threads()
        handle = get_handle(model)  # the runner loads it, after announcing the run to every page
        if not handle.loaded:
            progress.bar.progress(0.0, text=f"Loading the model (once per process), then: {progress.text}")
        score_benchmark(handle, benchmark, progress=progress, waiting=progress.waiting)
        return True

    label = model_label(model)
    done = score_now_button(f"Score now: {label} on {benchmark}", key, f"Scoring {benchmark} with {label}: pairs",
                            compute, errors=(BenchmarkError, engine_models.ModelLoadError, ValueError))
    if not done:  # a result stored elsewhere, or a run started elsewhere, redraws the page by itself
        run_watch.keep_watching(attribution_watch(model, benchmark), get_handle(model))
    return bool(done)


def live_pair(model: str, sent_more: str, sent_less: str, waiting: Callable[[str], None] | None = None) -> dict:
    """One typed pair scored by the engine's live queue (:mod:`biascore.methods.attribution.live`): pairs that
    people send at the same moment share forward passes, and recent pairs are remembered. ``waiting(state)``
    hears what the request waits for (queue, round) while it waits. The row is shared: read-only."""
    from biascore.methods.attribution.live import score_live

    lm = get_model(model)
    limit_torch_threads()
    return score_live(lm, sent_more, sent_less, waiting=waiting)


@st.cache_data(show_spinner=False, max_entries=64)
def summary(path: str, benchmark: str, mtime: float, metric: str) -> pd.DataFrame:
    """The engine's :func:`summarize` (n, score, 95% Wilson interval) for one cached run."""
    from biascore.methods.attribution.scorer import summarize

    return summarize(run_result_frame(path, benchmark, mtime), metric)


def verdict_text(sjsd: float) -> str:
    """The pair's verdict in words (S_JSD < 0: the model prefers the more-biased sentence)."""
    if sjsd != sjsd:  # NaN
        return "not scored"
    return "biased — prefers the more-biased sentence" if sjsd < 0 else "not biased — prefers the less-biased sentence"
