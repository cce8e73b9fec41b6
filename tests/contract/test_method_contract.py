"""The method contract: a new method is one new folder, and every shell and the green build pick it up.

The whole repository (package, tests, docs, bench, data) is copied to a temporary folder and one folder is
added, ``biascore/methods/toy/`` (``__init__.py`` + ``method.py``): a toy method that loads a real model (the
hermetic seeded random MLM of tests/tiny_models.py), runs a forward pass per pair and stores resumable shards.
With no other file edited by hand, the toy then:

* is listed (``biascore methods``) and runs from the CLI with flags, help, defaults and bounds generated from
  its Options; a run stopped half-way keeps its finished shards and the next run computes only the rest;
* runs from the Python API, answered from the CLI's cache entry without loading the model;
* runs in a sweep with a non-default option (``--options toy.scale=3``), which stores the entry that
  ``biascore run toy --scale 3`` then reads;
* goes into a snapshot that verifies and, opened read-only, gives back the same frame;
* is on the dashboard's menu with a generated page (Streamlit's AppTest, in the copy): its option as a control
  drawn from its Options, and for the stored result the headline its ``headline(options)`` declares and its
  summary table — the numbers the Python API gave;
* passes, in the copy, the hermetic tests whose outcome depends on which methods are registered: README's
  methods table and docs/methods.md (after ``biascore methods --update-docs`` regenerates them; before it, the
  docs test fails and says so) and the rest of tests/test_docs.py, tests/test_layout.py, tests/test_api.py (the
  toy through the API on the fixture data: the other methods' runs are the same code as in the main suite, so
  only the toy's parametrisation is run again here), tests/cli/test_cli_help.py (every method's generated
  help), tests/contract/test_method_plugins.py (entry-point plugins beside it), the sweep's spec and options tests
  and the generated-page test of tests/views/test_dashboard_pages.py (about 1.5 minutes on a 2-core machine).

The CLI's commands run in the copy one after another in one interpreter (tests/cli_shell.py: each as
``python -m biascore`` runs it), except the run stopped half-way, which is a process of its own that ends with
its error, so that the next run finds only what it left on disk; the API, the snapshot's reader and the page
each run in a fresh interpreter of their own.

README's full test command is not run in the copy: it would run the whole suite (about 13 minutes on a 2-core
machine) a second time inside itself. Also: options are validated the same way for the CLI and the API.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

from biascore.contract.options import Options, OptionError, option
from tests.cli_shell import Shell
from tests.conftest import FIXTURE_DATA, REPO

TOY = '''"""A toy method for the contract test: per pair, the mean log-probability of each sentence's own tokens under
the model (one unmasked forward pass), more minus less, times ``scale``."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pandas as pd
import torch

from biascore.inputs.kinds import PAIRS
from biascore.contract.method import Method
from biascore.contract.options import Options, option
from biascore.contract.presentation import Headline
from biascore.contract.schema import columns
from biascore.contract.registry import register


@dataclass(frozen=True)
class ToyOptions(Options):
    scale: int = option(1, minimum=1, help="multiply the difference by this")


def mean_logprob(lm, sentences):
    enc = lm.tokenizer(list(sentences), return_tensors="pt", padding=True).to(lm.device)
    with torch.no_grad():
        logp = lm.model(**enc).logits.float().log_softmax(-1)
    gold = logp.gather(-1, enc["input_ids"][..., None]).squeeze(-1)
    mask = enc["attention_mask"].float()
    return ((gold * mask).sum(-1) / mask.sum(-1)).tolist()


@register
class Toy(Method):
    name = "toy"
    order = 90
    summary_line = "mean log-probability of a sentence's own tokens, more minus less (a contract test)"
    paper = "none (a test)"
    input_kind = PAIRS
    Options = ToyOptions
    schema = columns([("pair_id", "int64", "the pair"),
                      ("diff", "float64", "mean log P(more) - mean log P(less), scaled")])
    model_kinds = ("masked", "causal")
    one_row_per_input_row = True
    shard_size = 10
    quick_options = {"scale": 2}

    def compute(self, ctx, bench, options):
        frame = bench.frame
        stop = os.environ.get("TOY_STOP_AT")
        if stop is not None and int(frame["pair_id"].iloc[0]) >= int(stop):
            raise RuntimeError("toy: stopped on purpose")
        lm = ctx.model()
        more, less = mean_logprob(lm, frame["sent_more"]), mean_logprob(lm, frame["sent_less"])
        if os.environ.get("TOY_CALLS"):  # the test counts computations
            with open(os.environ["TOY_CALLS"], "a") as fh:
                fh.write(f"computed {len(frame)}\\n")
        return pd.DataFrame({"pair_id": frame["pair_id"].astype("int64"),
                             "diff": [(a - b) * options.scale for a, b in zip(more, less)]})

    def headline(self, options):
        return Headline("mean difference", "mean_diff", f"x{options.scale}; 0 = the model finds both alike")

    def summary(self, result):
        return pd.DataFrame({"pairs": [len(result.frame)], "mean_diff": [float(result.frame["diff"].mean())]})
'''

#: what the copy leaves out: version control, environments, caches and build outputs (.gitignore's kinds)
NOT_COPIED = shutil.ignore_patterns(".git", ".venv", ".venv-*", "cache", "__pycache__", "*.pyc", ".pytest_cache", "out",
                                    "artifacts", "*.egg-info", "build")


@pytest.fixture(scope="module")
def project_with_toy(tmp_path_factory) -> Path:
    """A copy of the whole repository with one folder added: biascore/methods/toy/."""
    root = tmp_path_factory.mktemp("copy") / "project"
    shutil.copytree(REPO, root, ignore=NOT_COPIED)
    toy = root / "biascore" / "methods" / "toy"
    toy.mkdir()
    (toy / "__init__.py").write_text("")
    (toy / "method.py").write_text(TOY)
    if (REPO / "cache" / "models").is_dir():  # converted embedded models, as in the original checkout
        (root / "cache").mkdir()
        (root / "cache" / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
    return root


@pytest.fixture(scope="module")
def model_folder(hermetic_models) -> Path:
    return hermetic_models / "random-mlm"


@pytest.fixture(scope="module")
def shell(project_with_toy, processes):
    """`python -m biascore` in the copy: the module's commands one after another in one interpreter."""
    with Shell(project_with_toy, {**os.environ, "PYTHONPATH": str(project_with_toy)}) as cli:
        yield cli


def _overrides(calls: Path, cache: Path, **extra: str) -> dict:
    return {"TOY_CALLS": str(calls), "BIASCORE_CACHE_DIR": str(cache),
            "BIASCORE_DATA_DIR": str(FIXTURE_DATA), **extra}  # the data the project wrote itself: runs on any clone


def _env(root: Path, calls: Path, cache: Path, **extra: str) -> dict:
    return {**os.environ, "PYTHONPATH": str(root), **_overrides(calls, cache, **extra)}


def _cli(shell: Shell, *argv: str, calls: Path, cache: Path, ok: bool = True, **extra: str):
    done = shell(*argv, **_overrides(calls, cache, **extra))
    if ok:
        assert done.returncode == 0, done.stderr[-2000:]
    return done


def _python(root: Path, code: str, *, calls: Path, cache: Path) -> dict:
    """Run ``code`` in the copy; it prints one JSON object as its last line."""
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=_env(root, calls, cache),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _computed(calls: Path) -> int:
    return calls.read_text().count("computed")


API = """
import json, biascore
lm = biascore.load_model({model!r})
r = biascore.run("toy", lm, "demo", scale=2, progress=False)
print(json.dumps({{"loads": lm.loads, "diff": r.frame["diff"].tolist(), "summary": r.summary().to_dict("records")}}))
"""

OPEN_SNAPSHOT = """
import json, biascore
from biascore.snapshot import reader
from biascore.snapshot.standin import standin_handle
opened = reader.activate({zip!r})
(name,) = opened.manifest["models"]
r = biascore.run("toy", standin_handle(name, opened.manifest["models"][name]), "demo", scale=2, progress=False,
                 only_cached=True)
print(json.dumps({{"name": name, "diff": r.frame["diff"].tolist()}}))
"""


#: the toy's generated page under AppTest (run as a file in the copy: AppTest reads the page function's source)
PAGE = """
import json
from streamlit.testing.v1 import AppTest
from views.menu import menu_pages


def page():
    from views.kit.generated import method_page

    method_page("toy")


at = AppTest.from_function(page, default_timeout=300)
at.query_params.update(model={model!r}, input="demo")
at.run()
at.number_input(key="toy_opt_scale").set_value(2).run()
print(json.dumps({{"menu": [p.method for p in menu_pages() if p.path is None], "controls": [w.key for w in at.number_input],
                  "exceptions": [e.value for e in at.exception], "errors": [e.value for e in at.error],
                  "metrics": [(m.label, m.value) for m in at.metric],
                  "tables": [json.loads(df.value.to_json(orient="records", double_precision=15))
                             for df in at.dataframe]}}))
"""


def test_a_new_method_is_one_folder(project_with_toy, shell, model_folder, tmp_path):
    root, calls, cache = project_with_toy, tmp_path / "calls.txt", tmp_path / "cache"
    calls.write_text("")
    listing = _cli(shell, "methods", calls=calls, cache=cache).stdout
    assert "toy" in listing and "a contract test" in listing
    helped = " ".join(_cli(shell, "run", "toy", "--help", calls=calls, cache=cache).stdout.split())
    assert "--scale N multiply the difference by this (default 1; at least 1)" in helped

    # the CLI: a run stopped at pair 20 (its own process, ended by the error) keeps its two finished shards; the
    # next computes only the other two
    argv = ("run", "toy", "--model", str(model_folder), "--benchmark", "demo", "--scale", "2")
    stopped = subprocess.run([sys.executable, "-m", "biascore", *argv], cwd=root, capture_output=True, text=True,
                             env=_env(root, calls, cache, TOY_STOP_AT="20"), timeout=600)
    assert stopped.returncode != 0 and "toy: stopped on purpose" in stopped.stderr and _computed(calls) == 2
    assert len(list((cache / "toy").glob("*.shards/*.parquet"))) == 2
    out = tmp_path / "toy.csv"
    done = _cli(shell, *argv, "--out", str(out), calls=calls, cache=cache)
    assert _computed(calls) == 4 and "mean_diff" in done.stdout
    frame = pd.read_csv(out)
    assert len(frame) == 38 and frame["diff"].notna().all()
    assert len(list((cache / "toy").glob("*.parquet"))) == 1 and not list((cache / "toy").glob("*.shards/*"))

    # the Python API: the CLI's entry, without loading the model
    api = _python(root, API.format(model=str(model_folder)), calls=calls, cache=cache)
    assert api["loads"] == 0 and api["summary"][0]["pairs"] == 38
    assert api["diff"] == pytest.approx(frame["diff"].tolist(), rel=1e-12)  # the CSV's text round trip
    assert _computed(calls) == 4

    # a sweep with a non-default option stores what `run --scale 3` reads
    sweep = _cli(shell, "sweep", "--models", str(model_folder), "--benchmarks", "demo", "crows-en-gso",
                 "--metrics", "toy", "--options", "toy.scale=3", calls=calls, cache=cache)
    assert "2 of 2 task(s) done" in sweep.stdout and "toy:" in sweep.stdout
    after_sweep = _computed(calls)
    assert after_sweep > 4
    _cli(shell, "run", "toy", "--model", str(model_folder), "--benchmark", "demo", "--scale", "3",
         calls=calls, cache=cache)
    assert _computed(calls) == after_sweep  # the sweep's entry, with its option in the key
    assert len(list((cache / "toy").glob("*.parquet"))) == 3

    # a snapshot: export, verify, open read-only and read the same frame back
    snap = tmp_path / "snap.zip"
    _cli(shell, "snapshot", "export", "--out", str(snap), calls=calls, cache=cache)
    assert "ok:" in _cli(shell, "snapshot", "verify", str(snap), calls=calls, cache=cache).stdout
    opened = _python(root, OPEN_SNAPSHOT.format(zip=str(snap)), calls=calls, cache=tmp_path / "elsewhere")
    assert opened["name"] == "random-mlm" and opened["diff"] == api["diff"]

    # the dashboard: a generated page on the menu, its option a control, the stored result's headline and table
    page = tmp_path / "toy_page.py"
    page.write_text(PAGE.format(model=str(model_folder)))
    done = subprocess.run([sys.executable, str(page)], cwd=root, capture_output=True, text=True, timeout=600,
                          env=_env(root, calls, cache, BIASCORE_MODELS=str(model_folder)))
    assert done.returncode == 0, done.stderr[-3000:]
    shown = json.loads(done.stdout.strip().splitlines()[-1])
    assert "toy" in shown["menu"] and shown["controls"] == ["toy_opt_scale"]
    assert shown["exceptions"] == [] and shown["errors"] == []
    mean_diff = api["summary"][0]["mean_diff"]
    assert shown["metrics"] == [["mean difference", f"{mean_diff:.4g}"]]
    assert [{"pairs": 38, "mean_diff": pytest.approx(mean_diff, rel=1e-12)}] in shown["tables"]
    assert _computed(calls) == after_sweep  # shown from the store: nothing computed


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root), "BIASCORE_REQUIRE_SHARED": "0"}
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *args], cwd=root,
                          env=env, capture_output=True, text=True, timeout=1200)


#: every test of REGISTRY_TESTS but the API runs of the methods other than the toy and docs/api.md's worked example
#: (an attribution run in a fresh interpreter): unchanged in the copy, run by the suite itself
ONLY_THE_TOYS_RUN = "not (test_every_method_runs_through_the_api or test_the_api_worked_example) or toy"
#: the hermetic tests run in the copy besides the generated-docs check (see the module docstring)
REGISTRY_TESTS = ("tests/test_docs.py", "tests/test_layout.py", "tests/test_api.py", "tests/cli/test_cli_help.py",
                  "tests/contract/test_method_plugins.py",
                  *(f"tests/sweep/test_sweep.py::{t}" for t in (
                      "test_every_input_kind_has_a_sweep_flag", "test_spec_from_yaml_and_toml_with_cli_overrides",
                      "test_bad_spec_is_one_clear_line", "test_a_sweep_with_options_stores_what_run_stores_with_them",
                      "test_removed_fast_exact_is_refused_with_one_line")),
                  "tests/views/test_dashboard_pages.py::test_a_method_without_a_page_gets_a_generated_one")


def test_the_registry_tests_pass_in_the_copy_with_the_toy(project_with_toy, shell):
    """The generated docs are checked (stale after adding the folder, current after --update-docs); the docs,
    layout, API, CLI help, plugin, sweep-spec and generated-page tests hold with the toy."""
    root = project_with_toy
    docs_test = "tests/test_docs.py::test_readme_table_and_methods_doc_are_the_registry_listing"
    stale = _pytest(root, docs_test)
    assert stale.returncode == 1 and "biascore methods --update-docs" in stale.stdout
    updated = shell("methods", "--update-docs")
    assert updated.returncode == 0 and "README.md" in updated.stdout and "docs/methods.md" in updated.stdout
    assert "| `toy` |" in (root / "README.md").read_text()
    assert "## `toy`" in (root / "docs" / "methods.md").read_text()
    done = _pytest(root, *REGISTRY_TESTS, "-m", "not shared", "-k", ONLY_THE_TOYS_RUN, "-rA")
    assert done.returncode == 0, done.stdout[-3000:]
    assert "PASSED tests/test_api.py::test_every_method_runs_through_the_api[fixture-toy]" in done.stdout  # it ran


def test_bad_option_values_are_one_line_errors_in_the_cli(shell, model_folder, tmp_path):
    done = _cli(shell, "run", "toy", "--model", str(model_folder), "--scale", "0",
                calls=tmp_path / "c", cache=tmp_path, ok=False)
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
