"""Token attributions: browse the scored pairs of one model on one benchmark, see b(u) of every token.

URL parameters ``benchmark``, ``model`` and ``pair`` (pair_id) select the view, so a link reproduces it.
"""
from __future__ import annotations

import streamlit as st

from biascore.display import code_span
from views.kit.attribution import DRAWING, best_run, pair_table, run_picker, verified_run
from views.kit.common import literal
from views.kit.models import data_dir_notice, model_label
from views.kit.links import keep, link_choice
from views.kit.pair_view import draw_pair, level_toggle, pair_limit

SORTS = {"S_JSD, most biased first": ("sjsd", True), "S_JSD, least biased first": ("sjsd", False),
         "strongest token |b(u)|": ("strongest_abs", False), "pair id": ("pair_id", True)}
TABLE_ROWS = 500  # rows sent to the browser; filters and sorting always run over every pair
TABLE_COLUMNS = ["pair_id", "bias_type", "sjsd", "verdict", "strongest_token", "strongest_b", "sent_more", "sent_less"]

st.title("Token attributions")
st.caption("b(u) of each shared token u: **red = pushes the model toward the more-biased sentence (b < 0)**, "
           "blue = away (b > 0); hatched grey = modified token (differs between the sentences, not scored). "
           "S_JSD = mean b(u); a pair is biased when S_JSD < 0, a tie when |S_JSD| ≤ 1e-6.")
data_dir_notice()

benchmark, model, run, compare = run_picker(score_key="ta_score_now", compare_key="compare_model")


@st.fragment
def pair_browser(table) -> None:
    """Filters and the table. A fragment: changing a filter reruns only this part (the pair view below
    stays); selecting a row reruns the page to open that pair."""
    f1, f2, f3, f4 = st.columns([2, 1, 2, 2])
    types = f1.multiselect("Bias type", sorted(table.bias_type.unique()), key="ta_types")
    verdict = f2.selectbox("Verdict", ["all", "biased", "not biased", "tie"], key="ta_biased",
                           help="tie: |S_JSD| ≤ 1e-6, no preference within float reproducibility")
    text = f3.text_input("Search text", key="ta_search", placeholder="a word in either sentence")
    sort_label = f4.selectbox("Sort by", list(SORTS), key="ta_sort")
    sort_by, ascending = SORTS[sort_label]
    shown = DRAWING.filter_pairs(table, bias_types=types, text=text, sort_by=sort_by, ascending=ascending,
                         verdict=None if verdict == "all" else verdict)
    st.caption(f"{len(shown):,} of {len(table):,} pairs match · click a row to open it"
               + (f" · the table lists the first {TABLE_ROWS} in this order; search or sort to reach the others"
                  if len(shown) > TABLE_ROWS else ""))
    shown = shown.head(TABLE_ROWS)
    event = st.dataframe(
        shown[TABLE_COLUMNS], hide_index=True, on_select="rerun", selection_mode="single-row", key="ta_table",
        height=280, column_config={"sjsd": st.column_config.NumberColumn("S_JSD", format="%.5f"),
                                   "strongest_b": st.column_config.NumberColumn("strongest b", format="%.5f"),
                                   "strongest_token": "strongest token"})
    rows = event.selection.rows if event is not None else []
    if rows and rows[0] < len(shown):
        chosen = str(int(shown.iloc[rows[0]].pair_id))
        if chosen != st.query_params.get("pair"):
            st.query_params["pair"] = chosen
            st.rerun(scope="app")


frame = verified_run(model, benchmark, run)
if frame is None:
    st.stop()
table = pair_table(run)
pair_browser(table)
pair_id = int(link_choice("pair", [int(p) for p in table.pair_id],
                          int(table.sort_values(["sjsd", "pair_id"], kind="stable").pair_id.iloc[0]),
                          noun="pair ids of this run"))
keep("pair", pair_id)

row = frame.loc[frame.pair_id == pair_id].iloc[0].to_dict()
st.subheader(f"Pair {pair_id}")
literal(row["bias_type"], label="bias type")
literal(row["sent_more"], label="more-biased")
literal(row["sent_less"], label="less-biased")
level = level_toggle("ta_level")

rows = [(model, row)]
if compare is not None:
    other = verified_run(compare, benchmark, best_run(compare, benchmark))  # None: it has said why in one line
    if other is not None:
        match = other.loc[other.pair_id == pair_id]
        if len(match):
            rows.append((compare, match.iloc[0].to_dict()))
        else:
            st.warning(f"{code_span(model_label(compare))} has no score for pair {pair_id} (it was scored on fewer pairs).")
limit = pair_limit([r for _, r in rows], level)
cols = st.columns(len(rows))
for i, (col, (name, r)) in enumerate(zip(cols, rows)):
    with col:
        draw_pair(r, level=level, limit=limit, key=f"ta_{i}", heading=model_label(name),
                  wrap=90 if len(rows) == 1 else 45)
if len(rows) > 1:
    st.caption("Both models use the same colour scale, so colours compare across them.")
