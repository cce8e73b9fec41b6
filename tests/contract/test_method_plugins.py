"""Methods from other installed packages: the ``biascore.methods`` entry-point group, through the real
``importlib.metadata`` machinery (a ``*.dist-info`` folder with ``entry_points.txt`` on ``sys.path`` of a fresh
process, as pip installs one). A plugin joins every shell (``biascore methods``, ``biascore run``, the API), is
loaded only when the registry is read, and a name clash with a built-in or another plugin is refused in one
line naming both."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import FIXTURE_DATA, REPO

PLUGIN = '''"""A plugin method: per pair, the word count difference of the two sentences."""
from dataclasses import dataclass

import pandas as pd

from biascore.inputs.kinds import PAIRS
from biascore.contract.method import Method
from biascore.contract.options import Options, option
from biascore.contract.schema import columns


@dataclass(frozen=True)
class WordDiffOptions(Options):
    scale: int = option(1, minimum=1, help="multiply the difference by this")


class {cls}(Method):
    name = "{name}"
    summary_line = "word count difference of the two sentences (a plugin)"
    paper = "none (a test plugin)"
    input_kind = PAIRS
    Options = WordDiffOptions
    schema = columns([("pair_id", "int64", "the pair"), ("diff", "int64", "words(more) - words(less), scaled")])
    needs_model = False
    one_row_per_input_row = True

    def compute(self, ctx, bench, options):
        f = bench.frame
        return pd.DataFrame({{"pair_id": f["pair_id"].astype("int64"),
                             "diff": (f["sent_more"].str.split().str.len()
                                      - f["sent_less"].str.split().str.len()) * options.scale}})
'''


def install(site: Path, dist: str, module: str, entry: str, cls: str, name: str, source: str = PLUGIN) -> None:
    """What pip leaves for a package with one entry point: its module (``source`` with its class and method names)
    and its ``<dist>-0.1.dist-info``."""
    (site / f"{module}.py").write_text(source.format(cls=cls, name=name))
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"  # the wheel spelling of the name
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[biascore.methods]\n{entry} = {module}:{cls}\n")


def python(site: Path, code: str, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)]), "BIASCORE_CACHE_DIR": str(tmp),
           "BIASCORE_DATA_DIR": str(FIXTURE_DATA)}
    return subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True,
                          timeout=600)


def cli(site: Path, tmp: Path, *argv: str) -> subprocess.CompletedProcess:
    return python(site, f"import sys; from biascore.cli.main import main; sys.exit(main({list(argv)!r}))", tmp)


def test_an_installed_plugin_joins_every_shell_and_loads_lazily(tmp_path, processes):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "biascore-worddiff", "worddiff_plugin", "worddiff", "WordDiff", "worddiff")
    lazy = python(site, "import sys, biascore; print('worddiff_plugin' in sys.modules); biascore.methods(); "
                        "print('worddiff_plugin' in sys.modules)", tmp_path)
    assert lazy.returncode == 0, lazy.stderr
    assert lazy.stdout.split() == ["False", "True"]  # imported when the registry is read, not before

    model = tmp_path / "model"  # identity read from its files; a method with needs_model=False never loads it
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"architectures": ["BertForMaskedLM"], "model_type": "bert"}))
    listing = cli(site, tmp_path, "methods")
    assert listing.returncode == 0 and "worddiff" in listing.stdout and "a plugin" in listing.stdout
    assert "--scale" in cli(site, tmp_path, "run", "worddiff", "--help").stdout
    done = cli(site, tmp_path, "run", "worddiff", "--model", str(model), "--benchmark", "demo", "--scale", "2",
               "--out", str(tmp_path / "out.csv"))
    assert done.returncode == 0, done.stderr
    api = python(site, f"import biascore; from biascore.models.handle import ModelHandle; "
                       f"r = biascore.run('worddiff', ModelHandle({str(model)!r}), 'demo', scale=2, progress=False); "
                       "print(len(r.frame), int(r.frame['diff'].abs().sum()))", tmp_path)
    assert api.returncode == 0, api.stderr
    assert api.stdout.split()[0] == "38"


def test_a_plugin_taking_a_builtin_name_is_refused_in_one_line(tmp_path, processes):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "biascore-impostor", "impostor_plugin", "attribution", "Impostor", "attribution")
    done = cli(site, tmp_path, "methods")
    assert done.returncode == 2
    err = done.stderr.strip()
    assert "\n" not in err, err
    assert ("method plugin 'attribution' (impostor_plugin:Impostor, from biascore-impostor) refused: method name "
            "'attribution' registered twice: biascore.methods.attribution.method and impostor_plugin") in err


def test_two_plugins_with_one_name_are_refused_in_one_line(tmp_path, processes):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "biascore-first", "first_plugin", "first", "First", "twin")
    install(site, "biascore-second", "second_plugin", "second", "Second", "twin")
    done = cli(site, tmp_path, "methods")
    assert done.returncode == 2 and "\n" not in done.stderr.strip()
    assert "method plugin 'second' (second_plugin:Second, from biascore-second) refused: method name 'twin' " \
           "registered twice: first_plugin and second_plugin" in done.stderr
