"""Quantized weights (``--quantize int8`` / ``int4``): each option loads and runs on CPU, for causal and masked LMs,
and its results say ``approximate (int8 weights)`` — in the result, its cache key, the CLI output and the Overview
(a row of its own, never mixed into the full-weight model's row); the heads method's gradients work on it; bad
combinations are one line before anything loads."""
from __future__ import annotations

import numpy as np
import torch
import pytest

import biascore
from biascore.cli.main import main
from biascore.models.handle import ModelHandle
from biascore.models.precision import agreement, precision_label, precision_of
from conftest import FIXTURE_DATA

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


def _precision_line(out: str, model: str, label: str) -> None:
    """The CLI's one precision line (biascore.contract.presentation.precision_lines) for ``model``, with its note."""
    lines = [line for line in out.splitlines() if line.startswith("precision: ")]
    assert len(lines) == 1, out
    assert lines[0].startswith(f"precision: {model}: {label} — a quantized or reduced-precision run"), lines[0]


@pytest.mark.parametrize("quantize", OPTIONS)
def test_cli_prints_the_approximate_label(quantize, hermetic_models, tmp_path, capsys):
    """score's title line, summary table, precision line and --out CSV all carry the precision (issue 33, item 4)."""
    import pandas as pd

    model = str(hermetic_models / "random-llama")
    out_csv = tmp_path / "out.csv"
    assert main(["score", "--model", model, "--benchmark", "demo", "--limit", "4",
                 "--cache-dir", str(tmp_path), "--quantize", quantize, "--out", str(out_csv)]) == 0
    out = capsys.readouterr().out
    label = f"approximate ({quantize} weights)"
    title = out.splitlines()[0]
    assert title.startswith(f"{model} on demo ({label}) — ") or f"({label}) — " in title, out
    header = next(line for line in out.splitlines() if line.split()[:2] == ["bias_type", "n"])
    assert header.split()[-1] == "precision" and out.count(f" {label}") >= 3  # title, summary rows, precision line
    _precision_line(out, model, label)
    written = pd.read_csv(out_csv)
    assert (written["precision"] == label).all() and len(written) == 4


@pytest.mark.parametrize("argv, quantize", [
    (["words", "--benchmark", "demo", "--limit", "6"], "int8"),  # heads: the test below (its label says more)
])
def test_every_command_prints_the_precision_line(argv, quantize, hermetic_models, fixture_data, tmp_path, capsys):
    import pandas as pd

    model = str(hermetic_models / "random-llama")
    out_csv = tmp_path / "out.csv"
    assert main([*argv, "--model", model, "--cache-dir", str(tmp_path), "--quantize", quantize,
                 "--out", str(out_csv)]) == 0
    label = f"approximate ({quantize} weights)"
    _precision_line(capsys.readouterr().out, model, label)
    assert (pd.read_csv(out_csv)["precision"] == label).all()


def test_a_measured_agreement_with_float32_decides_the_label():
    """Issue 41, item 7: SmolLM2's int4 head scores had cosine −0.28 with float32 and 1 of the top 10 heads in common,
    its int8 ones 0.997 and 10/10; both were labelled "approximate (… weights)" alone."""
    def label(weights, cosine, common):
        return precision_of({"dtype": "float32", "weights": weights,
                             "info": {"float32_agreement": {"cosine": cosine, "common": common, "k": 10}}})

    far, near = label("int4", -0.28, 1), label("int8", 0.997, 10)
    assert far.label == "far from float32 (int4 weights; against float32: cosine -0.280, 1/10 top heads in common)"
    assert far.far and far.kind == "approximate" and "disagrees" in far.note and "cosine ≥ 0.9" in far.note
    assert near.label == "approximate (int8 weights; against float32: cosine 0.997, 10/10 top heads in common)"
    assert not near.far and near.note == precision_of({"dtype": "float32", "weights": "int8"}).note
    assert label("int4", 0.95, 6).far and label("int4", 0.89, 10).far and not label("int4", 0.9, 7).far
    assert agreement([4.0, 3, 2, 1], [4.0, 3, 2, 1], k=2) == {"cosine": 1.0, "common": 2, "k": 2}
    assert agreement([1.0, 2, 3, 4], [4.0, 3, 2, 1], k=2)["common"] == 0
    assert agreement([1.0, 2], [1.0, 2])["k"] == 2  # fewer heads than k


@pytest.mark.parametrize("quantize", OPTIONS)
def test_quantized_heads_measure_and_show_their_agreement_with_float32(quantize, hermetic_models, fixture_data,
                                                                       tmp_path, capsys):
    """A quantized heads run computes the float32 run too, stores cosine and top-k overlap with its result, and the
    precision label every shell prints (CLI line, --out CSV, result, page caption) carries them (issue 41, item 7).
    The numbers are checked against a computation by hand from the two stored results, not against fixed values:
    bitsandbytes' CPU kernels differ across CPUs."""
    import pandas as pd

    model = str(hermetic_models / "random-llama")
    out_csv = tmp_path / "out.csv"
    assert main(["run", "heads", "--seat-test", "names-career-family", "--model", model, "--cache-dir", str(tmp_path),
                 "--quantize", quantize, "--out", str(out_csv)]) == 0
    printed = capsys.readouterr().out
    exact = biascore.run("heads", model, "names-career-family", cache_dir=tmp_path, only_cached=True)
    result = biascore.run("heads", biascore.load_model(model, quantize=quantize), "names-career-family",
                          cache_dir=tmp_path, only_cached=True)
    assert exact is not None and exact.precision == "exact (float32)"  # computed by the quantized run
    assert result.meta["info"]["uses"]["heads float32"] == exact.digest
    a, b = result.frame["score"].to_numpy(), exact.frame["score"].to_numpy()
    assert result.frame[["layer", "head"]].equals(exact.frame[["layer", "head"]])
    k = min(10, len(a))
    common = len(set(result.frame.nlargest(k, "score").index) & set(exact.frame.nlargest(k, "score").index))
    measured = result.meta["info"]["float32_agreement"]
    assert measured["cosine"] == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), rel=1e-9)
    assert (measured["common"], measured["k"]) == (common, k)
    label = result.precision
    assert f"({quantize} weights; against float32: cosine {measured['cosine']:.3f}, {common}/{k} top heads" in label
    assert label.startswith("far from float32" if precision_of(result).far else "approximate")
    lines = [line for line in printed.splitlines() if line.startswith("precision: ")]
    assert lines == [f"precision: {model}: {label} — {precision_of(result).note}"]
    assert (pd.read_csv(out_csv)["precision"] == label).all() and label in result.headline()


def test_an_exact_run_says_so_in_one_line(hermetic_models, tmp_path, capsys):
    model = str(hermetic_models / "random-llama")
    assert main(["run", "heads", "--seat-test", "names-career-family", "--model", model, "--cache-dir",
                 str(tmp_path), "--data-dir", str(FIXTURE_DATA)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("precision: ")]
    assert lines == [f"precision: {model}: exact (float32)"]


@pytest.mark.parametrize("argv, needle", [
    (["--quantize", "int8", "--dtype", "bf16"], "computes in float32"),
    (["--quantize", "int3"], "invalid choice"),
])
def test_bad_quantize_options_are_one_line_errors(argv, needle, hermetic_models, capsys):
    try:
        rc = main(["score", "--model", str(hermetic_models / "random-gpt2"), "--benchmark", "demo", *argv])
    except SystemExit as exc:  # argparse's own refusal (an invalid choice)
        rc = exc.code
    assert rc == 2  # the one-line error of the CLI (a bad model option: main() answers 2)
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


def _reference_float32(folder, quantized):
    """An independent float32 model holding ``quantized``'s NF4 weights dequantized (bitsandbytes'
    ``dequantize_4bit``): plain ``nn.Linear`` layers, torch's float32 matmuls, nothing of bitsandbytes' kernels."""
    from bitsandbytes.functional import dequantize_4bit

    import copy
    import dataclasses

    shared = ModelHandle(str(folder)).load()
    ref = dataclasses.replace(shared, model=copy.deepcopy(shared.model))  # the loaded model is left as it was
    modules = dict(ref.model.named_modules())
    n = 0
    for name, module in quantized.model.named_modules():
        if type(module).__name__ == "Linear4bit":
            w = dequantize_4bit(module.weight.data, module.weight.quant_state).float()
            with torch.no_grad():
                modules[name].weight.copy_(w.reshape(modules[name].weight.shape))
            n += 1
    assert n > 0
    return ref


def test_int4_heads_are_the_same_whatever_ran_before_and_whatever_the_batch(hermetic_models):
    """Issue 33, item 1: on a CPU with AVX512-BF16, bitsandbytes 0.50.2 repacked the NF4 weights into a bf16
    kernel without backward at the first no-gradient forward, after which the heads' gradient pass failed (more
    than one batch, or after score_pair on the same handle). The 4-bit layers now keep float32 compute on every
    CPU: the flag that allows the repack is off from load, no layer is ever repacked, and the head scores after a
    no-grad forward and in batches equal the first one-batch run and an independent float32 model holding the
    dequantized NF4 weights."""
    from biascore.inputs.seat_tests import load_seat_test
    from biascore.methods.heads.scorer import head_score_matrix

    folder = hermetic_models / "random-llama"
    handle = ModelHandle(str(folder), quantize="int4")
    lm = handle.load()
    layers = [m for m in lm.model.modules() if type(m).__name__ == "Linear4bit"]
    assert layers and all(m.support_avx512bf16_for_cpu is False for m in layers)
    test = load_seat_test(str(FIXTURE_DATA / "seat" / "names-career-family.jsonl"))  # 96 texts
    first, es = head_score_matrix(lm, test, batch_size=512)
    live = biascore.score_pair(handle, "He is a nurse.", "She is a nurse.")  # a no-grad forward, same handle
    assert live.frame["sjsd"].notna().all()
    for batch_size in (512, 10):
        again, es_again = head_score_matrix(lm, test, batch_size=batch_size)
        np.testing.assert_allclose(again, first, rtol=1e-4, atol=1e-6)
        assert es_again == pytest.approx(es, rel=1e-5)
    assert not any(getattr(m.weight.quant_state, "packing_format_for_cpu", False) for m in layers)
    reference = _reference_float32(folder, lm)
    expected, es_ref = head_score_matrix(reference, test, batch_size=512)
    np.testing.assert_allclose(first, expected, rtol=1e-4, atol=1e-6)
    assert es == pytest.approx(es_ref, rel=1e-5)
    # the no-grad forward itself computes in float32 too (the repacked kernel's bf16 is ~1e-2 away)
    ids = lm.tokenizer(["The doctor said she would come."], return_tensors="pt")
    with torch.no_grad():
        got = lm.model(**ids).logits
        want = reference.model(**ids).logits
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
