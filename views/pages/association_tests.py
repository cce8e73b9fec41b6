"""Association tests: WEAT/SEAT and CEAT effect sizes, masked-LM log-probability bias (draws only)."""
from __future__ import annotations

import altair as alt
import pandas as pd
import streamlit as st

from biascore.runs import runner
from biascore import api
from biascore.display import code_span
from biascore.errors import one_line
from views.kit.common import csv_download
from views.kit.drawn import draw_estimates
from views.kit.links import keep, link_choice
from views.kit.models import (active_snapshot, data_dir_notice, model_for_cache, model_label, model_selector, served,
                          served_refusal)
from views.kit.scoring import score_now_button
from views.kit.widgets import option_inputs, precision_caption

LANGUAGES = {"English": "en", "Bangla": "bn"}
#: the log-probability method's drawing helpers: its tests and each sentence's prior against its corrected score
LOGPROB = api.method("logprob").drawing

st.title("Association tests")
st.caption("WEAT/SEAT (Caliskan et al.; May et al.) with one-sided permutation p-values, CEAT with a "
           "random-effects combined effect size (Guo & Caliskan) across segment lengths, and the "
           "log-probability bias of masked LMs (Kurita et al.) across sentence structures S1–S5 "
           "(Bangla context-length paper).")
data_dir_notice()

model_name = model_selector(scorer=("seat", "ceat", "logprob"))
language = LANGUAGES[st.radio("Language", list(LANGUAGES), horizontal=True, key="assoc_language")]
ALPHAS = [0.001, 0.005, 0.01, 0.05, 0.1]
alpha = st.select_slider("Significance level", ALPHAS, key="assoc_alpha",
                         value=link_choice("alpha", ALPHAS, 0.05, noun="significance levels", control="assoc_alpha"))
keep("alpha", alpha, default=0.05)


def _collect(method: str, options: dict, names: list[str], key: str | None, label: str,
             stored: bool = False) -> pd.DataFrame | None:
    """The results of the registered ``method`` with ``options`` for the tests ``names`` (their frames stacked;
    ``stored``: the stored frames), asked of the runner's door; while some test has none, above them the "Score
    now" button ``key`` (None: no button, cached results only) that computes those (one progress bar over all)."""

    def run(lm, name, **kwargs):
        return runner.run(api.method(method), lm, name, **options, **kwargs)

    lm = model_for_cache(model_name)  # a handle: cached results are read without loading; Score now loads
    if lm is None:
        return None
    frames, labelled, missing = [], stored, []  # the stored frames are a second read of the same results: labelled once
    for name in names:
        try:
            result = run(lm, name, only_cached=True)
        except (ValueError, FileNotFoundError) as exc:
            st.error(f"{code_span(name)}: {one_line(exc)}")
            continue
        if result is None:
            missing.append(name)
        else:
            frames.append(result.stored if stored else result.summary())
            labelled = labelled or precision_caption(result, model_label(model_name))

    def run_all(progress) -> bool:  # True when every missing test was computed (the page then redraws)
        failed = []
        for i, name in enumerate(missing):
            try:
                run(lm, name, progress=lambda done, total, i=i: progress(i * total + done, len(missing) * total))
            except (ValueError, FileNotFoundError) as exc:
                st.error(f"{code_span(name)}: {one_line(exc)}")
                failed.append(name)
        return not failed

    if key is not None and missing and score_now_button("Score now", key, f"{label}:", run_all):
        st.rerun()
    return pd.concat(frames, ignore_index=True) if frames else None


def _show_table(result: pd.DataFrame | None, name: str, empty: str, group: str = "test", series: str | None = None,
                axis: str = "effect size d, 95% bootstrap interval (approximate)") -> pd.DataFrame | None:
    """The results with significance marks (p < alpha), a CSV download and their intervals, or a Score now hint."""
    if result is None:
        hint = "they are not in this read-only snapshot" if active_snapshot() else "press **Score now**"
        st.info(f"No cached {empty} results for this model and these settings yet: {hint}.")
        return None
    shown = result.copy()
    shown.insert(shown.columns.get_loc("p_value") + 1, "significant",
                 (shown["p_value"] < alpha).map({True: f"yes (p < {alpha:g})", False: "no"}))
    st.dataframe(shown, hide_index=True, key=f"{name}_table")
    csv_download(shown, f"association_{name}.csv", key=f"{name}_csv")
    draw_estimates(api.Estimates(pd.DataFrame({"group": shown[group], "series": shown[series] if series else "",
        "estimate": shown["effect_size"], "low": shown["effect_size_low"], "high": shown["effect_size_high"]}),
        axis=axis, reference=0, reference_label="0 = no association"), f"{name}_interval")
    return shown


tab_seat, tab_ceat, tab_logprob = st.tabs(["WEAT / SEAT", "CEAT", "Log-probability bias"])

with tab_seat:
    tests = api.list_seat_tests(language=language)
    # the paper's SEAT tests when downloaded, else the shipped WEAT 6 (a bare clone)
    default = [t for t in ("sent-weat6", "sent-weat7", "sent-weat8", "bangla-c5") if t in tests][:3] \
        or [t for t in ("demo-weat6",) if t in tests]
    chosen = st.multiselect("Tests", tests, default=default, key="seat_tests",
                            help="sentence tests (sent-*, Heilman) embed sentences (SEAT); the others embed words (WEAT)")
    seat_options = option_inputs(api.method("seat"), key="seat", only=("pooling", "word_mode"), columns=2)
    if not served_refusal(model_name, api.method("seat")):
        result = None if seat_options is None else _collect("seat", seat_options.as_dict(), chosen, "seat_score",
                                                             "Embedding")
        _show_table(result, "seat", "WEAT/SEAT")

with tab_ceat:
    tests = api.list_seat_tests(language=language, kind="words")
    default = [t for t in ("weat6", "bangla-c5") if t in tests]
    chosen = st.multiselect("Tests", tests, default=default, key="ceat_tests")
    c1, c2, c3 = st.columns(3)
    lengths = c1.multiselect("Segment lengths (words)", ["9", "25", "75", "all"], default=["9", "25", "75", "all"],
                             key="ceat_lengths")
    n_contexts = c2.number_input("Contexts per word (N)", 2, 5000, 20, key="ceat_n")
    n_draws = c3.number_input("Random draws", 10, 100_000, 500, step=100, key="ceat_draws")
    st.caption("Contexts come from the Bangla sample corpus (Bangla) or the CrowS-Pairs sentences (English); "
               "Bangla words are matched with their suffixes. Words absent from the corpus are left out.")
    segs = [None if x == "all" else int(x) for x in sorted(lengths, key=lambda v: (v == "all", int(v) if v != "all" else 0))]
    result = None
    if not served_refusal(model_name, api.method("ceat")) and segs:
        result = _collect("ceat", {"segment_lengths": tuple(segs), "n_contexts": int(n_contexts), "draws": int(n_draws)},
                          chosen, "ceat_score", "CEAT")
    if not served(model_name):
        _show_table(result, "ceat", "CEAT", "segment_length", "test", "CES per segment length (words), 95% "
                    "random-effects interval")

with tab_logprob:
    tests = LOGPROB.tests(language)
    chosen = st.multiselect("Tests", tests, default=tests[:1], key="logprob_tests")
    st.caption("Needs a masked LM. score = log(p_tgt / p_prior); effect size of the two target groups per "
               "sentence structure (English: template T1…; Bangla: structures S1–S5).")
    refused = served_refusal(model_name, api.method("logprob"))
    table = None if refused else _collect("logprob", {}, chosen, "logprob_score", "Masked sentences")
    scores = None if table is None else _collect("logprob", {}, chosen, None, "", stored=True)
    parts = [] if scores is None else [(LOGPROB.load_test(n), scores[scores["test"] == n]) for n in chosen]
    if not refused and _show_table(table, "logprob", "log-probability", "structure", "test") is not None \
            and scores is not None:
        csv_download(scores, "association_logprob_scores.csv", label="Download per-sentence scores",
                     key="logprob_scores_csv")
        skipped = int((scores["skipped_reason"] != "").sum())
        if skipped:
            st.warning(f"{skipped} scored sentences were longer than the model accepts and were left out.")
        st.subheader("Prior vs corrected bias per sentence structure")
        st.caption("Each point is one attribute: prior bias = mean log p_prior(X) − mean log p_prior(Y); "
                   "corrected bias = mean score(X) − mean score(Y) (the Bangla paper's Figure 2).")
        for test, own in parts:
            points = LOGPROB.prior_vs_corrected(own, test)
            chart = alt.Chart(points).mark_circle(opacity=0.6).encode(
                x=alt.X("prior_bias:Q", title="prior bias score"),
                y=alt.Y("corrected_bias:Q", title="corrected bias score"), color="attribute_group:N",
                tooltip=["structure", "attribute", "attribute_group", "prior_bias", "corrected_bias"],
            ).properties(width=220, height=220).facet(column=alt.Column("structure:N", title=test.name))
            st.altair_chart(chart)
