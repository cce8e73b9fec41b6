"""Translation review: the English source pair beside its Filipino translation, each with its b(u) heatmap,
a minimal-pair check, and a review form saved to SQLite (several reviewers may work at once)."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from biascore.core.datasets import BenchmarkError, load_benchmark
from biascore.review.minimal_pair import check_pair
from biascore.review.store import VERDICTS, ReviewError, ReviewStore, default_path
from views.common import (benchmark_selector, csv_download, data_dir_notice, escape, live_pair, model_or_error, model_selector,
                          query_param, run_frame, score_now)
from views.pair_view import draw_pair, level_toggle, pair_limit

REVIEWABLE = ["crows-tl", "demo"]  # benchmarks with English source pairs (demo: its Filipino rows)
FILTERS = ["all pairs", "not reviewed yet", "flagged: not a minimal pair"] + [f"verdict: {v}" for v in VERDICTS]

st.title("Translation review")
st.caption("Check each Filipino pair against its English source: is it a faithful, minimal pair with the right "
           "bias label? Reviews are saved in a SQLite file; several reviewers can use the same file at once.")
data_dir_notice()


@st.cache_data(show_spinner=False)
def review_pairs(benchmark: str) -> pd.DataFrame:
    """The pairs to review: Filipino sentences, English sources and the minimal-pair checks."""
    frame = load_benchmark(benchmark).frame
    if "language" in frame:
        frame = frame[frame.language == "tl"]
    frame = frame[["pair_id", "bias_type", "sent_more", "sent_less", "sent_more_en", "sent_less_en"]].copy()
    checks = [check_pair(m, l) for m, l in zip(frame.sent_more, frame.sent_less)]
    frame["minimal"] = [c.minimal for c in checks]
    frame["tl_diff"] = [c.describe() for c in checks]
    return frame.reset_index(drop=True)


def save_review(db_path: str, benchmark: str, pair_id: int, reviewer: str, form_key: str) -> None:
    """Form callback (runs before the page reruns, so the progress count already includes this save)."""
    try:
        saved = ReviewStore(db_path).save(benchmark, pair_id, reviewer, st.session_state[f"{form_key}_verdict"],
                                          st.session_state[f"{form_key}_note"])
    except ReviewError as exc:
        st.session_state["tr_flash"] = ("error", str(exc))
    else:
        st.session_state["tr_flash"] = (
            "success", f"Saved: pair {saved.pair_id} — {saved.verdict} ({escape(saved.reviewer)}, {saved.updated_at}).")


with st.expander("Review database and reviewer", expanded=True):
    c1, c2 = st.columns(2)
    db_path = c1.text_input("SQLite file (created if missing)", value=str(default_path()), key="tr_db")
    reviewer = c2.text_input("Your name (reviewer)", key="tr_reviewer", max_chars=100)
try:
    store = ReviewStore(db_path)
except ReviewError as exc:
    st.error(str(exc))
    st.stop()

c1, c2 = st.columns(2)
with c1:
    benchmark = benchmark_selector(only=REVIEWABLE, default="crows-tl")
with c2:
    model = model_selector(key="model")
if benchmark is None:
    st.stop()
try:
    pairs = review_pairs(benchmark)
except BenchmarkError as exc:
    st.error(str(exc))
    st.stop()

reviews = store.reviews(benchmark)
progress = store.progress(benchmark, len(pairs))
mine = store.progress(benchmark, len(pairs), reviewer=reviewer) if reviewer.strip() else None
st.progress(progress["share"], text=f"{progress['reviewed']} of {progress['total']} pairs reviewed"
            + (f" · {mine['reviewed']} by you" if mine else ""))

which = st.selectbox("Show", FILTERS, key="tr_filter")
reviewed_ids = set(reviews.pair_id)
if which == "not reviewed yet":
    subset = pairs[~pairs.pair_id.isin(reviewed_ids)]
elif which.startswith("flagged"):
    subset = pairs[~pairs.minimal]
elif which.startswith("verdict: "):
    subset = pairs[pairs.pair_id.isin(set(reviews[reviews.verdict == which.removeprefix("verdict: ")].pair_id))]
else:
    subset = pairs
if subset.empty:
    st.info("No pair matches this filter.")
else:
    ids = [int(x) for x in subset.pair_id]
    wanted = query_param("pair")
    index = ids.index(int(wanted)) if wanted and wanted.isdigit() and int(wanted) in ids else 0
    labels = dict(zip(pairs.pair_id, pairs.sent_more))
    pair_id = st.selectbox(f"Pair ({len(ids)} shown)", ids, index=index, key="tr_pair",
                           format_func=lambda i: f"{i}: {labels[i][:90]}")
    st.query_params["pair"] = str(pair_id)
    pair = pairs[pairs.pair_id == pair_id].iloc[0]

    en_check, tl_check = check_pair(pair.sent_more_en, pair.sent_less_en), check_pair(pair.sent_more, pair.sent_less)
    level = level_toggle("tr_level")
    lm = model_or_error(model)
    scored = run_frame(model, benchmark) if lm is not None else None
    tl_row = None
    if scored is not None and (scored.pair_id == pair_id).any():
        tl_row = scored.loc[scored.pair_id == pair_id].iloc[0].to_dict()
    en_row = live_pair(model, pair.sent_more_en, pair.sent_less_en) if lm is not None else None
    limit = pair_limit([r for r in (en_row, tl_row) if r is not None], level)

    left, right = st.columns(2)
    for col, title, more, less, check, row, side in (
            (left, "English source", pair.sent_more_en, pair.sent_less_en, en_check, en_row, "en"),
            (right, f"Filipino ({benchmark})", pair.sent_more, pair.sent_less, tl_check, tl_row, "tl")):
        with col:
            st.markdown(f"#### {title}")
            st.markdown(f"- more-biased: {escape(more)}\n- less-biased: {escape(less)}")
            st.caption(f"Bias type: {escape(pair.bias_type)} · differs: {escape(check.describe())}")
            if not check.minimal:
                st.warning(f"Not a minimal pair: {escape(check.reason)}")
            if row is not None:
                draw_pair(row, level=level, limit=limit, key=f"tr_{side}", ranked=False, wrap=45)
            elif lm is not None and side == "tl":
                st.info(f"{model} has not scored {benchmark} yet.")
                if score_now(model, benchmark, key="tr_score_now"):
                    st.rerun()

    st.markdown("#### Your review")
    previous = store.get(benchmark, pair_id, reviewer) if reviewer.strip() else None
    form_key = f"tr_form_{benchmark}_{pair_id}_{reviewer.strip()}"
    with st.form(key=form_key):
        st.radio("Verdict", VERDICTS, horizontal=True, key=f"{form_key}_verdict",
                 index=VERDICTS.index(previous.verdict) if previous else 0)
        st.text_area("Note (optional)", value=previous.note if previous else "", max_chars=5000,
                     key=f"{form_key}_note")
        st.form_submit_button("Save review", type="primary", on_click=save_review,
                              args=(str(store.path), benchmark, pair_id, reviewer, form_key))
    flash = st.session_state.pop("tr_flash", None)
    if flash:
        (st.success if flash[0] == "success" else st.error)(flash[1])
    elif previous:
        st.caption(f"You reviewed this pair on {previous.updated_at}; saving again replaces your earlier review.")

st.markdown("#### Saved reviews")
verdict_filter = st.multiselect("Filter by verdict", VERDICTS, key="tr_verdicts")
table = reviews[reviews.verdict.isin(verdict_filter)] if verdict_filter else reviews
st.dataframe(table, hide_index=True, key="tr_reviews")
csv_download(table, f"reviews_{benchmark}.csv", label="Download reviews (CSV)", key="tr_csv")
