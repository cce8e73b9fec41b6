"""Semantic fields: which USAS fields hold the words that push a model toward bias (the paper's Table 6).

Draws only: the ``fields`` method's result (tagging, alignment) is asked of the runner's door; the ↑/∘/↓ table
and its drill-downs are :mod:`biascore.methods.fields.table`'s (the method's ``drawing``).
URL parameters ``model`` and ``benchmark`` preselect the view.
"""
from __future__ import annotations


import altair as alt
import pandas as pd
import streamlit as st

from biascore import api, settings
from biascore.errors import BenchmarkError
from biascore.display import code_span
from biascore.runs import runner
from views.kit.attribution import token_page_link
from views.kit.common import csv_download, show_error
from views.kit.links import keep
from views.kit.models import (active_snapshot, data_dir_notice, get_handle, model_label, model_selector, offered_models,
                              read_only_notice)
from views.kit.scoring import ProgressBar, benchmark_selector, score_now_for, watch_computing
from views.kit.widgets import option_inputs, precision_caption

#: the fields method's drawing helpers: field tables, their words and sentences, the lexicons' coverage
FIELDS = api.method("fields").drawing

DIRECTIONS = {"up_pct": "↑ bias (b < 0)", "zero_pct": "∘ (b = 0)", "down_pct": "↓ bias (b > 0)"}
COLOURS = ["#d62728", "#bdbdbd", "#1f77b4"]


def scored_elsewhere(model: str, benchmark) -> list[str]:
    """Offered local/embedded models (a snapshot's models) other than ``model`` already scored on ``benchmark``
    (no model load)."""
    snap = active_snapshot()
    names = snap.model_names("attribution") if snap else offered_models()
    return [other for other in names if other != model and runner.is_cached(api.method("attribution"), get_handle(other), benchmark)]


def result_for(model: str, benchmark, senses: str) -> pd.DataFrame:
    """The tagged words of ``model``'s ``fields`` result on ``benchmark`` (one row per word: field, b, sentence),
    its precision labelled when it is not exact (the runner reads a stored result once per version)."""
    with st.spinner("Tagging words with USAS (the tagger takes a few seconds to build once)…"):
        result = runner.run(api.method("fields"), get_handle(model), benchmark, min_count=1, top=0, senses=senses)
    precision_caption(api.precision_of(result), model_label(model))
    return result.frame


def bar_chart(table: pd.DataFrame) -> alt.Chart:
    long = table.melt(id_vars=["field", "n"], value_vars=list(DIRECTIONS), var_name="direction", value_name="pct")
    long["direction"] = long["direction"].map(DIRECTIONS)
    long["order"] = long["direction"].map({v: i for i, v in enumerate(DIRECTIONS.values())})
    return alt.Chart(long).mark_bar().encode(
        y=alt.Y("field:N", sort=list(table["field"]), title=None),
        x=alt.X("pct:Q", stack="zero", title="% of the field's words", scale=alt.Scale(domain=[0, 100])),
        color=alt.Color("direction:N", sort=list(DIRECTIONS.values()),
                        scale=alt.Scale(domain=list(DIRECTIONS.values()), range=COLOURS), title=None),
        order=alt.Order("order:Q"), tooltip=["field", "n", "direction", alt.Tooltip("pct:Q", format=".2f")],
    ).properties(height=max(160, 28 * len(table)))


def offer_lexicon_download() -> None:
    """The one line saying why the USAS lexicon is not shipped, and (not in public mode) a button that downloads
    it here, with a progress bar, its checksums verified and its licence shown (the engine's downloader)."""
    st.info("The USAS lexicon is not shipped with biascore (its licence, CC BY-NC-SA 4.0, does not allow it): "
            "download it to see semantic fields.", icon="📥")
    if settings.public_mode():
        st.caption("Ask the operator to run `python -m biascore data download --only usas` on the server "
                   "(offline: docs/operating.md).")
        return
    files = api.download.select(api.download.load_manifest(), ["usas"])
    size = sum(f.size for f in files) / 1e6
    if not st.button(f"Download the USAS lexicon ({len(files)} files, {size:.1f} MB; checksums verified)",
                     key="sf_download"):
        st.caption("Or on the command line: `python -m biascore data download --only usas`; offline, from a "
                   "mirror folder: docs/operating.md.")
        return
    outcomes = api.download.download_all(only=["usas"], progress=ProgressBar("Downloading the USAS lexicon: bytes"))
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        st.error(f"{o.path}: {o.message}")
    if failed:
        return
    st.success(f"{len(outcomes)} files downloaded, SHA-256 verified. "
               + " · ".join(api.download.licence_lines(outcomes)))
    st.button("Show the semantic fields", key="sf_after_download")


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
    sense_options = option_inputs(api.method("fields"), key="sf", only=("senses",))  # the method's own control
if sense_options is None:
    st.stop()
senses = sense_options.senses
keep("model", model_label(model))

try:
    bench = api.load_benchmark(bench_name)
except BenchmarkError as exc:
    show_error(exc)
    st.stop()

no_lexicon = FIELDS.lexicon_coverage(bench)
if sum(no_lexicon.values()) == len(bench.frame):
    lang = next(iter(no_lexicon))
    st.info(f"{FIELDS.NoLexiconError(lang)}. USAS has no "
            f"{FIELDS.language_names.get(lang, lang)} lexicon, so this page cannot show semantic fields "
            f"for **{bench_name}**. The Token attributions page still shows its per-word scores.")
    st.stop()
for lang, n in no_lexicon.items():
    st.caption(f"{n} {FIELDS.language_names.get(lang, lang)} pair(s) of {bench_name} are left out: "
               "USAS has no lexicon for that language.")

if active_snapshot() is None and FIELDS.missing_lexicon_files("en"):
    offer_lexicon_download()
    st.stop()

if not runner.is_cached(api.method("attribution"), get_handle(model), bench):
    if watch_computing(api.method("attribution"), model, bench):  # someone is scoring it right now: the page follows that run
        st.stop()
    st.info(f"{code_span(model_label(model))} has not been scored on {bench_name} yet ({len(bench.frame)} pairs).")
    if score_now_for(api.method("fields"), model, bench, key="sf_score", text="Scoring: pairs",
                     label=f"Score {code_span(model_label(model))} on {bench_name} now"):
        st.rerun()
    st.stop()
try:
    tagged = result_for(model, bench, senses)
except (FileNotFoundError, ModuleNotFoundError) as exc:  # lexicon files or the spaCy model are missing
    if not read_only_notice(f"{code_span(model_label(model))} on {bench_name} has no semantic fields in this "
                            "snapshot (nor the USAS lexicon to tag its words); tagging"):
        show_error(exc)
    st.stop()

s1, s2 = st.columns([2, 1])
min_count = s1.slider("Leave out fields with fewer words than", 1, 100, 30, key="sf_min_count",
                      help="The paper used 30 (about 1% of its words).")
top = s2.number_input("Fields shown (by ↑ share)", 1, 200, 10, key="sf_top")
table = FIELDS.field_table(tagged, min_count=min_count, top=int(top))
n_words = tagged.drop_duplicates(["pair_id", "word_index"]).shape[0]
st.caption(f"{n_words:,} tagged words in {tagged['pair_id'].nunique():,} pairs · "
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
    tables[other] = FIELDS.field_table(result_for(other, bench, senses), min_count=min_count, top=int(top))
if compare:
    wide = FIELDS.side_by_side(tables)
    wide.columns = [f"{m} · {c}" for m, c in wide.columns]
    st.dataframe(wide, key="sf_side_by_side")
csv_download(pd.concat([t.assign(model=m, benchmark=bench_name) for m, t in tables.items()], ignore_index=True),
             f"semantic_fields_{'_'.join(tables)}_{bench_name}.csv".replace("/", "_"), key="sf_csv")

st.subheader("Words of a field")
chosen = st.selectbox("Field", list(table["field"]), key="sf_field")
words = FIELDS.field_words(tagged, chosen)
wcol, scol = st.columns([1, 2])
with wcol:
    st.dataframe(words, hide_index=True, key="sf_words", column_config={
        "mean_b": st.column_config.NumberColumn("mean b", format="%.5f"),
        "up_pct": st.column_config.NumberColumn("↑ %", format="%.1f")})
with scol:
    word = st.selectbox("Sentences of", ["(all words)"] + list(words["word"]), key="sf_word")
    sentences = FIELDS.field_sentences(tagged, chosen, None if word == "(all words)" else word)
    sentences["open"] = [token_page_link(bench_name, model, p) for p in sentences["pair_id"]]
    st.dataframe(sentences, hide_index=True, key="sf_sentences", column_config={
        "b": st.column_config.NumberColumn("b", format="%.5f"),
        "open": st.column_config.LinkColumn("token heatmap", display_text="open ↗")})
