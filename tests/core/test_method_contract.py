"""The method contract: a new method is one new folder, and every shell picks it up.

A toy method is added as one folder (``biascore/methods/toy/``: ``__init__.py`` + ``method.py``) to a
temporary copy of the project, with no other file changed. Through the same discovery the real methods use,
it then appears in ``biascore methods``, runs via ``biascore run`` (flags generated from its Options), runs in a
local sweep, is cached under its own key (a second run computes nothing), and goes into a snapshot. Also:
options are validated the same way for the CLI and the API.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from biascore.core.options import Options, OptionError, option
from tests.conftest import FIXTURE_DATA, REPO

TOY = '''"""A toy method for the contract test: per pair, the length difference of the two sentences in characters."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd

from biascore.core.inputs import PAIRS
from biascore.core.method import Method
from biascore.core.options import Options, option
from biascore.core.schema import columns
from biascore.core.registry import register


@dataclass(frozen=True)
class ToyOptions(Options):
    scale: int = option(1, minimum=1, help="multiply the difference by this")


@register
class Toy(Method):
    name = "toy"
    summary_line = "length difference of the two sentences (a contract test)"
    paper = "none (a test)"
    input_kind = PAIRS
    Options = ToyOptions
    schema = columns([("pair_id", "int64", "the pair"), ("diff", "int64", "len(more) - len(less), scaled")])
    needs_model = False
    one_row_per_input_row = True

    def compute(self, ctx, bench, options):
        with open(os.environ["TOY_CALLS"], "a") as fh:
            fh.write("computed\\n")
        frame = bench.frame
        return pd.DataFrame({"pair_id": frame["pair_id"].astype("int64"),
                             "diff": (frame["sent_more"].str.len() - frame["sent_less"].str.len()) * options.scale})

    def summary(self, result):
        return pd.DataFrame({"pairs": [len(result.frame)], "mean_diff": [float(result.frame["diff"].mean())]})
'''


@pytest.fixture(scope="module")
def project_with_toy(tmp_path_factory) -> Path:
    """A copy of the project with one folder added: biascore/methods/toy/."""
    root = tmp_path_factory.mktemp("copy") / "project"
    ignore = shutil.ignore_patterns(".git", ".venv", "cache", "__pycache__", "tests", "bench", "docs", "*.pyc")
    shutil.copytree(REPO, root, ignore=ignore)
    toy = root / "biascore" / "methods" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text("")
    (toy / "method.py").write_text(TOY)
    return root


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory) -> Path:
    """A model folder whose identity can be read from its files (the toy never loads it)."""
    folder = tmp_path_factory.mktemp("model")
    (folder / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"], "model_type": "bert"}))
    return folder


def _cli(root: Path, *argv: str, calls: Path, cache: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "TOY_CALLS": str(calls), "BIASCORE_CACHE_DIR": str(cache),
           "BIASCORE_DATA_DIR": str(FIXTURE_DATA),  # the data the project wrote itself: runs on any clone
           "PYTHONPATH": str(root)}
    done = subprocess.run([sys.executable, "-m", "biascore", *argv], cwd=root, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def test_a_new_method_is_one_folder(project_with_toy, model_folder, tmp_path):
    root, calls, cache = project_with_toy, tmp_path / "calls.txt", tmp_path / "cache"
    calls.write_text("")
    listing = _cli(root, "methods", calls=calls, cache=cache).stdout
    assert "toy" in listing and "length difference" in listing
    assert "--scale" in _cli(root, "run", "toy", "--help", calls=calls, cache=cache).stdout

    out = tmp_path / "toy.csv"
    done = _cli(root, "run", "toy", "--model", str(model_folder), "--benchmark", "demo", "--scale", "2",
                "--out", str(out), calls=calls, cache=cache)
    frame = pd.read_csv(out)
    assert len(frame) == 38 and "mean_diff" in done.stdout and calls.read_text().count("computed") == 1
    stored = list((cache / "toy").glob("*.parquet"))
    assert len(stored) == 1  # its own key, its own folder
    _cli(root, "run", "toy", "--model", str(model_folder), "--benchmark", "demo", "--scale", "2",
         calls=calls, cache=cache)
    assert calls.read_text().count("computed") == 1  # answered from the cache

    sweep = _cli(root, "sweep", "--models", str(model_folder), "--benchmarks", "demo", "crows-en-gso",
                 "--metrics", "toy", calls=calls, cache=cache)
    assert "2 of 2 task(s) done" in sweep.stdout and "toy:" in sweep.stdout
    assert calls.read_text().count("computed") == 3  # demo and crows-en-gso with the default scale 1
    _cli(root, "sweep", "--models", str(model_folder), "--benchmarks", "demo", "crows-en-gso",
         "--metrics", "toy", calls=calls, cache=cache)
    assert calls.read_text().count("computed") == 3  # a second sweep computes nothing

    snap = tmp_path / "snap.zip"
    _cli(root, "snapshot", "export", "--out", str(snap), calls=calls, cache=cache)
    with zipfile.ZipFile(snap) as zf:
        manifest = json.loads(zf.read("manifest.json"))
    assert {e["scorer"] for e in manifest["entries"]} == {"toy"}
    assert len([e for e in manifest["entries"] if e["scorer"] == "toy"]) == 3


def test_bad_option_values_are_one_line_errors_in_the_cli(project_with_toy, model_folder, tmp_path):
    env = {**os.environ, "TOY_CALLS": str(tmp_path / "c"), "BIASCORE_CACHE_DIR": str(tmp_path),
           "PYTHONPATH": str(project_with_toy)}
    done = subprocess.run([sys.executable, "-m", "biascore", "run", "toy", "--model", str(model_folder),
                           "--scale", "0"], cwd=project_with_toy, env=env, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.strip().count("\n") == 0 and "--scale" in done.stderr


@dataclass(frozen=True)
class Example(Options):
    n: int = option(3, minimum=1, help="a count")
    p: float = option(0.5, minimum=0.0, maximum=1.0, exclusive=True, help="a share", key=False)
    mode: str = option("a", choices=("a", "b"), help="a mode", convention=True)
    names: tuple[str, ...] | None = option(None, repeat=True, help="some names")


def test_options_build_validate_and_key():
    o = Example.build(n=5, names=["x", "y"])
    assert o.n == 5 and o.names == ("x", "y")
    assert o.key_parts() == {"n": 5, "mode": "a", "names": ("x", "y")}  # p does not change the result
    assert o.conventions() == {"mode": "a"}
    assert Example.from_meta({"n": 5, "mode": "b", "names": ["x"], "other": 1}) == Example(5, 0.5, "b", ("x",))
    for bad, needle in [({"n": 0}, "--n: must be at least 1"), ({"p": 1.0}, "--p: must be between 0 and 1"),
                        ({"mode": "c"}, "--mode: 'c' is not one of a, b"), ({"n": "3"}, "--n: expected a whole"),
                        ({"q": 1}, "unknown option")]:
        with pytest.raises(OptionError, match=needle):
            Example.build(**bad)
