"""The attribution pages' kit (Overview, Token attributions, Words, Try a pair, Translation review): the cached
runs of the ``attribution`` method and what is drawn from one, all asked of the runner's door
(:mod:`biascore.runs.runner`, which remembers its reads by the stored version): the page keeps no memo."""
from __future__ import annotations

import contextlib
import os
import threading
import urllib.parse
from typing import Callable, Mapping

import pandas as pd
import streamlit as st
import torch

from biascore import api, settings
from biascore.runs import runner
from biascore.display import code_span, markdown_literal
from biascore.errors import ModelLoadError, one_line
from views.kit.common import literal
from views.kit.drawn import Level, draw_ranked_units, draw_token_salience
from views.kit.links import keep, link_choice
from views.kit.models import (get_handle, model_label, model_selector, served, served_labels, served_last_seen,
                          stored_notice)
from views.kit.scoring import benchmark_selector, score_now_for, watch_computing
from views.kit.widgets import precision_caption

#: the attribution method and its drawing helpers (its cached runs, token units, tie labels, live queue)
METHOD = api.method("attribution")
DRAWING = METHOD.drawing
#: torch's own thread count in this process (the machine's cores), before the dashboard sets its own
TORCH_THREADS = torch.get_num_threads()


def limit_torch_threads() -> None:
    """Use ``BIASCORE_TORCH_THREADS`` torch threads (default 1) in the dashboard process (docs/operating.md: one
    live pair is small matrix products, and a second thread mostly waits for the first)."""
    n = int(os.environ.get("BIASCORE_TORCH_THREADS", "1"))
    if n > 0 and torch.get_num_threads() != n:  # asked first: a thread's first question sets its count to the default
        torch.set_num_threads(n)


@contextlib.contextmanager
def benchmark_threads():
    """A benchmark's "Score now" on the machine's cores while no live pair was scored in the last minute, else on the
    setting, in this thread only (docs/operating.md; no cache key, docs/reproducibility.md's bound)."""
    limit_torch_threads()
    setting = torch.get_num_threads()
    if TORCH_THREADS > setting and not DRAWING.live_busy():
        torch.set_num_threads(TORCH_THREADS)  # this thread's count; torch makes it every new thread's default too …
        restore = threading.Thread(target=torch.set_num_threads, args=(setting,))
        restore.start()  # … so another thread puts the default back (a thread's own count stays its own)
        restore.join()
    try:
        yield
    finally:
        limit_torch_threads()


def best_run(model: str, benchmark: str) -> pd.Series | None:
    """The cached run to show for ``model`` on ``benchmark``, or None. A served model's are those under the name and
    fingerprint measured on its server now (while it is down: what it last said it serves)."""
    name, fingerprint = model, None
    if served(model):
        try:
            ident = get_handle(model).load().identity()
            name, fingerprint = ident.name, ident.fingerprint
        except ModelLoadError as exc:
            seen = served_last_seen(model) if isinstance(exc, api.ServedUnavailable) else None
            if seen is None:
                return None
            name, fingerprint = seen
    runs = DRAWING.cached_runs()
    if fingerprint is not None:
        runs = runs[runs.model_fingerprint == fingerprint]
    runs = DRAWING.best_runs(runs)
    hit = runs[(runs.model == name) & (runs.benchmark == benchmark)]
    hit = hit[hit.entry.map(lambda e: e.path.exists())]  # a damaged file found earlier in this run has been removed
    return hit.iloc[0] if len(hit) else None


def pair_table(run: pd.Series) -> pd.DataFrame:
    """The browsing table (no list columns) of one cached run (read-only)."""
    return runner.drawn(METHOD, run.entry, _frame_table)


def _frame_table(result) -> pd.DataFrame:  # one function, not a lambda per call: runner.drawn remembers by it
    return DRAWING.pair_table(result.frame)


def summary(run: pd.Series, metric: str) -> pd.DataFrame:
    """The method's summary (n, score, 95% Wilson interval per bias type) of one cached run for ``metric``."""
    return runner.drawn(METHOD, run.entry, METHOD.summary, metric=metric)


def word_occurrences(run: pd.Series) -> pd.DataFrame:
    """The ``words`` method's occurrences of one cached run (computed from it, itself cached as parquet)."""
    with st.spinner("Collecting the words of every pair…"):
        return runner.run_on_stored(api.method("words"), run.entry).frame


def verified_run(model: str, benchmark: str, run: pd.Series) -> pd.DataFrame | None:
    """The attribution frame of a cached ``run`` (shared: read-only), or None after a one-line error on the page
    when the file fails verification (it has then been removed, so "Score now" computes it again) or is stale."""
    try:
        with st.spinner("Reading cached scores…"):  # shown only when it takes longer than half a second
            return DRAWING.load_run(run.entry)
    except runner.UnreadableResult as exc:
        st.error(f"{code_span(model_label(model))} on {benchmark}: {one_line(exc)}")
        return None


def token_page_link(benchmark: str, model: str, pair_id: int) -> str:
    """A link to one pair on the Token attributions page (for a st.column_config.LinkColumn)."""
    return "/token_attributions?" + urllib.parse.urlencode({"benchmark": benchmark, "model": model_label(model),
                                                           "pair": int(pair_id)})


def scored_models(benchmark: str) -> list[str]:
    """Models with a usable (not stale) cached attribution run on ``benchmark`` (in public mode only the
    allowed ones; a served model this process is connected to by its label)."""
    runs = DRAWING.cached_runs()
    labels = served_labels()  # a connected served model's runs are offered under the settings' label
    names = [labels.get(m, m) for m in runs[(runs.benchmark == benchmark) & ~runs.stale.astype(bool)].model.unique()]
    return [m for m in sorted(set(names)) if not settings.public_mode() or m in settings.allowed_models()]


def score_now(model: str, benchmark: str, key: str, keep_watching: bool = True) -> bool:
    """"Score now" for the attribution pages (the one door: :func:`views.kit.scoring.score_now_for`); True when it
    just finished (the caller reruns to show the new numbers)."""
    return score_now_for(METHOD, model, benchmark, key=key, label=f"Score now: {model_label(model)} on {benchmark}",
                         text=f"Scoring {benchmark} with {model_label(model)}: pairs", around=benchmark_threads,
                         keep_watching=keep_watching)


def require_run(model: str, benchmark: str, key: str) -> pd.Series:
    """The cached run of ``model`` on ``benchmark``; when there is none, follow the run in progress of it, or say
    so and offer "Score now", and stop the page (it reruns when a run finishes or the result is stored)."""
    run = best_run(model, benchmark)
    if run is None:
        if watch_computing(METHOD, model, benchmark):  # someone is scoring it: the page follows
            st.stop()
        st.info(f"{code_span(model_label(model))} has not been scored on {benchmark} yet.")
        if score_now(model, benchmark, key=key):
            st.rerun()
        st.stop()
    stored_notice(model)
    return run


def compare_selector(others: list[str], key: str, url_key: str | None = None) -> str | None:
    """A "compare with a second model" box over ``others`` (models scored on the same benchmark); None for
    none. With ``url_key`` the choice is read from and written to that URL parameter."""
    options = ["(none)"] + others
    wanted = link_choice(url_key, others, None, noun="models scored on this benchmark", label=model_label) \
        if url_key else None
    choice = st.selectbox("Compare with a second model", options, format_func=model_label,
                          index=options.index(wanted) if wanted else 0, key=key,
                          help="Models already scored on this benchmark (score more on the Overview page).")
    if url_key:
        keep(url_key, None if choice == "(none)" else model_label(choice))
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
    keep("model", model_label(model))
    run = require_run(model, benchmark, key=score_key)
    with top[2]:
        compare = compare_selector([m for m in scored if m != model], key=compare_key, url_key=compare_url_key)
    precision_caption(run, run_label(run))  # labelled when not exact (quantized, bf16/fp16, served)
    other = None if compare is None else best_run(compare, benchmark)
    if other is not None:
        precision_caption(other, run_label(other))
    return benchmark, model, run, compare


def b_estimates(grid: pd.DataFrame) -> api.Estimates:
    """B per bias type with its 95 % Wilson interval for each model × benchmark of ``grid`` (columns model,
    benchmark, bias_type, score, ci_low, ci_high), against the unbiased line at 50."""
    frame = pd.DataFrame({"series": grid.model.astype(str) + " · " + grid.benchmark.astype(str),
                          "group": grid.bias_type, "estimate": grid.score, "low": grid.ci_low, "high": grid.ci_high})
    return api.Estimates(frame, axis="B (% of pairs biased)", reference=50, reference_label="50 = unbiased",
                         range=(0, 100))


def run_label(run) -> str:
    """A cached run's model as the pages name it: a quantized model is a model of its own, named with its
    weights as a sweep names it (``smollm2-135m (int8 weights)``: :func:`biascore.api.variant_label`)."""
    return api.variant_label(model_label(run.model), run.weights or None)


def live_pair(model: str, sent_more: str, sent_less: str, waiting: Callable[[str], None] | None = None,
              timing: dict | None = None) -> dict:
    """One typed pair scored by the engine's live queue (:mod:`biascore.methods.attribution.live`); ``waiting`` and
    ``timing`` as :meth:`~biascore.methods.attribution.live.LiveQueue.score` takes them. The row is read-only."""
    lm = get_handle(model).load()  # loaded by the page first (views.kit.models.model_or_error)
    limit_torch_threads()
    return DRAWING.score_live(lm, sent_more, sent_less, waiting=waiting, timing=timing)


def pair_limit(rows: list[Mapping], level: Level) -> float:
    """One symmetric colour limit for several pairs (e.g. two models), so their colours compare."""
    return max([DRAWING.salience(r).limit(level) for r in rows if not r.get("skipped_reason")] + [1e-6])


def draw_pair(row: Mapping, *, level: Level, limit: float | None = None, key: str, heading: str = "",
              ranked: bool = True, wrap: int = 90) -> None:
    """One scored pair drawn the same way on every page: S_JSD and verdict, then its typed views (heatmap and ranked
    units); ``key`` keeps widget ids unique, ``wrap`` is characters per heatmap line."""
    if heading:
        literal(heading)  # a model name: plain text
    if row.get("skipped_reason"):
        st.warning(f"Not scored: {row['skipped_reason']}")
        return
    sjsd = float(row["sjsd"])
    c1, c2 = st.columns([1, 2])
    c1.metric("S_JSD (mean b(u))", f"{sjsd:+.5f}")
    verdict = DRAWING.verdict_text(DRAWING.verdict_label(sjsd, "attribution"), "attribution")  # |S_JSD| ≤ 1e-6: tie
    c2.markdown(f"**Verdict:** {markdown_literal(verdict)}")
    salience = DRAWING.salience(row)
    limit = salience.limit(level) if limit is None else limit
    draw_token_salience(salience, key, level=level, limit=limit, wrap=wrap)
    if ranked:
        draw_ranked_units(api.RankedUnits(salience), key, level=level, limit=limit)
