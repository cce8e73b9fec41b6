"""One scored pair drawn the same way on every page: S_JSD and verdict, the token heatmap of both
sentences, the ranked bar chart, PNG/SVG export. Drawing only (the row comes from the engine)."""
from __future__ import annotations

from typing import Mapping

import streamlit as st

from views.kit.charts import PLOTLY_CONFIG, figure_downloads, ranked_bar_chart, token_heatmap
from biascore.display import markdown_literal
from views.kit.attribution import DRAWING
from views.kit.common import literal

LEVELS = {"sub-word tokens": "token", "words": "word"}


def level_toggle(key: str = "level") -> str:
    """Sub-word / word level switch (b of a word = mean b(u) of its shared tokens)."""
    choice = st.radio("Units", list(LEVELS), horizontal=True, key=key,
                      help="Word level: a word's b is the mean b(u) of its shared (unmodified) sub-word tokens.")
    return LEVELS[choice]  # type: ignore[return-value]


def pair_limit(rows: list[Mapping], level: str) -> float:
    """One symmetric colour limit for several rows (e.g. two models), so their colours compare."""
    return DRAWING.color_limit(*[DRAWING.sentence_units(r, side, level) for r in rows if not r.get("skipped_reason")
                         for side in ("more", "less")])


def draw_pair(row: Mapping, *, level: str, limit: float | None = None, key: str, heading: str = "",
              ranked: bool = True, wrap: int = 90) -> None:
    """Draw one pair. ``key`` keeps widget ids unique when a page shows several pairs; ``wrap``: characters
    per heatmap line (smaller in narrow columns)."""
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
    more, less = DRAWING.sentence_units(row, "more", level), DRAWING.sentence_units(row, "less", level)
    limit = limit if limit is not None else DRAWING.color_limit(more, less)
    heat = token_heatmap([("more-biased", more), ("less-biased", less)], limit=limit, wrap=wrap)
    st.plotly_chart(heat, config=PLOTLY_CONFIG, key=f"{key}_heat", width="stretch")
    figure_downloads(heat, f"{key}_heatmap", key=f"{key}_heat_dl")
    if ranked:
        bars = ranked_bar_chart(DRAWING.ranked_units(row, level), limit=limit,
                                title="Shared units ranked by b(u) (top: strongest push toward the biased sentence)")
        st.plotly_chart(bars, config=PLOTLY_CONFIG, key=f"{key}_bars", width="stretch")
        figure_downloads(bars, f"{key}_ranked", key=f"{key}_bars_dl")
