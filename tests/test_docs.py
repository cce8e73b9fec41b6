"""The documentation is executed and checked against the code: the Python API's worked example runs in a fresh
interpreter, docs/methods.md is the registry's own listing, and README stays a front door whose links exist."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

DOCS = REPO / "docs"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


@pytest.mark.shared("data")  # the example's semantic fields read the USAS lexicon
def test_the_api_worked_example_runs_in_a_fresh_interpreter(tmp_path):
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    example = _python_blocks(text.split("## A worked example", 1)[1])[0]
    env = {**os.environ, "BIASCORE_CACHE_DIR": str(tmp_path)}
    (tmp_path / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
    done = subprocess.run([sys.executable, "-c", example], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "attribution: smollm2-135m on demo" in out and re.search(r"B = \d+\.\d \(95 % CI", out)
    assert "biased" in out  # a verdict


def test_methods_doc_is_the_registry_listing():
    from biascore.cli.run import methods_markdown

    text = (DOCS / "methods.md").read_text(encoding="utf-8")
    generated = methods_markdown()
    assert generated in text, "docs/methods.md is out of date: regenerate it with `biascore methods --markdown`"


def test_readme_is_a_front_door_with_working_links():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\((?!https?://|#)([^)#]+)", readme)
    assert links and all((REPO / link).exists() for link in links), [l for l in links if not (REPO / l).exists()]
    for doc in ("methods.md", "api.md", "dashboard.md", "operating.md", "performance.md", "adding-a-method.md"):
        assert f"docs/{doc}" in readme, doc
        assert (DOCS / doc).is_file(), doc
