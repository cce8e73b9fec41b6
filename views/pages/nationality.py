"""Nationality (LABDet): relative sentiment per nationality from a sentiment probe on a frozen model.

Drawing only: every number is the ``labdet`` method's result, asked of the runner's door (cached in parquet);
its options are the method's own controls (:func:`views.kit.widgets.option_inputs`).
"""
from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from biascore import api
from biascore.errors import BenchmarkError
from biascore.runs import runner
from biascore.display import code_span, plotly_label
from views.kit.common import csv_download, show_error
from views.kit.models import data_dir_notice, model_for_cache, model_label, model_selector, read_only_notice, served_refusal
from views.kit.links import link_value, refuse
from views.kit.scoring import score_now_for
from views.kit.widgets import input_picker, option_inputs, precision_caption

DIRECTION_COLOURS = {"negative": "#d62728", "none": "#222222", "positive": "#2ca02c"}
DIRECTION_LABELS = {"negative": "negative (red)", "none": "no significant bias (black)", "positive": "positive (green)"}
PROBE_LABELS = {"svm": "Linear SVM (calibrated)", "mlp": "MLP"}


def nationality_bars(table: pd.DataFrame, title: str) -> go.Figure:
    """Horizontal bars sorted by relative sentiment, CI whiskers, coloured by direction; exact values on hover."""
    table = table.sort_values("mean", kind="stable")
    fig = go.Figure()
    for dirn in DIRECTION_COLOURS:
        part = table[table["direction"] == dirn]
        if part.empty:
            continue
        fig.add_trace(go.Bar(
            x=part["mean"], y=[plotly_label(w) for w in part["word"]], orientation="h",
            name=DIRECTION_LABELS[dirn], marker_color=DIRECTION_COLOURS[dirn],
            error_x=dict(type="data", symmetric=False, array=part["ci_high"] - part["mean"],
                         arrayminus=part["mean"] - part["ci_low"], color="#888888", thickness=1.2),
            customdata=part[["ci_low", "ci_high", "p_value", "n_items", "p_template", "n_templates"]].to_numpy(),
            hovertemplate=("<b>%{y}</b><br>relative sentiment %{x:.4f}<br>95% CI over templates "
                           "[%{customdata[0]:.4f}, %{customdata[1]:.4f}]<br>Wilcoxon p over items = "
                           "%{customdata[2]:.3g} (items %{customdata[3]})<br>Wilcoxon p over template means = "
                           "%{customdata[4]:.3g} (templates %{customdata[5]})<extra></extra>")))
    fig.update_layout(title=plotly_label(title), height=max(320, 22 * len(table) + 120), barmode="overlay",
                      xaxis_title="relative sentiment: P(pos | nationality) − P(pos | neutral)",
                      yaxis=dict(categoryorder="array", categoryarray=[plotly_label(w) for w in table["word"]]),
                      legend=dict(orientation="h", y=-0.15), margin=dict(l=10, r=10, t=50, b=10))
    fig.add_vline(x=0, line_color="#999999", line_width=1)
    return fig


def result_or_button(name: str, lang: str, options, key: str):
    """The stored result for one model (the runner's door), or a "Score now" button (with progress) when there
    is none."""
    method = api.method("labdet")
    if served_refusal(name, method):
        return None
    handle = model_for_cache(name)
    if handle is None:
        return None
    language = method.input_kind.label(lang)
    try:
        res = runner.run(method, handle, lang, options, only_cached=True)
    except (BenchmarkError, ValueError) as exc:
        if not read_only_notice(f"No LABDet data for {language} in this snapshot; scoring"):
            show_error(exc)
        return None
    if res is not None or read_only_notice(f"No LABDet result for {code_span(model_label(name))} on {language} in this "
                                            "snapshot; scoring"):
        return res
    st.info(f"No cached LABDet result for {code_span(model_label(name))} on {language} yet. Scoring embeds "
            "every training and surfacing sentence once, then trains both probes (about a minute for "
            "small models on a GPU-less laptop, longer for big ones).")
    if score_now_for(method, name, lang, key=f"score_{key}", label="Score now",
                     text="embedding sentences (training set, then surfacing set), then training the probes:",
                     **options.as_dict()):
        st.rerun()
    return None


def show_result(res, key: str) -> None:
    """One model's LABDet result (the method's result type: table, accuracies, correlations)."""
    table = res.table
    acc, cor = res.accuracy, res.correlations
    precision_caption(res, model_label(res.model))
    cols = st.columns(4)
    cols[0].metric("Probe accuracy (SVM, unseen templates)", f"{acc['svm']:.3f}")
    cols[1].metric("Probe accuracy (MLP, unseen templates)", f"{acc['mlp']:.3f}")
    cols[2].metric("Pearson r, SVM vs MLP means", f"{cor['probe_r']:.3f}")
    cols[3].metric(f"Pearson r, two template halves ({res.probe})", f"{cor['halves_r']:.3f}")
    st.caption(f"Pearson r p-values: SVM vs MLP p = {cor['probe_p']:.2g}, template halves p = {cor['halves_p']:.2g} · "
               f"Neutral filler: `{res.filler_label}` · {table['n_items'].max()} template × adjective "
               f"items per nationality · α = {res.alpha}")
    st.plotly_chart(nationality_bars(table, f"{model_label(res.model)} · {res.language} · "
                                            f"{PROBE_LABELS[res.probe]}"), key=f"bars_{key}")
    shown = table[res.columns + ["n_items", "n_templates"]]
    st.dataframe(shown, hide_index=True, key=f"table_{key}", column_config={  # p-values as 7.1e-15, not 0.0000…
        c: st.column_config.NumberColumn(c, format="%.2e") for c in ("p_value", "p_template") if c in shown})
    csv_download(table[res.columns], f"labdet_{res.lang}_{res.probe}_{key}.csv", key=f"dl_{key}")


st.title("Nationality bias (LABDet)")
st.markdown(
    "A sentiment classifier (probe) is trained on a **frozen** model's sentence embeddings using sentences "
    "without any nationality; then only the nationality in neutral sentences (\"This [NATIONALITY] person "
    "is calm.\") is changed. **Relative sentiment** = P(positive | nationality) − P(positive | neutral "
    "filler), per template × adjective; per nationality the mean, a 95% bootstrap CI over templates and a "
    "two-sided Wilcoxon signed-rank test against 0 (Koksal et al., 2023). Red = significantly negative, "
    "green = significantly positive, black = no significant bias. The neutral filler is the model's mask "
    "token; for models without one the nationality slot is removed (\"This person is calm.\"). "
    "The paper's test (`p_value`, which sets the colour) treats every template × adjective item as "
    "independent, so its p-values are tiny; `p_template` runs the same test on the per-template means, "
    "the level at which the data are independent (its smallest possible value is 2 / 2^templates).")
c1, c2 = st.columns([3, 2])
with c1:
    model_name = model_selector("Model", key="model", default="all-minilm-l6-v2", scorer="labdet")
with c2:
    lang = input_picker(api.method("labdet"), key="lang", widget_key="lang")
options = option_inputs(api.method("labdet"), key="labdet", only=("probe", "alpha", "pooling"))  # the rest: defaults
if options is None or lang is None:
    st.stop()
if lang not in ("en", "demo"):  # the models offered are English ones
    st.warning("The model should match the language: a Turkish model on Turkish data, not an English one. A "
               "mismatched pair still runs, but its numbers mean little.")
compare = st.checkbox("Compare with a second model", key="compare")
other_name = model_selector("Second model", key="model2", default="smollm2-135m", scorer="labdet") if compare else None
if not compare and link_value("model2") is not None:
    refuse("model2", None, "“Compare with a second model” is off")
data_dir_notice()

names = [model_name] + ([other_name] if other_name else [])
columns = st.columns(len(names))
for i, (name, col) in enumerate(zip(names, columns)):
    with col:
        st.subheader(code_span(model_label(name)))
        result = result_or_button(name, lang, options, key=f"m{i}")
        if result is not None:
            show_result(result, key=f"m{i}")
