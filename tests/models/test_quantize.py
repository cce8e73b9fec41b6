"""Quantized weights (``--quantize int8`` / ``int4``): each option loads and runs on CPU, for causal and masked LMs,
and its results say ``approximate (int8 weights)`` — in the result, its cache key, the CLI output and the Overview
(a row of its own, never mixed into the full-weight model's row); the heads method's gradients work on it; bad
combinations are one line before anything loads."""
from __future__ import annotations

import numpy as np
import pytest

import biascore
from biascore.cli.main import main
from biascore.models.handle import ModelHandle
from biascore.models.precision import precision_label

# results stored here (served / quantized models) stay out of the session cache that the page tests list
pytestmark = pytest.mark.usefixtures("private_cache")

OPTIONS = ["int8", "int4"]


@pytest.mark.parametrize("quantize", OPTIONS)
@pytest.mark.parametrize("model", ["random-llama", "random-mlm"])
def test_quantized_run_is_labelled_approximate(quantize, model, hermetic_models, tmp_path):
    exact = biascore.run("attribution", str(hermetic_models / model), "demo", progress=False,
                         cache_dir=tmp_path)
    handle = biascore.load_model(str(hermetic_models / model), quantize=quantize)
    result = biascore.run("attribution", handle, "demo", progress=False, cache_dir=tmp_path)
    label = f"approximate ({quantize} weights)"
    assert result.precision == label and result.approximate and label in result.headline()
    assert result.describe()["precision"] == label
    assert result.meta["weights"] == quantize and result.meta["approximate"] is True  # in the cache key
    assert result.digest != exact.digest and exact.precision == "exact (float32)"
    assert handle.load().extra["weights"] == quantize
    # rounded weights: close to the float32 numbers, not equal to them
    lp_exact = np.concatenate([np.asarray(v, float) for v in exact.frame.logp_more])
    lp_q = np.concatenate([np.asarray(v, float) for v in result.frame.logp_more])
    assert lp_exact.shape == lp_q.shape and np.isfinite(lp_q).all()
    assert not np.array_equal(lp_exact, lp_q)
    assert result.frame.sjsd.notna().sum() == exact.frame.sjsd.notna().sum()


@pytest.mark.parametrize("quantize", OPTIONS)
def test_heads_gradients_run_on_a_quantized_model(quantize, hermetic_models):
    from conftest import FIXTURE_DATA
    from biascore.inputs.seat_tests import load_seat_test
    from biascore.methods.heads.scorer import head_score_matrix

    test = load_seat_test(str(FIXTURE_DATA / "seat" / "names-career-family.jsonl"))
    b_exact, _ = head_score_matrix(ModelHandle(str(hermetic_models / "random-llama")).load(), test)
    b, es = head_score_matrix(ModelHandle(str(hermetic_models / "random-llama"), quantize=quantize).load(), test)
    assert b.shape == b_exact.shape and np.isfinite(b).all() and np.isfinite(es)
    assert np.corrcoef(b.ravel(), b_exact.ravel())[0, 1] > 0.5  # the same heads stand out


@pytest.mark.parametrize("quantize", OPTIONS)
def test_cli_prints_the_approximate_label(quantize, hermetic_models, tmp_path, capsys):
    assert main(["score", "--model", str(hermetic_models / "random-llama"), "--benchmark", "demo", "--limit", "4",
                 "--cache-dir", str(tmp_path), "--quantize", quantize]) == 0
    out = capsys.readouterr().out
    assert f"numbers: approximate ({quantize} weights)" in out


@pytest.mark.parametrize("argv, needle", [
    (["--quantize", "int8", "--dtype", "bf16"], "computes in float32"),
    (["--quantize", "int3"], "invalid choice"),
])
def test_bad_quantize_options_are_one_line_errors(argv, needle, hermetic_models, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["score", "--model", str(hermetic_models / "random-gpt2"), "--benchmark", "demo", *argv])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0], err


def test_a_model_left_unquantized_is_refused(hermetic_models):
    """optimum-quanto quantizes nn.Linear; GPT-2's projections are Conv1D: refused in one line, not mislabelled."""
    from biascore.models.loading import ModelLoadError

    with pytest.raises(ModelLoadError, match="quantized no layer") as exc:
        ModelHandle(str(hermetic_models / "random-gpt2"), quantize="int8").load()
    assert "\n" not in str(exc.value)


def test_api_refuses_bad_combinations_before_loading(hermetic_models):
    with pytest.raises(ValueError, match="cannot be combined"):
        biascore.load_model(str(hermetic_models / "random-gpt2"), quantize="int8", device_map="auto")
    with pytest.raises(ValueError, match="must be one of"):
        biascore.load_model(str(hermetic_models / "random-gpt2"), quantize="fp8")
    assert precision_label("float32", "int4") == "approximate (int4 weights)"
    assert precision_label("float32") == "exact (float32)" and precision_label("bfloat16") == "approximate (bfloat16)"


def test_overview_shows_a_quantized_run_as_its_own_labelled_row(demo_scores, smollm):
    """The Overview's tables name the quantized model with its weights and label its precision; the full-weight
    row keeps its own (exact) numbers."""
    from test_dashboard_pages import MODEL, frame_with, open_page

    biascore.run("attribution", MODEL, "demo", progress=False)  # the full-weight row, in this test's own cache
    biascore.run("attribution", biascore.load_model(MODEL, quantize="int8"), "demo", progress=False)
    at = open_page("overview")
    assert not at.error
    long = frame_with(at, "precision")
    demo = long[long.benchmark == "demo"]
    quantized = demo[demo.model == f"{MODEL} (int8 weights)"]
    assert len(quantized) and set(quantized.precision) == {"approximate (int8 weights)"}
    assert set(demo[demo.model == MODEL].precision) == {"exact (float32)"}
    wide = frame_with(at, "all")
    assert f"{MODEL} (int8 weights)" in set(wide.model) and MODEL in set(wide.model)
    captions = " ".join(c.value for c in at.caption)
    assert "approximate (int8 weights)" in captions
