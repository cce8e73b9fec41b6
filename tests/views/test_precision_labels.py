"""Every page that shows a result labels one that is not exact — quantized or bf16/fp16 (``approximate (int8
weights)``) or served — from the result's stored precision (views.kit.widgets.precision_caption, written once): the
generated page of a method without a page of its own, a bespoke page (Token attributions) and the Overview's
paired comparison of a model with its own quantized weights (AppTest)."""
from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import biascore
from biascore.runs import runner
from test_dashboard_pages import frame_with, open_page, toy_method  # noqa: F401 - toy_method is a fixture

# results stored here (quantized models) stay out of the session cache that the page tests list
pytestmark = pytest.mark.usefixtures("private_cache")

EXACT, INT8 = "exact (float32)", "approximate (int8 weights)"


def captions(at: AppTest) -> list[str]:
    return [c.value for c in at.caption]


def labelled(at: AppTest, label: str) -> bool:
    """Whether the page carries the precision line of a result that is not exact."""
    return any(label in c and c.startswith("⚠️") for c in captions(at))


def _toy_page():
    from views.kit.generated import method_page

    method_page("toy-lengths")


def test_the_generated_page_labels_a_stored_quantized_result(toy_method, hermetic_models, monkeypatch):  # noqa: F811
    """The page draws what the stored result says: a result keyed by the int8 model's identity is labelled
    ``approximate (int8 weights)``; the same page on the full-weight model's result carries no such line."""
    model = str(hermetic_models / "random-llama")
    quantized = biascore.load_model(model, quantize="int8")
    stored = runner.run(toy_method, quantized, "demo", progress=None)  # needs no weights: keyed by the identity
    assert stored.precision == INT8 and stored.meta["weights"] == "int8"
    runner.run(toy_method, biascore.load_model(model), "demo", progress=None)
    handles = {"int8": quantized, "full": biascore.load_model(model)}
    which = {"now": "int8"}
    # the dashboard's handle for this model (an operator's quantized model): the page reads its stored result
    monkeypatch.setattr("views.kit.generated.model_for_cache", lambda name: handles[which["now"]])
    at = AppTest.from_function(_toy_page, default_timeout=300)
    at.query_params.update(model=model, input="demo")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.metric  # the stored result is shown
    assert labelled(at, INT8), captions(at)
    assert any(INT8 in c and not c.startswith("⚠️") for c in captions(at))  # and in the result's own caption
    which["now"] = "full"
    at.run()
    assert not at.exception and at.metric
    assert not any(c.startswith("⚠️") for c in captions(at)) and any(EXACT in c for c in captions(at))


def test_token_attributions_labels_a_quantized_run(hermetic_models):
    """A bespoke page: the only stored run of a model is its int8 one; the page shows it, labelled."""
    model = str(hermetic_models / "random-llama")
    biascore.run("attribution", biascore.load_model(model, quantize="int8"), "demo", progress=False)
    at = open_page("token_attributions", benchmark="demo", model=model)
    assert not at.error, [e.value for e in at.error]
    assert frame_with(at, "strongest_token") is not None
    assert labelled(at, f"{model} (int8 weights)") and labelled(at, INT8), captions(at)


def test_overview_compares_a_model_with_its_quantized_weights(hermetic_models):
    """The Overview's paired comparison offers the quantized model as a choice of its own and names the side that
    is approximate (method line, note, the table's precision columns)."""
    model = str(hermetic_models / "random-llama")
    biascore.run("attribution", model, "demo", progress=False)
    biascore.run("attribution", biascore.load_model(model, quantize="int8"), "demo", progress=False)
    at = open_page("overview")
    at.selectbox(key="ov_cmp_benchmark").set_value("demo").run()
    at.selectbox(key="ov_cmp_a").set_value(model).run()
    at.selectbox(key="ov_cmp_b").set_value(f"{model} (int8 weights)").run()
    assert not at.exception and not at.error
    texts = [t.value for t in at.text]
    assert any(f"B = {model} (int8 weights) [{INT8}] against A = {model} [{EXACT}]" in t for t in texts), texts
    assert any(t.startswith(f"note: B = {model} (int8 weights) is {INT8} while the other side is {EXACT}")
               for t in texts), texts
    table = frame_with(at, "mcnemar_p")
    assert set(table.precision_a) == {EXACT} and set(table.precision_b) == {INT8}
    assert labelled(at, f"{model} (int8 weights) on demo")  # the Overview's own tables label the row too


def test_attention_heads_page_shows_a_quantized_runs_agreement_with_float32(hermetic_models, fixture_data,
                                                                             monkeypatch):
    """The heads page's caption carries what a quantized heads result measured against float32 (issue 41, item 7)."""
    model = str(hermetic_models / "random-llama")
    quantized = biascore.load_model(model, quantize="int4")
    result = biascore.run("heads", quantized, "names-career-family", progress=False)
    assert "against float32: cosine" in result.precision
    monkeypatch.setattr("views.models.model_for_cache", lambda name: quantized)  # the dashboard's handle
    at = AppTest.from_file("../../views/attention_heads.py", default_timeout=300)
    at.query_params.update(seat="names-career-family")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any(result.precision in c and c.startswith("⚠️") for c in captions(at)), captions(at)
