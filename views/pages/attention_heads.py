"""Attention heads: per-head bias scores b_ij = ∂|SEAT| / ∂m_ij, the counter-stereotype test, targeted
masking, and attention views of one counter pair. Drawing only; the engine computes everything."""
from __future__ import annotations

import numpy as np
import plotly.express as px
import plotly.graph_objects as go
import streamlit as st
import streamlit.components.v1 as components

from biascore.runs import runner
from biascore import api, settings
from biascore.display import code_span, plotly_label, script_token
from biascore.errors import ModelLoadError
from views.kit.common import csv_download, literal
from views.kit.drawn import draw_head_grid
from views.kit.links import keep, link_choice
from views.kit.models import (data_dir_notice, model_for_cache, model_label, model_selector, read_only_notice,
                          served_refusal)
from views.kit.scoring import run_with_progress, score_now_button, watch_computing, watched
from views.kit.widgets import precision_caption

st.title("Attention heads")
st.caption("Bias score of every attention head: b_ij = ∂|SEAT effect size| / ∂m_ij at m = 1, with m_ij a mask "
           "on head j of layer i (attention-head bias paper). Positive = removing the head would lower the "
           "measured bias (a *biased head*).")
data_dir_notice()
#: the heads methods' drawing helpers: the top heads; the counter-stereotype table; a
#: counter pair's attention maps
HEADS, COUNTER, ATTENTION = (api.method(m).drawing for m in ("heads", "heads-counter", "heads-attention"))


def _head_view_html(tokens: list[str], att: np.ndarray, layer: int, head: int) -> str:
    import torch
    from bertviz import head_view
    attention = [torch.from_numpy(a[None]) for a in att]
    return head_view(attention, [script_token(t) for t in tokens], layer=layer, heads=[head], html_action="return").data


def _attention_heatmap(tokens: list[str], matrix: np.ndarray, title: str) -> go.Figure:
    labels = [f"{i}:{plotly_label(t)}" for i, t in enumerate(tokens)]
    fig = go.Figure(go.Heatmap(z=matrix, x=labels, y=labels, colorscale="Blues", zmin=0))
    fig.update_layout(title=title, yaxis_autorange="reversed", height=420, margin=dict(l=10, r=10, t=40, b=10),
                      xaxis_title="attended to", yaxis_title="attending token")
    return fig


tests = api.list_seat_tests(language="en")
if not tests:
    st.error("No SEAT tests found: the data directory needs seat/*.jsonl.")
    st.stop()
c1, c2, c3 = st.columns([2, 2, 1])
with c1:
    model_name = model_selector(scorer="heads")
with c2:
    default = api.method("heads").input_kind.default
    wanted = link_choice("seat", tests, default if default in tests else tests[0], noun="SEAT tests")
    seat = st.selectbox("SEAT test", tests, index=tests.index(wanted))
    keep("seat", seat)
with c3:
    k = int(st.number_input("K (heads to mask)", min_value=1, max_value=50, value=3))
if served_refusal(model_name, api.method("heads")):
    st.stop()
lm = model_for_cache(model_name)  # a handle: reads cached results; the weights load only to compute
if lm is None:
    st.stop()
test = api.load_seat_test(seat)
literal(test.describe(), label=f"SEAT test {seat}")
st.caption(f"SEAT test {code_span(seat)}: " + ("sentence-level: each example's mean-pooled final-layer embedding."
              if test.sentence_level else
              "word-level: each word's final-layer embedding averaged over its sub-tokens and "
              f"{len(api.WORD_TEMPLATES)} bleached context sentences."))


def _frame(name: str, input, **kwargs):
    """The frame of the registered method ``name``'s result through the runner's door (None: not stored)."""
    result = runner.run(api.method(name), lm, input, **kwargs)
    if result is None:
        return None
    precision_caption(result, model_label(model_name))
    return result.frame


scores = _frame("heads", seat, only_cached=True)
if scores is None:
    if not read_only_notice(f"The head scores of {code_span(model_label(model_name))} for {code_span(seat)} are "
                            "not in the snapshot; computing them"):
        st.info(f"The head scores of {code_span(model_label(model_name))} for SEAT test {code_span(seat)} are not "
                "computed yet: one forward and one backward pass over the test's sentences (the model is loaded "
                "for it).")
        scores = score_now_button("Score now", "ah_score_now", "Head scores (one forward + backward pass), batches:",
                                  lambda progress: _frame("heads", seat, progress=progress),
                                  watch=watched(api.method("heads"), model_name, seat))
        if scores is not None:
            st.rerun()  # drawn afresh from the cache: no "not computed yet" line beside the result
    st.stop()
b = api.HeadGrid(scores).matrix()
L, H = b.shape
n_pos = int((b > 0).sum())
st.markdown(f"**{L} layers × {H} heads** · SEAT effect size of the full model "
            f"**{scores['effect_size'].iloc[0]:+.3f}** · {n_pos} heads with b > 0")

clip = st.checkbox("Clip negative scores to 0 (as the paper's Figure 2)", value=True)
left, right = st.columns([3, 2])
with left:
    draw_head_grid(api.HeadGrid(scores, clip=clip), key="ah")
with right:
    st.plotly_chart(px.histogram(scores, x="score", nbins=40, height=300), width="stretch")
    st.markdown("Top heads (layer-head, 0-based: the paper's 9-12 is 8-11)")
    st.dataframe(HEADS.top_heads(scores, 10)[["name", "layer", "head", "score"]], hide_index=True)
csv_download(scores[["layer", "head", "score"]], f"heads_{lm.identity().cache_id}_{seat}.csv")

st.subheader("Counter-stereotype test")
st.caption(f"Sentences: {COUNTER.source_note}. d = attention(target → attribute) in the original minus in the "
           "counter sentence (min–max normalised rows, special tokens and punctuation excluded); one-tailed "
           "t-test that d > 0 over sentences, d averaged over each head group."
           + (" Causal model: only sentences whose attribute word precedes the target word." if lm.identity().kind == "causal"
              else ""))
counter = _frame("heads-counter", None, only_cached=True)
if counter is None and not read_only_notice("The counter-stereotype attentions of this model are not in the "
                                            "snapshot; computing them"):
    st.caption("Not computed yet for this model: one forward pass per sentence and its counter sentence.")
    counter = score_now_button("Compute the counter-stereotype attentions", "ah_counter_now",
                               "Counter-stereotype attentions: sentences",
                               lambda progress: _frame("heads-counter", None, progress=progress),
                               watch=watched(api.method("heads-counter"), model_name, None))
    if counter is not None:
        st.rerun()  # as above
if counter is not None and counter.empty:
    st.info("No sentence with exactly one gender attribute word and a stereotype target word was found.")
elif counter is not None:
    st.dataframe(COUNTER.table(counter, scores), hide_index=True)

st.subheader("Targeted head masking")
st.caption("m = 0 for the top-K, bottom-K, K random (5 seeded draws, averaged) and all positive heads; SEAT effect "
           "size and (pseudo-)perplexity on held-out CrowS-Pairs sentences (bias types other than gender and "
           "sexual orientation).")
n_held_out = int(st.number_input("Held-out sentences for (pseudo-)perplexity", 1, 500, 40, key="n_held_out"))
table = None
if st.checkbox("Evaluate targeted masking", key="run_mask"):
    try:
        table = run_with_progress("Masking heads: head sets", lambda progress: _frame(
            "heads-masking", test, k=k, held_out=n_held_out, progress=progress))
    except settings.ReadOnlySnapshotError:
        read_only_notice("This masking table (these K and held-out sentences) is not in the snapshot; computing it")
    if table is not None:  # None: the error is shown in place of the table
        if (table["ppl_kind"] == "n/a").all():
            st.info("This model is an encoder without an LM head: perplexity is n/a.")
        st.dataframe(table, hide_index=True)
        csv_download(table, f"heads_{lm.identity().cache_id}_{seat}_masking.csv", key="dl_masking")

if read_only_notice("The attention views of one counter pair run the model"):
    st.stop()
st.subheader("One counter pair")
if counter is not None and not counter.empty and st.checkbox(
        "Show the attentions of one counter pair (runs the model on both sentences)", key="ah_one_pair"):
    options = list(range(len(counter)))
    pick = st.selectbox("Pair", options, format_func=lambda i: counter["sentence"].iloc[i])
    row = counter.iloc[pick]
    top = HEADS.top_heads(scores, 1).iloc[0]
    h1, h2 = st.columns(2)
    layer = int(h1.number_input("Layer (0-based)", 0, L - 1, int(top["layer"])))
    head = int(h2.number_input("Head (0-based)", 0, H - 1, int(top["head"])))
    literal(f"target word {row['target']}, attribute {row['attribute']} → {row['counterpart']}")
    w_orig, w_counter = COUNTER.head_attention(row, layer, head)
    st.caption(f"Head {layer}-{head}: b = {b[layer, head]:+.4f}, "
               f"normalised attention original {w_orig:.3f}, counter {w_counter:.3f}.")
    # bertviz's page loads require.js, d3 and jQuery from cdnjs.cloudflare.com: an outside request from every
    # viewer's browser, so it is opt-in, and not offered in public mode.
    show_bertviz = not settings.public_mode() and st.checkbox(
        "Also show bertviz's head view (the browser loads require.js, d3 and jQuery from cdnjs.cloudflare.com)",
        key="ah_bertviz")
    pair = {"pair": row["source"]}
    maps = None if watch_computing(api.method("heads-attention"), model_name, None, **pair) else run_with_progress(
        "Attentions of both sentences", lambda progress: _frame("heads-attention", None, progress=progress, **pair),
        errors=(ValueError, FileNotFoundError, ModelLoadError))
    for col, (_, side) in zip(st.columns(2), () if maps is None else maps.iterrows()):
        tokens, att = ATTENTION.attentions(side)
        label = side["side"].capitalize()
        with col:
            literal(side["text"], label=label)
            st.plotly_chart(_attention_heatmap(tokens, att[layer, head], f"{label}: head {layer}-{head}"),
                            width="stretch")
            if show_bertviz:
                view = _head_view_html(tokens, att, layer, head)
                if hasattr(st, "iframe"):  # streamlit >= 1.5x: components.v1.html is deprecated
                    st.iframe(view, height=520)
                else:
                    components.html(view, height=520, scrolling=True)
