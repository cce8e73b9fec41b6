"""The kit's one drawing of each typed view (:mod:`biascore.contract.views`), with its exports: plotly figures get
PNG/SVG downloads, tables a CSV download. The built-in pages are composed of these, and a generated page draws
what a method's :meth:`~biascore.api.Method.drawn` returns through :func:`draw`, so a plugin that returns the same
views gets the same drawings. Drawing only: every number comes from the view."""
from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from biascore.api import (Chart, Estimates, HeadGrid, Level, PairedComparison, PairTable, RankedUnits, Table,
                          TokenSalience, TypedView)
from views.kit.charts import PLOTLY_CONFIG, estimates_chart, figure_downloads, ranked_bar_chart, token_heatmap
from views.kit.common import csv_download, literal
from views.kit.links import keep, link_choice

LEVELS = {"sub-word tokens": "token", "words": "word"}
TABLE_ROWS = 500  # rows sent to the browser; filters and sorting always run over every pair


def _figure(fig: go.Figure, name: str, key: str) -> None:
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key, width="stretch")
    figure_downloads(fig, name, key=f"{key}_dl")


def level_toggle(key: str = "level") -> Level:
    """Sub-word / word level switch (a word's value = the mean of its scored sub-word units)."""
    choice = st.radio("Units", list(LEVELS), horizontal=True, key=key,
                      help="Word level: a word's b is the mean b(u) of its sub-word tokens if all are shared, else it is modified.")
    return LEVELS[choice]  # type: ignore[return-value]


def draw_token_salience(view: TokenSalience, key: str, *, level: Level = "token", limit: float | None = None,
                        wrap: int = 90) -> None:
    """Both sentences as rows of coloured unit boxes (right to left for an ``rtl`` script), PNG/SVG export."""
    heat = token_heatmap(view.units(level), limit=view.limit(level) if limit is None else limit, wrap=wrap,
                         title=view.scale, rtl=view.direction == "rtl")
    _figure(heat, f"{key}_heatmap", f"{key}_heat")


def draw_ranked_units(view: RankedUnits, key: str, *, level: Level = "token", limit: float | None = None) -> None:
    """The scored units of one sentence as ranked bars, PNG/SVG export."""
    bars = ranked_bar_chart(view.units(level), limit=view.salience.limit(level) if limit is None else limit,
                            title=view.title, axis=view.axis)
    _figure(bars, f"{key}_ranked", f"{key}_bars")


@st.fragment
def pair_browser(view: PairTable, key: str, verdict_help: str | None = None) -> None:
    """Filters and the table of a :class:`PairTable`. A fragment: changing a filter reruns only this part;
    selecting a row reruns the page to open that pair (``?pair=``)."""
    table = view.frame
    f1, f2, f3, f4 = st.columns([2, 1, 2, 2])
    types = f1.multiselect("Bias type", sorted(table.bias_type.unique()), key=f"{key}_types")
    verdict = f2.selectbox("Verdict", ["all", *view.verdicts], key=f"{key}_biased", help=verdict_help) \
        if "verdict" in table else "all"
    text = f3.text_input("Search text", key=f"{key}_search", placeholder="a word in either sentence")
    sorts = {label: (column, ascending) for label, column, ascending in view.sort_options()}
    sort_by, ascending = sorts[f4.selectbox("Sort by", list(sorts), key=f"{key}_sort")]
    shown = view.filtered(bias_types=types, text=text, sort_by=sort_by, ascending=ascending,
                          verdict=None if verdict == "all" else verdict)
    st.caption(f"{len(shown):,} of {len(table):,} pairs match · click a row to open it"
               + (f" · the table lists the first {TABLE_ROWS} in this order; search or sort to reach the others"
                  if len(shown) > TABLE_ROWS else ""))
    shown = shown.head(TABLE_ROWS)
    config = {c: st.column_config.NumberColumn(label, format=fmt) if fmt else label
              for c, (label, fmt) in view.formats.items()}
    event = st.dataframe(shown[list(view.columns)], hide_index=True, on_select="rerun", selection_mode="single-row",
                         key=f"{key}_table", height=280, column_config=config)
    rows = event.selection.rows if event is not None else []
    if rows and rows[0] < len(shown):
        chosen = str(int(shown.iloc[rows[0]].pair_id))
        if chosen != st.query_params.get("pair"):
            st.query_params["pair"] = chosen
            st.rerun(scope="app")


def chosen_pair(view: PairTable) -> int:
    """The pair the address bar names (``?pair=``; a bad one is refused in one line), else the lowest score."""
    table = view.frame
    pair_id = int(link_choice("pair", [int(p) for p in table.pair_id],
                              int(table.sort_values([view.score, "pair_id"], kind="stable").pair_id.iloc[0]),
                              noun="pair ids of this run"))
    keep("pair", pair_id)
    return pair_id


def pair_heading(row: pd.Series | dict, pair_id: int) -> None:
    st.subheader(f"Pair {pair_id}")
    literal(row["bias_type"], label="bias type")
    literal(row["sent_more"], label="more-biased")
    literal(row["sent_less"], label="less-biased")


def draw_pair_table(view: PairTable, key: str) -> None:
    """The pair browser, and the pair its row opens: the pair's sentences and the views ``view.detail`` gives."""
    pair_browser(view, key)
    pair_id = chosen_pair(view)
    pair_heading(view.frame.loc[view.frame.pair_id == pair_id].iloc[0], pair_id)
    details = list(view.detail(pair_id))
    level = level_toggle(f"{key}_level") if any(isinstance(v, (TokenSalience, RankedUnits)) for v in details) \
        else "token"
    for i, detail in enumerate(details):
        draw(detail, f"{key}_{i}", level=level)


def draw_head_grid(view: HeadGrid, key: str) -> None:
    """The layer × head grid as a heatmap (diverging around 0, or reds when clipped at 0), PNG/SVG export."""
    grid = view.matrix()
    layers, heads = grid.shape
    fig = go.Figure(go.Heatmap(z=grid, x=list(range(heads)), y=list(range(layers)),
                               colorscale="Reds" if view.clip else "RdBu_r", zmid=None if view.clip else 0,
                               colorbar_title="b"))
    fig.update_layout(xaxis_title="head (0-based)", yaxis_title="layer (0-based)", yaxis_autorange="reversed",
                      height=max(300, 22 * layers + 120), margin=dict(l=10, r=10, t=30 if view.title else 10, b=10),
                      title=view.title or None)
    _figure(fig, f"{key}_heads", f"{key}_grid")


def draw_estimates(view: Estimates, key: str) -> None:
    """Estimates with their intervals per group (one bar group per series), PNG/SVG and CSV export."""
    _figure(estimates_chart(view), f"{key}_estimates", key)
    csv_download(view.frame, f"{key}_estimates.csv", key=f"{key}_csv")


def draw_paired_comparison(view: PairedComparison, key: str) -> None:
    """How the comparison was computed, its notes, and its table with a CSV download."""
    literal(view.method_line)  # model names: plain text
    if view.caption:
        st.caption(view.caption)
    for note in view.notes:
        literal(note, label="note")
    st.dataframe(view.frame, hide_index=True, key=key)
    csv_download(view.frame, "paired_comparison.csv", key=f"{key}_csv")


def draw_table(view: Table, key: str) -> None:
    if view.title:
        st.subheader(view.title)
    st.dataframe(view.frame, hide_index=True, key=f"{key}_table")
    csv_download(view.frame, f"{view.name}.csv".replace("/", "_"), key=f"{key}_csv")


def draw_chart(view: Chart, key: str) -> None:
    """A bar chart (with interval rules and a reference line) or a heatmap of a table; benchmark text stays data."""
    import altair as alt  # here, not with the page kit: no page's first run waits for it
    if view.title:
        st.subheader(view.title)
    frame = view.frame
    if view.kind == "heatmap":
        chart = alt.Chart(frame).mark_rect().encode(
            x=alt.X(f"{view.columns}:O"), y=alt.Y(f"{view.rows}:O"),
            color=alt.Color(f"{view.value}:Q", scale=alt.Scale(scheme="redblue", domainMid=0)),
            tooltip=[view.rows, view.columns, view.value])
    else:
        label = alt.Y(f"{view.label}:N", sort=None, title=view.label, axis=alt.Axis(labelOverlap=False))  # every bar
        layers = [alt.Chart(frame).mark_bar().encode(
            x=alt.X(f"{view.value}:Q", title=view.value), y=label,
            tooltip=[c for c in (view.label, view.value, view.low, view.high) if c])]
        if view.low and view.high:
            layers.append(alt.Chart(frame).mark_rule(color="#444444").encode(x=f"{view.low}:Q", x2=f"{view.high}:Q",
                                                                            y=label))
        if view.reference is not None:
            layers.append(alt.Chart(pd.DataFrame({"x": [view.reference]})).mark_rule(strokeDash=[4, 4]).encode(
                x="x:Q"))
        chart = alt.layer(*layers).properties(height=max(120, 24 * len(frame)))
    st.altair_chart(chart, width="stretch", key=f"{key}_{view.kind}")


DRAWERS: dict[type, Callable[..., None]] = {
    TokenSalience: draw_token_salience, RankedUnits: draw_ranked_units, PairTable: draw_pair_table,
    HeadGrid: draw_head_grid, Estimates: draw_estimates, PairedComparison: draw_paired_comparison,
    Table: draw_table, Chart: draw_chart}


def draw(view: TypedView, key: str, level: Level = "token") -> None:
    """Draw any typed view with the kit's one function for its type (``level`` for the salience views)."""
    if isinstance(view, (TokenSalience, RankedUnits)):
        DRAWERS[type(view)](view, key, level=level)
    else:
        DRAWERS[type(view)](view, key)


def draw_all(views: Sequence[TypedView], key: str) -> None:
    for i, view in enumerate(views):
        draw(view, f"{key}_{i}")
