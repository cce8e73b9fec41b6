"""The Overview's model comparison (AppTest): two models scored on the demo benchmark, compared pair by pair with
the engine's numbers."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from biascore.methods.attribution.compare import compare_frames

REPO = Path(__file__).resolve().parents[2]


def test_overview_compares_two_models_pair_by_pair(demo_scores):
    from views.kit.models import model_label

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("views/pages/overview.py")
    at.run()
    assert not at.exception and not at.error
    at.selectbox(key="ov_cmp_benchmark").set_value("demo").run()
    # the two models the fixture scored (other tests may have scored more models on demo into the session cache)
    first, second = list(demo_scores)
    at.selectbox(key="ov_cmp_a").set_value(first).run()
    at.selectbox(key="ov_cmp_b").set_value(second).run()
    a, b = at.selectbox(key="ov_cmp_a").value, at.selectbox(key="ov_cmp_b").value
    assert (a, b) == (first, second)
    frames = {model_label(m): f for m, f in demo_scores.items()}
    assert {model_label(a), model_label(b)} <= set(frames)
    shown = next(df.value for df in at.dataframe if "mcnemar_p" in df.value.columns)
    expected = compare_frames(frames[model_label(a)], frames[model_label(b)], lmeval=False).summary()
    assert shown.bias_type.tolist() == expected.bias_type.tolist()
    for col in ("n", "score_a", "score_b", "delta", "ci_low", "ci_high", "n_discordant", "mcnemar_p",
                "mcnemar_p_holm", "sjsd_delta", "pll_delta"):
        assert shown[col].tolist() == pytest.approx(expected[col].tolist(), nan_ok=True), col
    assert any("Holm" in t.value for t in at.text)  # the method line, as plain text
