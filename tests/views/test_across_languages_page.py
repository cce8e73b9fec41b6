"""AppTest of the Across languages page on a bare data directory: the shipped demo-aligned set with the embedded
default model, the languages not stored yet scored on the first visit (a cache of the test's own, holding the
session's scores of nine languages, :func:`demo_aligned_scores`: Arabic is scored by the page; all ten live on an
empty cache is the bare clone's walk, tests/views/test_e2e_bare_clone.py), and the numbers shown are the engine's."""
from __future__ import annotations

import json

import pytest

from biascore import api
from biascore.store.cache import ResultCache
from tests.conftest import copy_stored
from tests.views.test_dashboard_pages import frame_with, open_page

LANGS = ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]


@pytest.fixture
def bare_data(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASCORE_DATA_DIR", str(tmp_path / "empty"))


def test_demo_aligned_set_in_ten_languages_with_the_engines_numbers(bare_data, smollm, private_cache,
                                                                   demo_aligned_scores):
    stored = demo_aligned_scores["scores"].results
    copy_stored([stored[lang] for lang in LANGS if lang != "ar"], demo_aligned_scores["cache"], private_cache)
    at = open_page("across_languages")
    assert not at.error, [e.value for e in at.error]
    runs = {e["input"] for e in ResultCache(private_cache).entries("attribution")}
    assert runs == {f"demo-aligned-{lang}" for lang in LANGS}, runs  # Arabic's stored by the page
    expected = api.across_languages("demo-aligned", "smollm2-135m", progress=False)
    shown = frame_with(at, "n_skipped")
    assert list(shown.language) == LANGS
    assert shown.score.tolist() == pytest.approx(expected.summary().score.tolist(), nan_ok=True)
    assert shown.set_index("language").loc["id", "n_skipped"] == 1  # the identical Indonesian pair, with its reason
    charts = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    heatmaps = [c for c in charts if c["layout"].get("xaxis", {}).get("visible") is False]
    assert len(charts) == 11 and len(heatmaps) == 10  # B per language; the first source pair in every language
    rtl = [h["layout"]["xaxis"]["autorange"] == "reversed" for h in heatmaps]
    assert rtl == [lang == "ar" for lang in LANGS]  # Arabic drawn right to left, the others left to right
    thai = [t for trace in heatmaps[LANGS.index("th")]["data"] for t in trace["text"]]
    assert all(t.strip() for t in thai) and any(len(t) > 1 for t in thai)  # Thai units: words/tokens, not letters
    comparison = expected.compare("ar", "de")
    table = frame_with(at, "mcnemar_p").set_index("bias_type").loc["all"]
    assert (table.n, table.a_only, table.b_only) == tuple(comparison.summary().set_index("bias_type").loc[
        "all", ["n", "a_only", "b_only"]])


def test_a_model_per_language(bare_data, smollm, random_mlm, demo_scores, demo_aligned_scores):
    """"A model per language": Arabic scored by the masked model, the rest by SmolLM2 (the session's scores)
    — the numbers shown are the engine's for exactly that {language: model}."""
    at = open_page("across_languages")
    at.toggle(key="al_per_language").set_value(True).run()
    ar = at.selectbox(key="model_ar_select")
    assert ar.value == "smollm2-135m"
    ar.set_value("other…").run()
    at.text_input(key="model_ar_custom").set_value(random_mlm.name).run()
    at.run()
    assert not at.exception and not at.error, [e.value for e in at.exception] + [e.value for e in at.error]
    models = {lang: random_mlm if lang == "ar" else smollm for lang in LANGS}
    expected = api.across_languages("demo-aligned", models, progress=False).summary()
    shown = frame_with(at, "n_skipped")
    assert shown.score.tolist() == pytest.approx(expected.score.tolist(), nan_ok=True)
    both = api.across_languages("demo-aligned", models, progress=False)
    first = both.frame("ar").source_id.iloc[0]  # the source pair the page opens on
    mixed = both.pair(first).set_index("language").loc["ar", "row"]["sjsd"]
    smollm_only = api.across_languages("demo-aligned", smollm, ["ar"], progress=False)
    assert mixed != pytest.approx(smollm_only.pair(first).set_index("language").loc["ar", "row"]["sjsd"], abs=1e-4)
    assert float(at.metric[0].value) == pytest.approx(mixed, abs=1e-4)  # Arabic's S_JSD on the page: the MLM's
