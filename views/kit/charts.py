"""Plotly figures for the attribution pages (token heatmap of b(u), ranked bars, Overview bars) and their PNG/SVG
downloads; every number comes from the engine's frames. One diverging scale centred at 0: red = b(u) < 0 (toward
the more-biased sentence), blue = b(u) > 0; modified tokens are not scored (hatched grey). Text placed in a figure
goes through :func:`biascore.display.plotly_label`.
"""
from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from biascore.api import Estimates
from biascore.display import plotly_label

COLORSCALE = "RdBu"  # low (red) = toward biased, high (blue) = away
MODIFIED_COLOR = "#d9d9d9"
SCALE_TITLE = "b(u): red → biased, blue → away"
PLOTLY_CONFIG = {"displaylogo": False, "toImageButtonOptions": {"format": "png", "scale": 2}}


def _wrap_lines(widths, wrap: float) -> tuple[list[int], list[float]]:
    """Line index and x offset of each box when boxes are laid out left to right, at most ``wrap`` wide."""
    lines, offsets, line, x = [], [], 0, 0.0
    for w in widths:
        if x > 0 and x + w > wrap:
            line, x = line + 1, 0.0
        lines.append(line)
        offsets.append(x)
        x += w
    return lines, offsets


def token_heatmap(sentences: list[tuple[str, pd.DataFrame]], *, limit: float, wrap: int = 80,
                  title: str = SCALE_TITLE, rtl: bool = False) -> go.Figure:
    """Each sentence as rows of coloured boxes, one box per unit (width ∝ characters), wrapped after about ``wrap``
    characters so that narrow columns stay readable; ``rtl``: laid out right to left. ``sentences``: (row label, units
    frame: :meth:`biascore.api.TokenSalience.units`). ``limit``: the colour scale runs from -limit to +limit (centred at
    0); ``title``: the scale's. The figure is assembled as one dict and validated once (plotly's attribute-by-attribute
    builders cost several times more, which matters for the page budget)."""
    traces: list[dict] = []
    legend_shown = False
    y0, tickvals, ticktext = 0.0, [], []
    for label, units in sentences:
        widths = units.text.str.len().clip(lower=1).to_numpy() + 1.0
        lines, offsets = _wrap_lines(widths, max(wrap, float(widths.max(initial=1.0))))
        ys = np.asarray(lines, dtype=float) + y0
        base = np.asarray(offsets)
        tickvals.append(y0)
        ticktext.append(plotly_label(label))
        for scored in (True, False):
            sel = (units.scored == scored).to_numpy()
            if not sel.any():
                continue
            part = units[sel]
            texts = [plotly_label(t) for t in part.text]
            trace = dict(type="bar", y=ys[sel].tolist(), x=widths[sel].tolist(), base=base[sel].tolist(),
                         orientation="h", width=0.8, text=texts, textposition="inside", insidetextanchor="middle",
                         textangle=0, showlegend=False)
            if scored:
                trace.update(customdata=[[t, b] for t, b in zip(texts, part.b.tolist())],
                             marker=dict(color=part.b.tolist(), coloraxis="coloraxis",
                                         line=dict(color="white", width=1)),
                             hovertemplate="%{customdata[0]}<br>b(u) = %{customdata[1]:.5f}<extra></extra>")
            else:
                trace.update(customdata=texts, name="modified token (not scored)", showlegend=not legend_shown,
                             marker=dict(color=MODIFIED_COLOR, pattern=dict(shape="/", fgcolor="#999999"),
                                         line=dict(color="white", width=1)),
                             hovertemplate="%{customdata}<br>modified token — not scored<extra></extra>")
                legend_shown = True
            traces.append(trace)
        y0 = float(ys.max(initial=y0)) + 1.5
    n_rows = y0 - 0.5
    layout = dict(
        barmode="overlay", height=int(110 + 44 * n_rows), margin=dict(l=10, r=10, t=10, b=80),
        coloraxis=dict(colorscale=COLORSCALE, cmin=-limit, cmax=limit, cmid=0.0,
                       colorbar=dict(orientation="h", x=1.0, xanchor="right", y=-0.02, yanchor="top", len=0.5,
                                     thickness=10, title=dict(text=plotly_label(title), side="top", font=dict(size=11)))),
        xaxis=dict(visible=False, autorange="reversed" if rtl else True),
        yaxis=dict(autorange="reversed", tickvals=tickvals, ticktext=ticktext, tickfont=dict(size=13),
                   automargin=True, showgrid=False, zeroline=False),
        legend=dict(orientation="h", yanchor="top", y=-0.02, x=0),
        uniformtext=dict(minsize=9, mode="show"), plot_bgcolor="white")
    return go.Figure({"data": traces, "layout": layout})


def ranked_bar_chart(ranked: pd.DataFrame, *, limit: float, title: str = "Ranked b(u)",
                     axis: str = "b(u)  (< 0: toward biased)") -> go.Figure:
    """Horizontal bars of the scored units, strongest push toward the biased sentence at the top."""
    labels = [f"{plotly_label(t)} #{p}" for t, p in zip(ranked.text, ranked.position)]
    values = ranked.b.tolist()
    trace = dict(type="bar", x=values, y=labels, orientation="h", customdata=[plotly_label(t) for t in ranked.text],
                 marker=dict(color=values, coloraxis="coloraxis"),
                 hovertemplate="%{customdata}<br>b(u) = %{x:.5f}<extra></extra>")
    layout = dict(
        title=dict(text=plotly_label(title)), height=max(240, 90 + 22 * len(ranked)), margin=dict(l=10, r=10, t=40, b=50),
        coloraxis=dict(colorscale=COLORSCALE, cmin=-limit, cmax=limit, cmid=0.0, showscale=False),
        yaxis=dict(autorange="reversed", title=None, automargin=True),
        xaxis=dict(title=dict(text=plotly_label(axis)), zeroline=True, zerolinecolor="#444"), plot_bgcolor="white")
    return go.Figure({"data": [trace], "layout": layout})


def estimates_chart(view: Estimates) -> go.Figure:
    """An estimate per group with its interval as whiskers, one bar per series in each group (e.g. B per bias type
    for each model × benchmark), and the view's reference line (e.g. 50 = unbiased)."""
    frame = view.frame if "series" in view.frame else view.frame.assign(series="")
    traces = []
    for series, g in frame.groupby("series", sort=False):
        traces.append(dict(
            type="bar", name=plotly_label(series), x=[plotly_label(b) for b in g.group], y=g.estimate.tolist(),
            error_y=dict(type="data", symmetric=False, array=(g.high - g.estimate).tolist(),
                         arrayminus=(g.estimate - g.low).tolist()),
            hovertemplate="%{x}: %{y:.2f}<extra>%{fullData.name}</extra>"))
    layout = dict(
        barmode="group", yaxis=dict(title=dict(text=plotly_label(view.axis)), range=view.range), height=420,
        margin=dict(l=10, r=10, t=30, b=10), legend=dict(orientation="h"), title=plotly_label(view.title) or None)
    if view.reference is not None:
        layout.update(
            shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=view.reference, y1=view.reference,
                         line=dict(dash="dash", color="#444"))],
            annotations=[dict(text=plotly_label(view.reference_label), xref="paper", x=0, y=view.reference,
                              yanchor="bottom", xanchor="left", showarrow=False)])
    return go.Figure({"data": traces, "layout": layout})


def export_available() -> tuple[bool, str]:
    """Whether server-side PNG/SVG export (plotly + kaleido, which drives a local Chrome/Chromium) can run."""
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "install `kaleido` for PNG/SVG export"
    if not any(shutil.which(b) for b in ("chromium", "chromium-browser", "google-chrome", "chrome")):
        return False, "PNG/SVG export needs Chromium or Chrome (`apt-get install chromium`)"
    return True, ""


def figure_bytes(fig: go.Figure, fmt: str) -> bytes:
    """The figure as PNG or SVG bytes (kaleido renders it in headless Chromium; a few seconds).

    Offline: kaleido's page takes plotly.js from the installed plotly package and, with ``mathjax=False``,
    does not load MathJax from cdnjs.cloudflare.com (``fig.to_image`` cannot turn that off)."""
    import kaleido
    return kaleido.calc_fig_sync(fig.to_dict(), opts=dict(format=fmt, width=1100, height=int(fig.layout.height or 400),
                                                        scale=2 if fmt == "png" else 1), kopts={"mathjax": False})


def figure_downloads(fig, name: str, key: str) -> None:
    """PNG and SVG download buttons for a plotly figure (rendered only when clicked)."""
    ok, why = export_available()
    if not ok:
        st.caption(f"{why}; the camera icon in the chart's toolbar saves a PNG from the browser.")
        return
    for col, (fmt, mime) in zip(st.columns(2), (("png", "image/png"), ("svg", "image/svg+xml"))):
        col.download_button(f"{fmt.upper()}", data=lambda fmt=fmt: figure_bytes(fig, fmt), file_name=f"{name}.{fmt}",
                            mime=mime, key=f"{key}_{fmt}", on_click="ignore")
