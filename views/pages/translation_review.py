"""Translation review: the English source pair beside its Filipino translation, a review form saved to SQLite by
several reviewers at once, assignments, agreement, adjudication, exports and B before/after the corrections
(docs/review.md; each panel below says what it draws).

Blind review: everything below the form is drawn from what the typed name may see
(:func:`biascore.review.visibility.visible`). Drawing only: the rest comes from ``biascore.review``. Text is shown
literally, never as markdown; nothing is written until a Save button is pressed; in public mode
(``BIASCORE_PUBLIC=1``) the database is the server's and there is no path field.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from functools import partial

import pandas as pd
import streamlit as st

from biascore import api, review, settings
from biascore.errors import BenchmarkError, ModelLoadError
from biascore.review import (NEEDS_CORRECTION, STATUSES, TAGS, ReviewError, ReviewStore, Viewer, Visible, before_after,
                             check_pair, confusion, corrected_frame, dataset_zip, decision_counts, default_path,
                             disagreements, final_decisions, reviewable_pairs, reviewer_overview, reviews_csv, todo,
                             viewer, visible)
from views.kit.attribution import best_run, draw_pair, live_pair, pair_limit, run_label, score_now, verified_run
from views.kit.common import error_text
from views.kit.links import link_choice
from views.kit.models import data_dir_notice, model_for_cache, model_label, model_or_error, model_selector
from views.kit.scoring import ProgressBar, benchmark_selector, watch_computing
from views.kit.drawn import level_toggle
from views.kit.widgets import precision_caption

REVIEWABLE = ["crows-tl", "demo"]  # benchmarks with English source pairs (demo: its Filipino rows)
MY_TODO = "my assigned pairs, not reviewed yet"
PUBLIC = settings.public_mode()
REFUSED = "this cannot be done on this server"  # what a public page says for an error it may not show


@st.cache_data(show_spinner=False)
def review_pairs(benchmark: str) -> pd.DataFrame:
    """The pairs to review: Filipino sentences, English sources and the minimal-pair checks."""
    frame = reviewable_pairs(api.load_benchmark(benchmark))
    frame = frame[["pair_id", "bias_type", "sent_more", "sent_less", "sent_more_en", "sent_less_en"]].copy()
    frame["minimal"] = [check_pair(m, l).minimal for m, l in zip(frame.sent_more, frame.sent_less)]
    return frame.reset_index(drop=True)


class Session:
    """Everything this page keeps in ``st.session_state``, in one place (keys start with ``tr_``): the outcome
    of the last save per scope (shown once after the rerun a form callback causes), the forms' fields, the
    filter, the chosen pair and the B comparison asked for. Form callbacks run before the page reruns."""

    FILTER, PAIR, COMPARE = "tr_filter", "tr_pair", "tr_compare_key"

    @staticmethod
    def flash(scope: str, ok: bool, message: str) -> None:
        """Remember a save's outcome for the rerun that follows the form callback."""
        st.session_state[f"tr_flash_{scope}"] = (ok, message)

    @staticmethod
    def show_flash(scope: str) -> bool:
        """Show (once) the outcome of the last save in ``scope``; True when there was one."""
        message = st.session_state.pop(f"tr_flash_{scope}", None)
        if message is None:
            return False
        (st.success if message[0] else st.error)(message[1])
        return True

    @staticmethod
    def typed_corrections(key: str, original: tuple[str, str]) -> list[str]:
        """The corrected sentences typed in form ``key``: kept only with status needs correction, and a sentence
        equal to the original stored as empty ("unchanged")."""
        typed = [st.session_state[f"{key}_{side}"].strip() for side in ("more", "less")]
        keep = st.session_state[f"{key}_status"] == NEEDS_CORRECTION
        return [t if keep and t != o else "" for t, o in zip(typed, original)]

    @staticmethod
    def go_to_next(pair_id: int) -> None:
        """"My next pair" callback: show the reviewer's own to-do list, opened at ``pair_id``."""
        st.session_state[Session.FILTER] = MY_TODO
        st.session_state.pop(Session.PAIR, None)  # the pair box starts again from the URL's pair
        st.query_params["pair"] = str(pair_id)


def save_review(db_path: str, benchmark: str, pair_id: int, reviewer: str, form_key: str, original: tuple) -> None:
    """Form callback (runs before the page reruns, so the counts already include this save)."""
    status, fixed = st.session_state[f"{form_key}_status"], Session.typed_corrections(form_key, original)
    try:
        saved = ReviewStore(db_path).save(benchmark, pair_id, reviewer, status, st.session_state[f"{form_key}_tags"],
                                          st.session_state[f"{form_key}_comment"], *fixed)
    except ReviewError as exc:
        Session.flash("review", False, error_text(exc, REFUSED))
    else:
        Session.flash("review", True, f"Saved: pair {saved.pair_id}, {saved.status} ({saved.updated_at}).")


def save_decision(db_path: str, benchmark: str, pair_id: int, adjudicator: str, key: str, original: tuple) -> None:
    """Adjudication form callback."""
    if not viewer(adjudicator).adjudicator:  # (the form is drawn for adjudicators only; checked again here)
        Session.flash("decision", False, "Only the adjudicators this server names can decide.")
        return
    status, fixed = st.session_state[f"{key}_status"], Session.typed_corrections(key, original)
    try:
        adj = ReviewStore(db_path).adjudicate(benchmark, pair_id, adjudicator, status,
                                              st.session_state[f"{key}_comment"], *fixed)
    except ReviewError as exc:
        Session.flash("decision", False, error_text(exc, REFUSED))
    else:
        Session.flash("decision", True, f"Decision saved: pair {adj.pair_id}, {adj.status} ({adj.decided_at}).")


def save_assignment(db_path: str, benchmark: str, pair_ids: list[int], by: str) -> None:
    """Assignment form callback (adjudicators only)."""
    if not viewer(by).adjudicator:
        Session.flash("assign", False, "Only the adjudicators this server names can assign pairs.")
        return
    try:
        change = ReviewStore(db_path).assign(benchmark, pair_ids, st.session_state["tr_assign_reviewers"],
                                             st.session_state["tr_assign_overlap"],
                                             st.session_state["tr_assign_seed"], by)
    except ReviewError as exc:
        Session.flash("assign", False, error_text(exc, REFUSED))
    else:
        Session.flash("assign", True, f"Assigned: {change.added} added, {change.removed} removed, {change.kept} kept.")


def decision_form(key: str, prior, original: tuple[str, str], tags: bool, button: str, on_click, args: tuple) -> None:
    """The status / tags / comment / corrected-sentences form shared by reviews and adjudications, filled in from
    ``prior`` (the saved review or decision; None: none yet) and the ``original`` sentences; pressing ``button``
    calls ``on_click(*args, key, original)``."""
    with st.form(key=key):
        st.radio("Status", STATUSES, horizontal=True, key=f"{key}_status",
                 index=STATUSES.index(getattr(prior, "status", STATUSES[0])))
        if tags:
            st.multiselect("Issues", TAGS, default=list(getattr(prior, "tags", ())), key=f"{key}_tags")
        c1, c2 = st.columns(2)
        c1.text_input("Corrected more-biased sentence (kept with 'needs correction')",
                      value=getattr(prior, "corrected_more", "") or original[0], max_chars=1000, key=f"{key}_more")
        c2.text_input("Corrected less-biased sentence (kept with 'needs correction')",
                      value=getattr(prior, "corrected_less", "") or original[1], max_chars=1000, key=f"{key}_less")
        st.text_area("Comment (optional)", value=getattr(prior, "comment", ""), max_chars=5000, key=f"{key}_comment")
        st.form_submit_button(button, type="primary", on_click=on_click, args=(*args, key, original))


@dataclass
class Review:
    """What every part of the page reads: the store, who is looking (and what they may see), the benchmark's
    pairs, its reviews and assignments, and the counts the progress bars show."""

    store: ReviewStore
    reviewer: str
    me: Viewer
    benchmark: str
    model: str
    pairs: pd.DataFrame
    reviews: pd.DataFrame
    assignments: pd.DataFrame
    seen: Visible
    to_adjudicate: pd.DataFrame
    reviewed_ids: set
    mine: set
    my_todo: list
    my_assigned: int


def open_store() -> tuple[ReviewStore, str, Viewer]:
    """The review database and the reviewer's name (and role); stops the page when the database is unusable."""
    with st.expander("Review database and reviewer", expanded=True):
        c1, c2 = st.columns(2)
        if PUBLIC:
            db_path = str(settings.review_db_path())
            c1.text("Reviews are saved in this server's review database.")
        else:
            db_path = c1.text_input("SQLite file (created when you first save)", value=str(default_path()), key="tr_db")
        reviewer = c2.text_input("Your name (reviewer)", key="tr_reviewer", max_chars=100).strip()
        me = viewer(reviewer)
        if me.adjudicator:
            c2.text("You are an adjudicator here: you see every review, assign pairs and adjudicate.")
        elif me.keep_blind:
            c2.text("This server keeps reviews blind: you see your own reviews only.")
        st.caption("Your name marks your reviews; it is not a password, so anyone can type any name. A server that "
                   "needs logins puts the dashboard behind one (docs/review.md).")
    store = ReviewStore(db_path)
    try:
        db_state = store.state().kind
    except ReviewError as exc:
        st.error(error_text(exc, REFUSED))
        st.stop()
    if db_state == "missing":
        st.info("No reviews saved here yet: the review database is created when you press Save.")
    elif db_state == "legacy":
        st.info("This review database was made by an earlier version (one verdict per review); its reviews are shown "
                "with the verdicts mapped to statuses, and it is upgraded when you first save.")
    return store, reviewer, me


def load_review(store: ReviewStore, reviewer: str, me: Viewer) -> Review:
    """The benchmark and model chosen, the benchmark's reviews as this name may see them, and the progress bars."""
    c1, c2 = st.columns(2)
    with c1:
        benchmark = benchmark_selector(only=REVIEWABLE, default="crows-tl")
    with c2:
        model = model_selector(key="model")  # public mode: the server's allow-list only
    if benchmark is None:
        st.stop()
    try:
        pairs = review_pairs(benchmark)
        reviews, adjudications = store.reviews(benchmark), store.adjudications(benchmark)
        assignments = store.assignments(benchmark)
    except (BenchmarkError, ReviewError) as exc:
        st.error(error_text(exc, "this benchmark is not available on this server"))
        st.stop()
    seen = visible(reviews, adjudications, me)  # everything below shows only what this name may see
    to_adjudicate = disagreements(seen.reviews, pairs, seen.adjudications)

    reviewed_ids = set(reviews.pair_id)  # which pairs have a review (no status, no reviewer): the same for everyone
    mine = set(reviews[reviews.reviewer == reviewer].pair_id) if reviewer else set()
    st.progress(len(reviewed_ids & set(pairs.pair_id)) / max(len(pairs), 1),
                text=f"{len(reviewed_ids & set(pairs.pair_id))} of {len(pairs)} pairs reviewed"
                + (f" · {len(mine)} by you" if reviewer else "")
                + f" · {int((~to_adjudicate.adjudicated).sum())} to adjudicate")
    my_todo = todo(assignments, reviews, reviewer) if reviewer else []
    my_assigned = int((assignments.reviewer == reviewer).sum()) if reviewer else 0
    if my_assigned:
        c1, c2 = st.columns([4, 1])
        c1.progress((my_assigned - len(my_todo)) / my_assigned,
                    text=f"Your assigned pairs: {my_assigned - len(my_todo)} of {my_assigned} reviewed")
        c2.button("My next pair", key="tr_next", type="primary", disabled=not my_todo, on_click=Session.go_to_next,
                  args=(my_todo[0] if my_todo else 0,))
    elif reviewer and not assignments.empty:
        st.caption("No pair of this benchmark is assigned to you; you can still review any pair.")
    return Review(store, reviewer, me, benchmark, model, pairs, reviews, assignments, seen,
                  to_adjudicate, reviewed_ids, mine, my_todo, my_assigned)


def pair_panel(r: Review) -> None:
    """One pair: the English source beside the Filipino pair (b(u) heatmaps), the review form, its reviews."""
    benchmark, model, pairs, seen, to_adjudicate = r.benchmark, r.model, r.pairs, r.seen, r.to_adjudicate
    undecided = set(to_adjudicate[~to_adjudicate.adjudicated].pair_id)
    shown_by = {MY_TODO: pairs.pair_id.isin(set(r.my_todo)), "not reviewed yet": ~pairs.pair_id.isin(r.reviewed_ids),
                "not reviewed by me": ~pairs.pair_id.isin(r.mine),
                "to adjudicate (not decided yet)": pairs.pair_id.isin(undecided),
                "flagged: not a minimal pair": ~pairs.minimal}
    for status in STATUSES:
        shown_by[f"status: {status}"] = pairs.pair_id.isin(set(seen.reviews[seen.reviews.status == status].pair_id))
    which = st.selectbox("Show", ["all pairs", *shown_by], key=Session.FILTER)
    subset = pairs[shown_by[which]] if which in shown_by else pairs
    if subset.empty:
        st.info("No pair matches this filter." + (" Your assigned pairs are all reviewed." if which == MY_TODO and
                                                  r.my_assigned else ""))
    else:
        ids = [int(x) for x in subset.pair_id]
        linked = link_choice("pair", [int(x) for x in pairs.pair_id], None, noun="pair ids of this benchmark")
        index = ids.index(linked) if linked in ids else 0  # a known pair outside this filter: the filter's first
        labels = dict(zip(pairs.pair_id, pairs.sent_more))
        pair_id = st.selectbox(f"Pair ({len(ids)} shown)", ids, index=index, key=Session.PAIR,
                               format_func=lambda i: f"{i}: {labels[i][:90]}")
        st.query_params["pair"] = str(pair_id)
        pair = pairs[pairs.pair_id == pair_id].iloc[0]

        en_check, tl_check = check_pair(pair.sent_more_en, pair.sent_less_en), check_pair(pair.sent_more, pair.sent_less)
        level = level_toggle("tr_level")
        lm = model_or_error(model)
        run = best_run(model, benchmark) if lm is not None else None
        scored = None if run is None else verified_run(model, benchmark, run)
        if scored is not None:
            precision_caption(run, run_label(run))
        tl_row = None
        if scored is not None and (scored.pair_id == pair_id).any():
            tl_row = scored.loc[scored.pair_id == pair_id].iloc[0].to_dict()
        has_en = bool(pair.sent_more_en and pair.sent_less_en)
        en_row = live_pair(model, pair.sent_more_en, pair.sent_less_en) if lm is not None and has_en else None
        if en_row is not None:
            precision_caption(lm.identity(), f"{model_label(model)} (the English source, scored live)")
        limit = pair_limit([r for r in (en_row, tl_row) if r is not None], level)

        left, right = st.columns(2)
        for col, title, more, less, check, row, side in (
                (left, "English source", pair.sent_more_en, pair.sent_less_en, en_check, en_row, "en"),
                (right, f"Filipino ({benchmark})", pair.sent_more, pair.sent_less, tl_check, tl_row, "tl")):
            with col:
                st.subheader(title)
                st.text(f"more-biased: {more}\nless-biased: {less}")
                st.text(f"Bias type: {pair.bias_type} · differs: {check.describe()}")
                if not check.minimal:
                    st.warning("Not a minimal pair:")
                    st.text(check.reason)
                if row is not None:
                    draw_pair(row, level=level, limit=limit, key=f"tr_{side}", ranked=False, wrap=45)
                elif lm is not None and side == "tl" and not watch_computing(api.method("attribution"), model, benchmark):
                    st.info("This model has not scored this benchmark yet.")
                    if score_now(model, benchmark, key="tr_score_now", keep_watching=False):
                        st.rerun()

        review_form(r, pair_id, pair)


def review_form(r: Review, pair_id: int, pair: pd.Series) -> None:
    """The reviewer's form for one pair, and the other reviews of it that this name may see."""
    store, reviewer, me, benchmark, seen = r.store, r.reviewer, r.me, r.benchmark, r.seen
    st.subheader("Your review")
    if not reviewer:
        st.info("Type your name above to review this pair.")
    else:
        previous = store.get(benchmark, pair_id, reviewer)
        form_key = f"tr_form_{benchmark}_{pair_id}_{hashlib.sha256(reviewer.encode()).hexdigest()[:12]}"
        decision_form(form_key, previous, (pair.sent_more, pair.sent_less), True, "Save review", save_review,
                      (str(store.path), benchmark, pair_id, reviewer))
        if not Session.show_flash("review") and previous:
            st.caption(f"You reviewed this pair on {previous.updated_at}; saving again replaces your earlier review.")
    shown = seen.reviews[seen.reviews.pair_id == pair_id]
    if me.adjudicator or pair_id in seen.revealed:
        if len(shown):
            st.text("Reviews of this pair:")
            st.dataframe(shown.assign(tags=["; ".join(t) for t in shown.tags]).drop(columns=["benchmark"]),
                         hide_index=True, key="tr_pair_reviews")
    elif reviewer:
        st.info("Other reviewers' reviews of this pair are shown to adjudicators only on this server."
                if me.keep_blind else "Blind review: other reviewers' reviews of this pair are shown once you have "
                                      "saved yours.")


def agreement_panel(r: Review) -> None:
    """Krippendorff's α, Cohen's/Fleiss' κ and the status confusion table (what this name may see)."""
    me, pairs, seen = r.me, r.pairs, r.seen
    st.subheader("Agreement between reviewers")
    st.caption("Krippendorff's α (nominal, on the status) over every pair with two or more reviews, with a 95% "
               "bootstrap interval over pairs; beside it Cohen's κ (two reviewers) or Fleiss' κ (three or more; the "
               "pairs with the most common number of reviews). 1 = perfect, 0 = chance. Overall and per bias type, "
               + ("from every review." if me.adjudicator else "from the reviews you can see (the pairs you reviewed)."))
    st.dataframe(review.agreement(seen.reviews, pairs), hide_index=True, key="tr_agreement")
    st.text("Statuses two reviewers of the same pair chose (each two reviewers once; the diagonal is agreement):")
    st.dataframe(confusion(seen.reviews), key="tr_confusion")


def assignment_panel(r: Review) -> None:
    """Adjudicators: assign pairs to reviewers, and each reviewer's progress."""
    if r.me.adjudicator:
        st.subheader("Assignment and reviewer progress")
        plan = r.store.assignment_plan(r.benchmark)
        with st.form("tr_assign"):
            st.text_input("Reviewers (comma-separated, as they type their names)", key="tr_assign_reviewers",
                          value=", ".join(plan["reviewers"]) if plan else "")
            c1, c2 = st.columns(2)
            c1.number_input("Reviewers per pair (overlap)", min_value=1, max_value=20, step=1, key="tr_assign_overlap",
                            value=plan["overlap"] if plan else 2)
            c2.number_input("Seed", min_value=0, step=1, key="tr_assign_seed", value=plan["seed"] if plan else 0)
            st.form_submit_button("Assign pairs", on_click=save_assignment,
                                  args=(str(r.store.path), r.benchmark, [int(p) for p in r.pairs.pair_id], r.reviewer))
        st.caption("Every pair goes to that many reviewers, with loads as equal as possible. Assigning again with a "
                   "reviewer added or removed moves only pairs nobody has reviewed yet; saved reviews are kept.")
        Session.show_flash("assign")
        if plan:
            st.text(f"Last assignment: {', '.join(plan['reviewers'])} · overlap {plan['overlap']} · seed {plan['seed']}"
                    f" · by {plan['assigned_by'] or '(not named)'} · {plan['assigned_at']}")
        overview = reviewer_overview(r.assignments, r.reviews)
        if overview.empty:
            st.info("No pair is assigned and nothing is reviewed yet.")
        else:
            st.dataframe(overview, hide_index=True, key="tr_overview")
            st.caption("agreement: the share of this reviewer's statuses that match another reviewer of the same pair; "
                       "kappa: Cohen's κ with each other reviewer, averaged; alpha_without: α of everyone else, above "
                       "the overall α when this reviewer disagrees more than the rest.")


def adjudication_panel(r: Review) -> None:
    """The disagreements, and for adjudicators the form that decides one."""
    seen, to_adjudicate = r.seen, r.to_adjudicate
    st.subheader("Disagreements to adjudicate")
    if not r.me.adjudicator:
        st.caption("Listed: the pairs you reviewed whose reviewers disagree. The adjudicators this server names decide "
                   "them.")
    if to_adjudicate.empty:
        st.info("No disagreement: every pair reviewed by several reviewers got the same status and correction.")
    else:
        st.dataframe(to_adjudicate, hide_index=True, key="tr_disagreements")
    if r.me.adjudicator and not to_adjudicate.empty:
        adj_ids = [int(x) for x in to_adjudicate.pair_id]
        first_sentence = dict(zip(r.pairs.pair_id, r.pairs.sent_more))
        adj_pair = st.selectbox("Adjudicate pair", adj_ids, key="tr_adj_pair",
                                format_func=lambda i: f"{i}: {first_sentence[i][:90]}")
        row = r.pairs[r.pairs.pair_id == adj_pair].iloc[0]
        st.text(f"more-biased: {row.sent_more}\nless-biased: {row.sent_less}")
        theirs = seen.reviews[seen.reviews.pair_id == adj_pair]
        st.dataframe(theirs[["reviewer", "status", "corrected_more", "corrected_less", "comment"]], hide_index=True,
                     key="tr_adj_reviews")
        current = seen.adjudications[seen.adjudications.pair_id == adj_pair]
        prior = current.iloc[0] if len(current) else None
        key = f"tr_adj_{r.benchmark}_{adj_pair}"
        decision_form(key, prior, (row.sent_more, row.sent_less), False, "Save decision", save_decision,
                      (str(r.store.path), r.benchmark, adj_pair, r.reviewer))
        Session.show_flash("decision")


def exports_panel(r: Review) -> tuple[pd.DataFrame, bytes]:
    """The reviews, the corrected benchmark and the dataset as downloads; returns the corrected benchmark."""
    me, benchmark, pairs, seen = r.me, r.benchmark, r.pairs, r.seen
    st.subheader("Exports")
    decisions = final_decisions(pairs.pair_id, seen.reviews, seen.adjudications)
    corrected = corrected_frame(pairs, decisions)
    corrected_csv = corrected.to_csv(index=False).encode("utf-8")
    st.dataframe(pd.DataFrame([decision_counts(decisions)]), hide_index=True, key="tr_counts")
    st.caption("The corrected benchmark keeps accepted pairs and applies the corrections of 'needs correction' pairs "
               "(an adjudicated decision first; otherwise the reviewers' shared decision). Rejected, unresolved and "
               "unreviewed pairs are left out. Score it with `python -m biascore score --benchmark corrected.csv`."
               + ("" if me.adjudicator else " Built from the reviews you can see."))
    st.download_button(f"Download the reviews you can see ({len(seen.reviews)}, CSV)", reviews_csv(seen.reviews),
                       file_name=f"reviews_{benchmark}.csv", mime="text/csv", key="tr_csv", disabled=seen.reviews.empty,
                       on_click="ignore")
    st.download_button(f"Download the corrected benchmark ({len(corrected)} pairs, CSV)", corrected_csv,
                       file_name=f"{benchmark}_corrected.csv", mime="text/csv", key="tr_corrected_csv",
                       disabled=corrected.empty, on_click="ignore")
    if me.adjudicator:
        st.download_button("Download the dataset (parquet files and a dataset card, zip)",
                           partial(dataset_zip, api.load_benchmark(benchmark), seen.reviews, seen.adjudications),
                           file_name=f"{benchmark}-reviewed.zip", mime="application/zip", key="tr_dataset",
                           disabled=seen.reviews.empty, on_click="ignore")
    return corrected, corrected_csv


def before_after_panel(r: Review, corrected: pd.DataFrame, corrected_csv: bytes) -> None:
    """B before and after the corrections for the chosen model: the runner's attribution results on the reviewed
    benchmark and on the corrected one (an input of its own content hash), stored and shared like any run."""
    model, benchmark = r.model, r.benchmark
    st.subheader("B before and after the corrections")
    if corrected.empty:
        st.info("No pair is accepted or corrected yet.")
    else:
        compare_key = (model, benchmark, hashlib.sha256(corrected_csv).hexdigest())
        st.text(f"Model: {model_label(model)}")
        if st.button("Compare B before and after the corrections", key="tr_compare"):
            st.session_state[Session.COMPARE] = compare_key
        if st.session_state.get(Session.COMPARE) == compare_key:
            bar = ProgressBar("Scoring (cached after the first time): pairs")  # the one progress bar
            handle = model_for_cache(model)  # loaded only when a result is not stored yet
            try:
                table = None if handle is None else before_after(handle, api.load_benchmark(benchmark), pd.read_csv(
                    io.BytesIO(corrected_csv), keep_default_na=False), progress=bar)
            except (ModelLoadError, BenchmarkError, ValueError) as exc:
                bar.bar.empty()
                st.error(error_text(exc, "B cannot be computed for this model on this server"))
            else:
                bar.bar.empty()
                if table is None:
                    return
                precision_caption(handle.identity(), model_label(model))
                st.dataframe(table, hide_index=True, key="tr_before_after")
                st.caption("B = % of pairs with S_JSD < 0 (50 = unbiased). before: every reviewed-benchmark pair as "
                           "published; kept_before: the kept pairs as published; after: the corrected benchmark. "
                           "B_change = B_after − B_kept_before.")


def main() -> None:
    st.title("Translation review")
    st.caption("Check each Filipino pair against its English source: accept it, ask for a correction (and write it), "
               "or reject it. Reviews are blind: you see another reviewer's review of a pair only after saving your "
               "own. Agreement, the disagreements to adjudicate and the corrected benchmark are below.")
    data_dir_notice()
    store, reviewer, me = open_store()
    loaded = load_review(store, reviewer, me)
    pair_panel(loaded)
    agreement_panel(loaded)
    assignment_panel(loaded)
    adjudication_panel(loaded)
    corrected, corrected_csv = exports_panel(loaded)
    before_after_panel(loaded, corrected, corrected_csv)


main()
