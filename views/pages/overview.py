"""Overview: B per bias type and overall for every scored model × benchmark (Table-3 style), with n, the
95% Wilson score interval and the PLL bias score beside it, the lm-eval-compatible score of causal models, the
prefix token and the ties of each score; a bar chart with the unbiased line; two models compared pair by pair
(the engine's paired comparison); "Score now"."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from views.kit import sweep_status
from biascore.display import code_span
from biascore.errors import one_line
from biascore import api
from biascore.runs import runner
from biascore.runs.runner import UnreadableResult
from views.kit.attribution import DRAWING, b_estimates, best_run, run_label, score_now, summary
from views.kit.common import csv_download
from views.kit.drawn import draw_estimates, draw_paired_comparison
from views.kit.models import data_dir_notice, model_allowed, model_label, model_selector, model_visible, stored_notice
from views.kit.scoring import benchmark_selector
from views.kit.widgets import precision_caption

st.title("Overview")
st.caption("B = % of pairs whose S_JSD < 0 (the model prefers the more-biased sentence); **50 = unbiased**, "
           "above 50 = systematically biased. PLL = the CrowS pseudo-log-likelihood bias score on the same pairs. "
           "Brackets: 95% Wilson score interval for a proportion (binomial; scipy binomtest), for B and PLL alike. "
           "ties = pairs whose two compared scores are equal (|S_JSD| ≤ 1e-6; PLL sums equal at 3 decimals, the "
           "CrowS script's neutral; lm-eval sums within 1e-3 nats); each score counts them by its own strict "
           "inequality, so an exact tie counts as not biased. prefix = the token a causal model gets in front of each sentence "
           "(published-code convention for B and PLL).")
st.caption(DRAWING.lmeval_caption + " Masked LMs: lm-eval has no such task — their column stays empty; quote the PLL "
           "score. Causal models: `python -m biascore score --metric lmeval` computes it (lm-eval's prefix).")
data_dir_notice()
sweep_status.show()


def _lmeval_part(lm_runs: pd.DataFrame, model: str, benchmark: str, weights: str = "") -> pd.DataFrame | None:
    """The lm-eval-compatible columns of one model × benchmark (None when no run with lm-eval's prefix)."""
    hit = lm_runs[(lm_runs.model == model) & (lm_runs.benchmark == benchmark) & (lm_runs.weights == weights)]
    if hit.empty:
        return None
    run = hit.iloc[0]
    try:
        table = summary(run, "lmeval")
    except DRAWING.LmevalUnavailable:  # a run cached before whole-sentence log-likelihoods were stored
        return None
    out = table[["bias_type", "pct_stereotype", "pct_stereotype_stderr", "ties"]].rename(
        columns={"pct_stereotype": "lm-eval pct_stereotype", "pct_stereotype_stderr": "lm-eval stderr",
                 "ties": "lm-eval ties"})
    out["lm-eval prefix"] = f"{run.prefix_token} (id {int(run.prefix_token_id)})"
    return out


def summary_grid(runs: pd.DataFrame, lm_runs: pd.DataFrame) -> pd.DataFrame:
    """Long table: one row per model × benchmark × bias type with B, its CI, n and ties, the PLL score and its ties,
    the prefix token, and (causal models) the lm-eval-compatible score with its standard error and ties."""
    parts = []
    for run in runs.itertuples(index=False):
        try:
            attr = summary(run, "attribution")
            pll = summary(run, "pll")
            lmeval = _lmeval_part(lm_runs, run.model, run.benchmark, run.weights)
        except UnreadableResult as exc:  # one line on the page, never a traceback
            st.error(f"{code_span(model_label(run.model))} on {run.benchmark}: {one_line(exc)}")
            continue
        part = attr.rename(columns={"score": "B", "ci_low": "B_ci_low", "ci_high": "B_ci_high", "ties": "B ties"})
        part = part.merge(pll[["bias_type", "score", "ci_low", "ci_high", "ties"]].rename(
            columns={"score": "PLL", "ci_low": "PLL_ci_low", "ci_high": "PLL_ci_high", "ties": "PLL ties"}),
            on="bias_type", how="left")
        part["prefix"] = (f"{run.prefix_token} (id {int(run.prefix_token_id)})" if int(run.prefix_token_id) >= 0
                          else run.prefix_token or "none (masked LM)")
        if lmeval is not None:
            part = part.merge(lmeval, on="bias_type", how="left")
        else:
            part["lm-eval pct_stereotype"] = float("nan")
            part["lm-eval prefix"] = ("no such task for masked LMs" if run.model_kind == "masked"
                                      else "not scored (--metric lmeval)")
        part.insert(0, "benchmark", run.benchmark)
        # a quantized model is a row of its own, named with its weights (never mixed into the full-weight row)
        part.insert(0, "model", run_label(run))
        part.insert(2, "precision", api.precision_of(run).label)
        part["complete"] = bool(run.complete)
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


runs = DRAWING.best_runs(DRAWING.cached_runs())
runs = runs[runs.model.map(model_visible).astype(bool)]  # public mode: the allow-list, and no model named by a path
if runs.empty:
    st.info("Nothing scored yet. Pick a model and a benchmark below and press **Score now** "
            "(or run `python -m biascore score --benchmark demo`).")
grid = pd.DataFrame() if runs.empty else summary_grid(runs, DRAWING.lmeval_runs(DRAWING.cached_runs()))
if not grid.empty:
    wide = grid.pivot_table(index=["model", "benchmark"], columns="bias_type", values="B", sort=False)
    order = ["all"] + sorted(c for c in wide.columns if c != "all")
    st.subheader("B by bias type (Table 3 layout)")
    st.dataframe(wide[order].reset_index(), hide_index=True, key="overview_wide",
                 column_config={c: st.column_config.NumberColumn(c, format="%.2f") for c in order})
    partial = grid[~grid.complete][["model", "benchmark"]].drop_duplicates()
    for _, run in runs.iterrows():  # every row that is not exact says so (quantized, bf16/fp16, served)
        precision_caption(run, f"{run_label(run)} on {run.benchmark}")
    for row in partial.itertuples(index=False):
        st.caption(f"⚠️ {code_span(row.model)} on {code_span(row.benchmark)}: only part of the benchmark was scored "
                   "(a `--limit` run).")
    st.subheader("Details: n, 95% CI, PLL bias score, lm-eval-compatible score, prefix token, ties")
    fmt = st.column_config.NumberColumn(format="%.2f")
    st.dataframe(grid.drop(columns=["complete"]), hide_index=True, key="overview_long",
                 column_config={c: fmt for c in ["B", "B_ci_low", "B_ci_high", "PLL", "PLL_ci_low", "PLL_ci_high",
                                                 "lm-eval pct_stereotype", "lm-eval stderr"]})
    csv_download(grid, "bias_scores_overview.csv", key="overview_csv")
    draw_estimates(b_estimates(grid.rename(columns={"B": "score", "B_ci_low": "ci_low", "B_ci_high": "ci_high"})),
                   key="overview_chart")


def model_comparison(runs: pd.DataFrame) -> None:
    """Two models scored on one benchmark, compared on the same pairs: B − A (and PLL) with the paired
    bootstrap interval, McNemar's exact test, Holm across bias types, the mean paired S_JSD difference. A
    quantized model is a choice of its own (its row's name), so a model can be compared with its quantized self;
    the side that is not exact is named."""
    st.subheader("Compare two models on the same pairs (paired)")
    runs = runs[runs.model.map(model_allowed).astype(bool)]  # public mode: pickers offer the allow-list only
    runs = runs.assign(shown=[run_label(run) for _, run in runs.iterrows()])
    shared = runs.groupby("benchmark").shown.nunique()
    benchmarks = sorted(shared[shared >= 2].index)
    if not benchmarks:
        st.caption("Score a second model on a benchmark to compare two models pair by pair.")
        return
    c0, c1, c2 = st.columns(3)
    benchmark = c0.selectbox("Benchmark", benchmarks, key="ov_cmp_benchmark")
    on = runs[runs.benchmark == benchmark]
    models = on.shown.tolist()
    model_a = c1.selectbox("Model A", models, key="ov_cmp_a")
    model_b = c2.selectbox("Model B", [m for m in models if m != model_a], key="ov_cmp_b")
    run_a, run_b = on[on.shown == model_a].iloc[0], on[on.shown == model_b].iloc[0]
    prefix = None if run_b.published_prefix else "lmeval" if run_b.lmeval_prefix else run_b.prefix_conventions
    try:  # the engine's comparison through the runner: stored, shared by every viewer
        with st.spinner("Comparing the two models pair by pair…"):
            result = runner.run_on_stored(api.method("attribution-paired"), run_b.entry, against=run_a.entry.digest,
                                          prefix=prefix.split(",")[0] if prefix else None)
    except (UnreadableResult, ValueError) as exc:  # one line on the page, never a traceback
        st.error(f"Cannot compare them: {one_line(exc)}")
        return
    table, how, notes = result.frame, result.conventions["method_line"], result.conventions["notes"]
    for name in sorted({run_a.model, run_b.model}, key=len, reverse=True):  # public mode: a path by its folder name
        how, notes = how.replace(name, model_label(name)), [n.replace(name, model_label(name)) for n in notes]
    draw_paired_comparison(api.PairedComparison(
        table, how, tuple(notes), caption="delta = B − A in % points; ci = 95% paired bootstrap interval (pairs "
        "resampled jointly); McNemar's exact test on the pairs whose verdicts differ (a tie counts as its score counts "
        "it); mcnemar_p_holm: Holm-adjusted across the bias types. pll_…: the same for the PLL score; sjsd_…: the "
        "mean paired S_JSD difference."), key="overview_compare")

if not runs.empty:
    model_comparison(runs)

st.subheader("Score a model on a benchmark")
c1, c2 = st.columns(2)
with c1:
    model = model_selector(key="model")
with c2:
    benchmark = benchmark_selector()
if benchmark:
    run = best_run(model, benchmark)
    if run is not None and bool(run.complete):
        st.success(f"{code_span(model_label(model))} on {benchmark} is scored ({int(run.n_pairs)} pairs) and shown above.")
        stored_notice(model)
    else:
        st.caption("Scoring runs the model on every pair and caches the result; an interrupted run resumes.")
        if score_now(model, benchmark, key="overview_score_now"):
            st.rerun()
