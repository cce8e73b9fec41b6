"""Sweeps with the model-reach options of `biascore score`: quantized weights (`--quantize`, or a spec file's model
entry of its own), split models (`--device-map`, `--max-memory`, `--offload-folder`) and served models
(`served:http://…`). Every model's options are checked before any task runs (one line, exit 2); every row of the
report says its precision, read from the stored result, so exact, approximate and served rows are never mixed
without their label."""
from __future__ import annotations

import contextlib
import io

import pytest

import biascore
from biascore.cli.main import main
from biascore.models.spec import ModelSpec
from biascore.sweep.spec import SpecError, Task, build_spec

# results stored here (served / quantized models) stay out of the session cache that the page tests list
pytestmark = pytest.mark.usefixtures("private_cache")

EXACT, INT8 = "exact (float32)", "approximate (int8 weights)"
SERVED = "served (precision as the server computes)"


def sweep(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["sweep", *argv])
    return rc, out.getvalue()


def row_of(text: str, *needles: str, metric: str | None = None) -> str:
    """The one report line holding every needle (and, given, the Overview metric ``metric`` as a word)."""
    rows = [line for line in text.splitlines() if all(n in line for n in needles)
            and (metric is None or metric in line.split())]
    assert len(rows) == 1, (needles, metric, rows)
    return rows[0]


# --------------------------------------------------------------------------------------------- the spec
def test_model_entries_and_sweep_wide_options_become_each_task_model_spec(tmp_path):
    (tmp_path / "s.yaml").write_text(
        "models:\n  - m\n  - {name: m, quantize: int8}\n  - {name: big, max-memory: cpu=300MiB}\n"
        "  - {name: m, dtype: bf16}\n  - served:http://127.0.0.1:9/v1\n"
        "benchmarks: [demo]\nmetrics: [attribution]\n")
    spec = build_spec(tmp_path / "s.yaml")
    tasks = spec.tasks()
    assert [t.spec.label for t in tasks] == ["m", "m (int8 weights)", "big (split auto)", "m (bf16)",
                                             "served:http://127.0.0.1:9/v1"]
    assert len({t.name for t in tasks}) == len(tasks)  # one status file each
    assert tasks[1].spec.quantize == "int8" and (tasks[0].spec.quantize, tasks[0].spec.placement) == (None, None)
    placement = tasks[2].spec.placement
    assert placement.device_map == "auto" and dict(placement.max_memory) == {"cpu": "300MiB"}
    assert tasks[1].spec == ModelSpec("m", label="m (int8 weights)", device="auto", dtype="auto",
                                      trust_remote_code=False, quantize="int8")
    assert tasks[3].spec.dtype == "bf16" and tasks[0].spec.dtype == "auto"
    # the command line's --quantize holds for every model without an entry's own
    spec = build_spec(None, models=["a", "b"], benchmarks=["demo"], metrics=["pll"], quantize="int4")
    assert [t.name for t in spec.tasks()] == ["a (int4 weights) × demo", "b (int4 weights) × demo"]
    assert spec.tasks()[0] == Task(ModelSpec("a", label="a (int4 weights)", quantize="int4"), "pairs", "demo",
                                   ("pll",))


def test_each_model_is_parsed_once_and_every_task_holds_its_frozen_spec(monkeypatch):
    """Two models × three benchmarks × two input kinds: each model's description is parsed once, when the sweep
    spec is checked; its tasks (and the handles made from them, and a Ray worker's pickled copy) hold that spec."""
    import pickle

    from biascore.models.handle import ModelHandle

    parsed = []
    parse = ModelSpec.parse.__func__
    monkeypatch.setattr(ModelSpec, "parse", classmethod(lambda cls, target, **kw: parsed.append(target)
                                                        or parse(cls, target, **kw)))
    spec = build_spec(None, models=["a", {"name": "b", "quantize": "int8"}], benchmarks=["x", "y", "z"],
                      seat_tests=["sent-weat6"], metrics=["pll", "seat"], dtype="auto")
    tasks = spec.tasks() + spec.tasks()
    assert len(tasks) == 2 * 2 * 4 and sorted(parsed) == ["a", "b"]  # once per model, however many tasks
    for label in ("a", "b (int8 weights)"):
        specs = {id(t.spec) for t in tasks if t.spec.label == label}
        assert len(specs) == 1  # one object, handed to every task of the model
    assert ModelHandle(tasks[0].spec).spec is tasks[0].spec
    copy = pickle.loads(pickle.dumps(tasks[-1]))  # what a Ray task receives
    assert copy == tasks[-1] and copy.spec.quantize == "int8" and sorted(parsed) == ["a", "b"]


@pytest.mark.parametrize("argv, needle", [
    (["--quantize", "int3"], "invalid choice: 'int3'"),
    (["--quantize", "int8", "--dtype", "bf16"], "computes in float32: drop --dtype bf16"),
    (["--quantize", "int8", "--device-map", "auto"], "cannot be combined with --device-map"),
    (["--max-memory", "cpu=lots"], "'lots' is not a size"),
    (["--device-map", "everywhere"], "--device-map must be one of"),
    (["--dtype", "fp12"], "unknown dtype 'fp12'"),
    (["--models", "served:ftp://127.0.0.1/v1"], "expected served:http://HOST:PORT/v1"),
    (["--models", "m", "served:http://127.0.0.1:9/v1", "--quantize", "int8"],
     "is a served model: --device-map, --max-memory and --quantize apply to models loaded in this process"),
])
def test_bad_reach_options_are_one_line_before_any_task(argv, needle, tmp_path, capsys):
    models = [] if "--models" in argv else ["--models", "m"]
    try:
        rc = main(["sweep", *models, *argv, "--benchmarks", "demo", "--cache-dir", str(tmp_path)])
    except SystemExit as exc:  # argparse's own refusals
        rc = exc.code
    assert rc == 2
    # transformers' "Loading weights" bar of a model another test of this worker left loading in the background (a
    # dashboard's default model) is not this command's output (as in tests/cli/test_cli_bad_input.py)
    err = [line for line in capsys.readouterr().err.strip().splitlines() if "Loading weights" not in line]
    assert len(err) == 1 and needle in err[0], err
    assert not (tmp_path / "sweeps").exists()  # no task was started (nor recorded)


@pytest.mark.parametrize("entry, needle", [
    ("{name: m, quantise: int8}", "model m: unknown key(s) quantise; a model entry takes name, quantize"),
    ("{quantize: int8}", "a model must be a name or an entry"),
    ("{name: m, quantize: [int8]}", "model m: quantize must be int8, int4 or null, not "),
    ("{name: m, quantize: int8, dtype: fp16}", "model m: --quantize int8 computes in float32"),
    ("{name: 'served:http://127.0.0.1:9/v1', dtype: bf16}", "computes in its server's precision"),
    ("{name: 'served:http://127.0.0.1:9/v1', device_map: auto}", "is a served model"),
])
def test_bad_model_entries_are_one_line(entry, needle, tmp_path, capsys):
    (tmp_path / "s.yaml").write_text(f"models: [{entry}]\nbenchmarks: [demo]\n")
    with pytest.raises(SpecError, match=needle.replace("(", r"\(").replace(")", r"\)")):
        build_spec(tmp_path / "s.yaml")
    assert main(["sweep", "--spec", str(tmp_path / "s.yaml"), "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err


# --------------------------------------------------------------------------------------------- quantized
def test_sweep_with_a_quantized_model_labels_every_row(hermetic_models, tmp_path):
    """A model beside its own int8 weights: two rows, each with its precision; the quantized one is the result that
    `biascore.run` with `quantize="int8"` reads from the cache; the pairwise row names the approximate side."""
    model = str(hermetic_models / "random-llama")
    (tmp_path / "s.yaml").write_text(f"models:\n  - {model}\n  - {{name: {model}, quantize: int8}}\n"
                                     "benchmarks: [demo]\nmetrics: [attribution, pll]\n")
    rc, text = sweep("--spec", str(tmp_path / "s.yaml"), "--cache-dir", str(tmp_path / "cache"))
    assert rc == 0, text
    exact = biascore.run("attribution", model, "demo", cache_dir=tmp_path / "cache", only_cached=True)
    quantized = biascore.run("attribution", biascore.load_model(model, quantize="int8"), "demo",
                             cache_dir=tmp_path / "cache", only_cached=True)
    assert exact is not None and quantized is not None  # both stored by the sweep, under the keys run() computes
    assert quantized.precision == INT8 and exact.precision == EXACT
    for metric in ("B", "PLL"):  # a row each, each with its own precision
        row_of(text, f"{model} ", EXACT, metric=metric)
        row_of(text, f"{model} (int8 weights)", INT8, metric=metric)
    assert f"{exact.summary().score.iloc[0]:.2f}" in row_of(text, EXACT, metric="B").split()
    assert f"{quantized.summary().score.iloc[0]:.2f}" in row_of(text, INT8, metric="B").split()
    assert f"note: rows labelled {INT8}: a quantized or reduced-precision run" in text
    row_of(text, "demo", "(int8 weights)", EXACT, INT8)  # the pairwise row: precision_a and precision_b shown
    assert "note: pairwise: a row whose precision_a or precision_b is not exact" in text
    # the second run is answered from the cache: no model loaded
    rc, again = sweep("--spec", str(tmp_path / "s.yaml"), "--cache-dir", str(tmp_path / "cache"))
    assert rc == 0 and "model loads: 0" in again


# --------------------------------------------------------------------------------------------- served
def test_sweep_through_the_reference_server(reference_server, tmp_path):
    """A served model named in --models is scored through its server, stored and labelled served; beside the
    same model in-process, every row says which is which, and so does the pairwise row."""
    served = "served:" + reference_server.url
    rc, text = sweep("--models", "smollm2-135m", served, "--benchmarks", "demo", "--metrics", "attribution",
                     "--limit", "4", "--cache-dir", str(tmp_path / "cache"))
    assert rc == 0, text
    connected = biascore.load_model(served, load=True)  # a served model's identity is measured: connect first
    result = biascore.run("attribution", connected, "demo", limit=4, cache_dir=tmp_path / "cache", only_cached=True)
    assert result is not None and result.precision == SERVED
    assert f"{result.summary().score.iloc[0]:.2f}" in row_of(text, served, SERVED, metric="B").split()
    row_of(text, "smollm2-135m ", EXACT, metric="B")
    assert f"note: rows labelled {SERVED}: prompt log-probabilities from a completions server" in text
    row_of(text, "demo", "smollm2-135m", served, EXACT, SERVED)  # the pairwise row names both precisions
