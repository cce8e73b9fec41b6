"""Across languages: one aligned set (the same source pairs in several languages) scored by one model — B per language
with its interval, one source pair in every language as b(u) heatmaps (right-to-left scripts drawn right to left;
modified units hatched grey), and two languages compared pair by pair like two models (McNemar, paired bootstrap,
the pairs whose verdicts differ). Drawing only: the numbers come from :func:`biascore.api.across_languages`. The
shipped ``demo-aligned`` set (6 pairs × 10 languages) is scored on a first visit, offline."""
from __future__ import annotations

import streamlit as st

from biascore import api
from views.kit.attribution import draw_pair, pair_limit
from views.kit.common import literal
from views.kit.drawn import draw_estimates, draw_paired_comparison, draw_table, level_toggle
from views.kit.models import get_handle, model_label, model_selector
from views.kit.scoring import run_with_progress, score_now_button

st.title("Across languages")
st.caption("The same stereotype in every language of an aligned set: is it carried the same way? Red units push "
           "the model toward the more-biased sentence; grey hatched units are the modified words (not scored).")
catalogue = api.benchmarks().set_index("name")
sets = {s: m for s, m in api.aligned_sets().items() if catalogue.loc[list(m.values()), "available"].all()}
set_name = st.selectbox("Aligned set", list(sets), index=list(sets).index("demo-aligned"), key="al_set")
members = sets[set_name]
first = catalogue.loc[next(iter(members.values()))]
st.caption(f"Licence: {first.licence}. Cite: {first.citation}.")
languages = st.multiselect("Languages", list(members), default=list(members), key=f"al_langs_{set_name}")
model = model_selector(key="model")
if not languages:
    st.stop()
names = dict.fromkeys(languages, model)
if st.toggle("A model per language", key="al_per_language"):
    names = {lang: model_selector(f"Model for {lang}", key=f"model_{lang}", default=model) for lang in languages}
handles = {lang: get_handle(name) for lang, name in names.items()}


def score(progress=False):
    return api.across_languages(set_name, handles, languages, progress=progress)


cached = all(api.run("attribution", handles[lang], members[lang], only_cached=True, progress=False) is not None
             for lang in languages)
shown = ", ".join(dict.fromkeys(map(model_label, names.values())))
text = f"Scoring {len(languages)} languages of {set_name} with {shown}"
out = score() if cached else run_with_progress(text, score) if set_name == "demo-aligned" else \
    score_now_button(f"Score {len(languages)} languages now", "al_score", text, score)
if out is None:
    st.stop()

st.subheader("B per language")
summary = out.summary()
draw_estimates(api.Estimates(summary.rename(columns={"language": "group", "score": "estimate", "ci_low": "low",
                                                    "ci_high": "high"}).assign(series=shown),
                             axis="B (% of pairs biased)", reference=50, reference_label="50 = unbiased",
                             range=(0, 100)), "al_b")
st.dataframe(summary, hide_index=True)

st.subheader("One source pair in every language")
keys = list(dict.fromkeys(k for lang in languages for k in out.frame(lang).source_id))
source = out.frame(languages[0]).set_index("source_id")
english = source.sent_more_en if "sent_more_en" in source else source.sent_more
key = st.selectbox("Source pair (its key)", keys, key="al_pair", format_func=lambda k: f"{k}: {english.get(k, '')}")
pair = out.pair(key).to_dict("records")
st.session_state.setdefault("al_level", "words")  # Thai and Chinese read as words; sub-word tokens one click away
level = level_toggle("al_level")
limit = pair_limit([p["row"] for p in pair if not p["missing"]], level)
for item in pair:
    with st.container(border=True):
        literal(f"{item['language']} · {item['benchmark']}")
        if item["missing"]:
            st.info(item["missing"])
        else:
            draw_pair(item["row"], level=level, limit=limit, key=f"al_{item['language']}", ranked=False, wrap=70)

st.subheader("Two languages, pair by pair")
a_col, b_col = st.columns(2)
lang_a = a_col.selectbox("Language A", languages, key="al_a")
lang_b = b_col.selectbox("Language B", languages, index=min(1, len(languages) - 1), key="al_b_lang")
if lang_a != lang_b:
    comparison = out.compare(lang_a, lang_b)
    draw_paired_comparison(api.PairedComparison(comparison.summary(), comparison.describe(),
                                                tuple(comparison.notes)), "al_cmp")
    draw_table(api.Table(comparison.discordant.rename(columns={"pair_id": "source_id"}),
                         f"Source pairs whose verdicts differ ({len(comparison.discordant)})", "discordant"), "al_disc")
for note in out.notes:
    st.caption(note)
