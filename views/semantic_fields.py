"""Semantic fields: which USAS fields hold the words that push a model toward bias (the paper's Table 6).

Draws only: tagging, alignment and the ↑/∘/↓ table come from :mod:`biascore.methods.fields.scorer`.
URL parameters ``model`` and ``benchmark`` preselect the view.
"""
from __future__ import annotations


import altair as alt
import pandas as pd
import streamlit as st

from biascore.methods.fields import tagging as semantic_tagging
from biascore.core.datasets import BenchmarkError, load_benchmark
from biascore.methods.fields import scorer as fields
from biascore.core.display import code_span
from biascore.core.models import ModelLoadError
from views.common import (active_snapshot, attribution_watch, benchmark_selector, csv_download, data_dir_notice,
                          get_handle, model_label, model_selector, offered_models, score_now_button,
                          set_model_param, show_error, token_page_link, watch_run)

DIRECTIONS = {"up_pct": "↑ bias (b < 0)", "zero_pct": "∘ (b = 0)", "down_pct": "↓ bias (b > 0)"}
COLOURS = ["#d62728", "#bdbdbd", "#1f77b4"]
SENSE_LABELS = {"top": "tagger's first-ranked tag", "all": "every candidate tag (as the paper's script)"}


def scored_elsewhere(model: str, benchmark) -> list[str]:
    """Offered local/embedded models (a snapshot's models) other than ``model`` already scored on ``benchmark``
    (no model load)."""
    snap = active_snapshot()
    names = snap.model_names("attribution") if snap else offered_models()
    return [other for other in names if other != model and fields.is_scored(get_handle(other), benchmark)]


def result_for(model: str, benchmark, senses: str) -> fields.FieldsResult:
    return fields_result(model, benchmark.name, benchmark.content_hash, senses)


@st.cache_data(show_spinner="Tagging words with USAS (the tagger takes a few seconds to build once)…",
               max_entries=32)
def fields_result(model: str, benchmark: str, content_hash: str, senses: str) -> fields.FieldsResult:
    """The engine's fields result for a model already scored on ``benchmark`` (read from the cache)."""
    return fields.score_fields(get_handle(model), benchmark, min_count=1, top=None, senses=senses)


def bar_chart(table: pd.DataFrame) -> alt.Chart:
    long = table.melt(id_vars=["field", "n"], value_vars=list(DIRECTIONS), var_name="direction", value_name="pct")
    long["direction"] = long["direction"].map(DIRECTIONS)
    long["order"] = long["direction"].map({v: i for i, v in enumerate(DIRECTIONS.values())})
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("field:N", sort=list(table["field"]), title=None),
        x=alt.X("pct:Q", stack="zero", title="% of the field's words", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("direction:N", sort=list(DIRECTIONS.values()),
                        scale=alt.Scale(domain=list(DIRECTIONS.values()), range=COLOURS), title=None),
        order=alt.Order("order:Q"),
        tooltip=["field", "n", "direction", alt.Tooltip("pct:Q", format=".2f")],
    ).properties(height=max(160, 28 * len(table)))


st.title("Semantic fields")
st.caption("Every scored word of the more-biased sentence is tagged with its USAS semantic field (pymusas "
           "rule-based tagger). Per field: **↑** share of words with b < 0 (pushed the model toward the "
           "more-biased sentence), **∘** b = 0 exactly (e.g. words before the first modified token in a "
           "causal model), **↓** b > 0. As in the bias-attribution paper's Table 6.")
data_dir_notice()

c1, c2, c3 = st.columns([1, 1, 1])
with c1:
    model = model_selector(scorer="attribution")
with c2:
    bench_name = benchmark_selector(default="crows-en-gso")
if bench_name is None:
    st.stop()
with c3:
    senses = st.radio("Tags per word", list(SENSE_LABELS), format_func=SENSE_LABELS.get, key="sf_senses",
                      index=list(SENSE_LABELS).index(fields.DEFAULT_SENSES),
                      help="A tag like S3.2/S2.1f counts in both fields either way.")
set_model_param(model)

try:
    bench = load_benchmark(bench_name)
except BenchmarkError as exc:
    show_error(exc)
    st.stop()

no_lexicon = fields.lexicon_coverage(bench)
if sum(no_lexicon.values()) == len(bench.frame):
    lang = next(iter(no_lexicon))
    st.info(f"{semantic_tagging.NoLexiconError(lang)}. USAS has no "
            f"{semantic_tagging.LANGUAGE_NAMES.get(lang, lang)} lexicon, so this page cannot show semantic fields "
            f"for **{bench_name}**. The Token attributions page still shows its per-word scores.")
    st.stop()
for lang, n in no_lexicon.items():
    st.caption(f"{n} {semantic_tagging.LANGUAGE_NAMES.get(lang, lang)} pair(s) of {bench_name} are left out: "
               "USAS has no lexicon for that language.")

if not fields.is_scored(get_handle(model), bench):
    if watch_run(model, bench_name):  # someone is scoring it right now: the page follows that run
        st.stop()
    st.info(f"{code_span(model_label(model))} has not been scored on {bench_name} yet ({len(bench.frame)} pairs).")

    def score(progress):  # the runner loads the model, after announcing the run to every page
        return fields.score_fields(get_handle(model), bench, progress=progress)

    if score_now_button(f"Score {code_span(model_label(model))} on {bench_name} now", "sf_score", "Scoring: pairs", score,
                        errors=(ValueError, ModelLoadError), watch=attribution_watch(model, bench_name)) is not None:
        st.rerun()
    st.stop()
try:
    result = result_for(model, bench, senses)
except (FileNotFoundError, ModuleNotFoundError) as exc:  # lexicon files or the spaCy model are missing
    show_error(exc)
    st.stop()

s1, s2 = st.columns([2, 1])
min_count = s1.slider("Leave out fields with fewer words than", 1, 100, 30, key="sf_min_count",
                      help="The paper used 30 (about 1% of its words).")
top = s2.number_input("Fields shown (by ↑ share)", 1, 200, 10, key="sf_top")
table = fields.field_table(result.words, min_count=min_count, top=int(top))
n_words = result.words.drop_duplicates(["pair_id", "word_index"]).shape[0]
st.caption(f"{n_words:,} tagged words in {result.words['pair_id'].nunique():,} pairs · "
           f"{len(table)} field(s) shown with n ≥ {min_count}")
if table.empty:
    st.warning("No field reaches the threshold; lower it with the slider.")
    st.stop()

left, right = st.columns([1, 1])
with left:
    st.dataframe(table, hide_index=True, key="sf_table", column_config={
        "up_pct": st.column_config.NumberColumn("↑ bias %", format="%.2f"),
        "zero_pct": st.column_config.NumberColumn("∘ %", format="%.2f"),
        "down_pct": st.column_config.NumberColumn("↓ bias %", format="%.2f")})
with right:
    st.altair_chart(bar_chart(table), width="stretch")

compare = st.multiselect("Side by side with (models already scored on this benchmark)",
                         scored_elsewhere(model, bench), key="sf_compare")
tables = {model: table}
for other in compare:
    other_words = result_for(other, bench, senses).words
    tables[other] = fields.field_table(other_words, min_count=min_count, top=int(top))
if compare:
    wide = fields.side_by_side(tables)
    wide.columns = [f"{m} · {c}" for m, c in wide.columns]
    st.dataframe(wide, key="sf_side_by_side")
csv_download(pd.concat([t.assign(model=m, benchmark=bench_name) for m, t in tables.items()], ignore_index=True),
             f"semantic_fields_{'_'.join(tables)}_{bench_name}.csv".replace("/", "_"), key="sf_csv")

st.subheader("Words of a field")
chosen = st.selectbox("Field", list(table["field"]), key="sf_field")
words = fields.field_words(result.words, chosen)
wcol, scol = st.columns([1, 2])
with wcol:
    st.dataframe(words, hide_index=True, key="sf_words", column_config={
        "mean_b": st.column_config.NumberColumn("mean b", format="%.5f"),
        "up_pct": st.column_config.NumberColumn("↑ %", format="%.1f")})
with scol:
    word = st.selectbox("Sentences of", ["(all words)"] + list(words["word"]), key="sf_word")
    sentences = fields.field_sentences(result.words, chosen, None if word == "(all words)" else word)
    sentences["open"] = [token_page_link(bench_name, model, p) for p in sentences["pair_id"]]
    st.dataframe(sentences, hide_index=True, key="sf_sentences", column_config={
        "b": st.column_config.NumberColumn("b", format="%.5f"),
        "open": st.column_config.LinkColumn("token heatmap", display_text="open ↗")})
