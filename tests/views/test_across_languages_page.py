"""AppTest of the Across languages page on a bare data directory: the shipped demo-aligned set is scored with the
embedded default model on the first visit, and the numbers shown are the engine's."""
from __future__ import annotations

import json

import pytest

from biascore import api
from tests.views.test_dashboard_pages import frame_with, open_page

LANGS = ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]


@pytest.fixture
def bare_data(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASCORE_DATA_DIR", str(tmp_path / "empty"))


def test_demo_aligned_set_in_ten_languages_with_the_engines_numbers(bare_data, smollm):
    at = open_page("across_languages")
    assert not at.error, [e.value for e in at.error]
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
