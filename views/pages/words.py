"""Words: every word type of a benchmark with its bias attribution for one model, or two side by side.

Draws only: occurrences, the per-word table, the pairs of a word and the two-model join come from
:mod:`biascore.methods.words.table`. URL parameters ``benchmark``, ``model``, ``compare`` and ``word``
select the view, so a link reproduces it. Words and sentences are shown as table cells (literal text).
"""
from __future__ import annotations

import re

import streamlit as st

from biascore import api
from views.kit.attribution import best_run, pair_table, run_picker, token_page_link, word_occurrences
from views.kit.common import csv_download
from views.kit.models import data_dir_notice, model_label
from views.kit.links import keep, link_choice, link_value, refuse

#: the words method's drawing helpers: the word table, two models side by side, the pairs of one word
WORDS = api.method("words").drawing

#: the words method's default minimum number of pairs, the same as `biascore words`'s --min-count
DEFAULT_MIN_COUNT = api.method("words").Options.build().min_count
NUMBER = {"mean_b": "%.5f", "ci_low": "%.5f", "ci_high": "%.5f", "mean_b difference": "%+.5f", "b": "%.5f",
          "sjsd": "%.5f", "n_pairs": None, "n_occurrences": None}
HELP = {
    "n_pairs": "pairs in which the word is a shared (scored) word",
    "n_occurrences": "scored occurrences (a word twice in one pair counts twice)",
    "mean_b": "mean b over the occurrences; b < 0 pushes toward the more-biased sentence",
    "ci_low": "95 % Student-t interval over the occurrences; blank (undefined) when the word occurs once",
    "ci_high": "95 % Student-t interval over the occurrences; blank (undefined) when the word occurs once",
    "share_biased": "share of occurrences with b < 0 (the paper's ↑ bias)",
    "share_zero": "share of occurrences with b = 0 exactly (the paper's ∘)",
    "forms": "the written forms folded into this word type",
    "mean_b difference": "mean b of the second model − mean b of the first",
}


def column_config(columns) -> dict:
    """Number formats and header help for the engine's columns (shares as percentages)."""
    config = {}
    for col in columns:
        base = col.split(": ")[-1]
        if base in NUMBER:
            config[col] = st.column_config.NumberColumn(col, format=NUMBER[base], help=HELP.get(base))
        elif base.startswith("share_"):
            config[col] = st.column_config.NumberColumn(col, format="percent", help=HELP.get(base))
        elif base in HELP:
            config[col] = st.column_config.TextColumn(col, help=HELP[base])
    return config


def file_part(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_")[-60:] or "model"


st.title("Words")
st.caption("Every word type of the benchmark's shared words (case-folded; punctuation left out) for one model: "
           "in how many pairs it occurs, its mean b, a 95 % Student-t interval over its occurrences (blank when "
           "the word occurs once: undefined) and the share of occurrences with b < 0, i.e. pushing the model "
           "toward the more-biased sentence. Click a column header to sort, a row to list the word's pairs.")
data_dir_notice()

benchmark, model, run, compare = run_picker(score_key="words_score_now", compare_key="words_compare",
                                            compare_url_key="compare")
occ = word_occurrences(run)

f1, f2 = st.columns([2, 1])
types = f1.multiselect("Bias type", sorted(occ.bias_type.unique()), key="words_types",
                       help="Count only the pairs of these bias types (all when empty).")
most = WORDS.max_pair_count(occ)
counts = range(1, max(2, min(most, 100)) + 1)
start = link_choice("min_count", counts, min(DEFAULT_MIN_COUNT, most), noun="minimum numbers of pairs",
                    control="words_min_count")
min_count = f2.slider("Minimum number of pairs", counts[0], counts[-1], start, key="words_min_count",
                      help=f"Default {DEFAULT_MIN_COUNT}, as `biascore words --min-count`.")
keep("min_count", min_count, default=DEFAULT_MIN_COUNT)

occurrences = {model: occ}
if compare is not None:
    other_run = best_run(compare, benchmark)
    if other_run is None:
        st.warning(f"{model_label(compare)} has no usable cached run on {benchmark} any more.")
    else:
        occurrences[compare] = word_occurrences(other_run)
if len(occurrences) > 1:
    table = WORDS.compare_words({model_label(name): occ for name, occ in occurrences.items()}, types, min_count)
    st.caption(f"{len(table):,} word types in at least {min_count} pair(s) for either model · mean_b difference "
               f"= {model_label(compare)} − {model_label(model)}")
else:
    table = WORDS.word_table(occ, types, min_count)
    st.caption(f"{len(table):,} word types in at least {min_count} pair(s)")
event = st.dataframe(table, hide_index=True, on_select="rerun", selection_mode="single-row", key="words_table",
                     height=420, column_config={"word_type": "word", **column_config(table.columns)})
suffix = f"_vs_{file_part(model_label(compare))}" if compare else ""
csv_download(table, f"words_{benchmark}_{file_part(model_label(model))}{suffix}.csv", key="words_csv")

rows = event.selection.rows if event is not None else []
if rows and rows[0] < len(table):
    keep("word", str(table.iloc[rows[0]].word_type))
word = link_value("word") or None  # any word: one the table lacks says so per model below
if word is None:
    st.stop()
typed = api.method("words").word_type(word)
if not any(isinstance(typed, str) and (o.word_type == typed).any() for o in occurrences.values()):
    refuse("word", word, f"no model shown here has scored it on {benchmark}")  # (punctuation only: no word at all)
    st.stop()
word = typed

st.subheader("Pairs with the selected word")
st.text(f"word: {word}")
tabs = st.tabs([model_label(name) for name in occurrences]) if len(occurrences) > 1 else [st.container()]
for i, (tab, (name, name_occ)) in enumerate(zip(tabs, occurrences.items())):
    with tab:
        pairs = WORDS.word_pairs(name_occ, pair_table(best_run(name, benchmark)), word, types)
        if pairs.empty:
            st.info(f"{model_label(name)} has no scored occurrence of this word"
                    + (" in the chosen bias types." if types else "."))
            continue
        pairs["open"] = [token_page_link(benchmark, name, p) for p in pairs.pair_id]
        st.caption(f"{len(pairs)} pair(s) · b = mean b of the word in the pair (b < 0 pushes toward the "
                   "more-biased sentence) · click a row, or open ↗ in a new tab")
        picked = st.dataframe(pairs, hide_index=True, on_select="rerun", selection_mode="single-row",
                              key=f"words_pairs_{i}", column_order=["pair_id", "open", *pairs.columns[1:-1]],
                              column_config={**column_config(pairs.columns),
                                  "open": st.column_config.LinkColumn("token heatmap", display_text="open ↗")})
        sel = picked.selection.rows if picked is not None else []
        pair_id = int(pairs.pair_id.iloc[sel[0] if sel and sel[0] < len(pairs) else 0])
        st.page_link("views/pages/token_attributions.py", label=f"Open pair {pair_id} in Token attributions",
                     icon="🔎", query_params={"benchmark": benchmark, "model": model_label(name), "pair": str(pair_id)})
        csv_download(pairs.drop(columns="open"), f"words_{benchmark}_{file_part(model_label(name))}_pairs.csv",
                     label="Download these pairs (CSV)", key=f"words_pairs_csv_{i}")
