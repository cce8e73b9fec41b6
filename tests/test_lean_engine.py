"""The scoring engine stays lean: ``python -m biascore score`` and the Python API for it import no dashboard or
tagging packages, so a GPU machine with only torch + transformers + pandas + pyarrow (+ scipy, tqdm) can score.
Checked in a fresh interpreter by reading ``sys.modules`` after a real (tiny) scoring run."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import FIXTURE_DATA, REPO

HEAVY = ["streamlit", "pymusas", "spacy", "altair", "plotly", "playwright", "ray"]

_CHECK = """
import json, sys
{body}
print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({heavy!r}))))
"""


def _imported_heavy(body: str, tmp_path: Path, data_dir: Path) -> list[str]:
    env = {**os.environ, "BIASCORE_DATA_DIR": str(data_dir), "BIASCORE_CACHE_DIR": str(tmp_path / "cache"),
           "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHECK.format(body=body, heavy=HEAVY)], cwd=REPO, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_cli_score_imports_no_dashboard_or_tagging_packages(tmp_path, hermetic_models, processes):
    model = str(hermetic_models / "random-mlm")
    body = ("from biascore.cli.main import main\n"
            f"assert main(['score', '--model', {model!r}, '--benchmark', 'demo', '--limit', '3', "
            "'--device', 'cpu']) == 0")
    assert _imported_heavy(body, tmp_path, FIXTURE_DATA) == []


def test_python_api_score_imports_no_dashboard_or_tagging_packages(tmp_path, hermetic_models, processes):
    model = str(hermetic_models / "random-mlm")
    body = ("from biascore.models.loading import load_model\n"
            "from biascore.runs import runner\n"
            "from biascore.methods import get\n"
            "from biascore.methods.attribution.scorer import summarize\n"
            f"frame = runner.run(get('attribution'), load_model({model!r}, device='cpu'), 'demo', limit=3).frame\n"
            "summarize(frame)")
    assert _imported_heavy(body, tmp_path, FIXTURE_DATA) == []


def test_the_check_sees_a_heavy_import(tmp_path, processes):
    """The probe itself works: importing the tagging module's tagger dependencies is reported."""
    pytest.importorskip("pymusas")
    assert "pymusas" in _imported_heavy("import pymusas", tmp_path, FIXTURE_DATA)
