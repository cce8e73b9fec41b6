"""A paired comparison between an exact result and an approximate (quantized, bf16/fp16) or served one is allowed,
and says which side is which: in its method line, its notes and the summary's ``precision_a`` / ``precision_b``
(`biascore.compare`, `biascore compare --quantize none int8`)."""
from __future__ import annotations

import pandas as pd
import pytest

import biascore
from biascore.cli.main import main
from biascore.contract.presentation import Precision, precision_of
from biascore.methods.attribution.compare import compare_frames, precision_notes

# results stored here (quantized models) stay out of the session cache that the page tests list
pytestmark = pytest.mark.usefixtures("private_cache")

EXACT, INT8 = "exact (float32)", "approximate (int8 weights)"


def test_precision_of_reads_what_a_result_stored():
    assert precision_of({"dtype": "float32", "weights": ""}) == Precision(EXACT, "exact")
    assert precision_of({"dtype": "float32", "weights": "int8"}) == Precision(INT8, "approximate")
    assert precision_of({"dtype": "bfloat16"}) == Precision("approximate (bfloat16)", "approximate")
    assert precision_of({"dtype": "served"}).kind == "served"
    assert precision_of(pd.Series({"dtype": "float32", "weights": "int4"})).label == "approximate (int4 weights)"
    assert precision_of(pd.Series({"dtype": float("nan"), "weights": None})).exact  # a row without them
    assert precision_of({}).label == EXACT and precision_of({}).note == ""


def test_precision_notes_name_the_side_that_is_not_exact():
    exact, q = precision_of({"dtype": "float32"}), precision_of({"weights": "int8"})
    served = precision_of({"dtype": "served"})
    assert precision_notes("m", exact, "m2", exact) == [] and precision_notes("m", None, "m2", None) == []
    (note,) = precision_notes("m", exact, "m", q)
    assert note.startswith(f"B = m is {INT8} while the other side is {EXACT}: delta = B − A holds B's numerical")
    (note,) = precision_notes("served:http://h:1/v1", served, "m", exact)
    assert note.startswith("A = served:http://h:1/v1 is served (precision as the server computes) while the other "
                           f"side is {EXACT}")
    assert precision_notes("a", q, "b", q) == [f"both sides are {INT8}: {q.note}"]
    assert len(precision_notes("a", q, "b", served)) == 2


def test_compare_frames_labels_each_side(random_mlm):
    frame = biascore.run("attribution", random_mlm, "demo", progress=False).frame
    plain = compare_frames(frame, frame, model_a="a", model_b="b", n_boot=200)
    assert "precision_a" not in plain.summary().columns and not plain.notes  # precision unknown: not claimed
    mixed = compare_frames(frame, frame, model_a="a", model_b="b", n_boot=200,
                           precision_a=precision_of({"dtype": "float32"}), precision_b=precision_of({"weights": "int8"}))
    assert mixed.describe().startswith(f"B = b [{INT8}] against A = a [{EXACT}]")
    summary = mixed.summary()
    assert set(summary.precision_a) == {EXACT} and set(summary.precision_b) == {INT8}
    assert any(n.startswith(f"B = b is {INT8}") for n in mixed.notes)


def test_compare_a_model_with_its_quantized_weights(hermetic_models, tmp_path, capsys):
    """`biascore compare --quantize none int8`: A with its own weights, B quantized; the output says B is the
    approximate side, and equals biascore.compare on the two results."""
    model = str(hermetic_models / "random-llama")
    cache = tmp_path / "cache"
    out = tmp_path / "cmp.csv"
    rc = main(["compare", "--models", model, model, "--quantize", "none", "int8", "--benchmark", "demo",
               "--n-boot", "200", "--cache-dir", str(cache), "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0, text
    assert f"B = {model} [{INT8}] against A = {model} [{EXACT}]" in text
    assert f"note: B = {model} is {INT8} while the other side is {EXACT}" in text
    written = pd.read_csv(out)
    assert set(written.precision_a) == {EXACT} and set(written.precision_b) == {INT8}
    a = biascore.run("attribution", model, "demo", cache_dir=cache, only_cached=True)
    b = biascore.run("attribution", biascore.load_model(model, quantize="int8"), "demo", cache_dir=cache,
                     only_cached=True)
    expected = biascore.compare(a, b, n_boot=200).summary()
    assert written.delta.tolist() == pytest.approx(expected.delta.tolist())
    assert written.sjsd_delta.tolist() == pytest.approx(expected.sjsd_delta.tolist())
    assert (expected.sjsd_delta != 0).any()  # rounded weights: not the same numbers


@pytest.mark.parametrize("argv, needle", [
    (["--quantize", "none", "int8", "int4"], "--quantize takes one value (both models) or two (A B), not 3"),
    (["--quantize", "fp8"], "--quantize: 'fp8' is not one of none, int8, int4"),
    (["--quantize", "int8", "--dtype", "bf16"], "computes in float32"),
    (["--quantize", "none", "int8", "--device-map", "auto"], "cannot be combined with --device-map"),
])
def test_bad_compare_options_are_one_line_before_loading(argv, needle, hermetic_models, tmp_path, capsys):
    model = str(hermetic_models / "random-llama")
    rc = main(["compare", "--models", model, model, *argv, "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and needle in err[0], err
    assert not list(tmp_path.glob("attribution/*.parquet"))  # nothing computed
