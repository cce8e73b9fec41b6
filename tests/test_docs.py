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
def test_the_api_worked_example_runs_in_a_fresh_interpreter(tmp_path, processes):
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


def test_readme_table_and_methods_doc_are_the_registry_listing():
    """README's methods table and docs/methods.md's method sections are generated from the registry (between
    their markers): never edited by hand, rewritten by `biascore methods --update-docs`."""
    from biascore.cli.run import generated_docs, generated_part

    for name, (markers, body) in generated_docs().items():
        text = (REPO / name).read_text(encoding="utf-8")
        part = generated_part(text, markers)
        assert part is not None, f"{name} lost the markers of its generated part"
        assert part == body.strip(), f"{name} is out of date: run `biascore methods --update-docs`"


def test_readme_is_a_front_door_with_working_links():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\((?!https?://|#)([^)#]+)", readme)
    assert links and all((REPO / link).exists() for link in links), [l for l in links if not (REPO / l).exists()]
    for doc in ("methods.md", "api.md", "dashboard.md", "operating.md", "performance.md", "adding-a-method.md"):
        assert f"docs/{doc}" in readme, doc
        assert (DOCS / doc).is_file(), doc


def _relative_links(text: str) -> list[str]:
    """Targets of the markdown links ``[text](target)`` that point into the repository (no scheme, not only an
    anchor), without their ``#anchor``."""
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    return [t.split("#", 1)[0] for t in targets
            if not re.match(r"[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def test_every_relative_link_in_the_docs_exists():
    docs = sorted(DOCS.glob("*.md"))
    assert len(docs) >= 10
    broken = [f"{doc.name}: {link}" for doc in docs for link in _relative_links(doc.read_text(encoding="utf-8"))
              if not (doc.parent / link).exists()]
    assert not broken, broken


def test_the_link_finder_sees_a_broken_link(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("[a](ok.md#part) [b](https://example.org/x) [c](#here) [d](missing/file.md)", encoding="utf-8")
    (tmp_path / "ok.md").write_text("", encoding="utf-8")
    assert _relative_links(doc.read_text(encoding="utf-8")) == ["ok.md", "missing/file.md"]


def test_readme_method_table_lists_every_registered_method():
    import biascore

    readme = (REPO / "README.md").read_text(encoding="utf-8")
    for row in biascore.methods().itertuples():
        assert f"| `{row.method}` | `{row.command}` |" in readme, f"README's method table lacks {row.method}"


def _settings_in_code() -> set[str]:
    names: set[str] = set()
    for path in [*(REPO / "biascore").rglob("*.py"), *(REPO / "views").rglob("*.py"), REPO / "app.py",
                 REPO / "tests" / "conftest.py"]:
        names |= set(re.findall(r"\bBIASCORE_[A-Z_]+\b", path.read_text(encoding="utf-8")))
    return names


def test_every_setting_has_one_row_in_the_settings_table():
    """Each BIASCORE_* variable the code reads is a row of docs/operating.md's settings table, and no other page
    keeps a table row of its own for it (one place states its default)."""
    names = _settings_in_code()
    assert {"BIASCORE_PUBLIC", "BIASCORE_CACHE_DIR"} <= names
    operating = (DOCS / "operating.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(BIASCORE_[A-Z_]+)` \|", operating, flags=re.M)
    assert sorted(names - set(rows)) == [], "settings missing from docs/operating.md's table"
    assert len(rows) == len(set(rows)), "a setting with two rows"
    for doc in [REPO / "README.md", *DOCS.glob("*.md")]:
        if doc.name != "operating.md":
            other = re.findall(r"^\| `(BIASCORE_[A-Z_]+)` \|", doc.read_text(encoding="utf-8"), flags=re.M)
            assert not other, f"{doc.name} has its own settings rows: {other}"


def test_the_layout_names_only_modules_that_exist():
    text = (DOCS / "adding-a-method.md").read_text(encoding="utf-8").split("## The layout", 1)[1]
    missing = []
    for folder, what in re.findall(r"^\| `([^`]+)` \| (.*) \|$", text, flags=re.M):
        if not (REPO / folder).exists():
            missing.append(folder)
        for module in re.findall(r"`([\w/]+\.py)`", what):
            if not ((REPO / folder / module).exists() or (REPO / module).exists()):
                missing.append(f"{folder}{module}")
    assert not missing, missing


def _table_rows(text: str) -> dict[str, list[str]]:
    """Rows of markdown tables whose first cell is a number: first cell → cells."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0].isdigit():
            rows[cells[0]] = cells
    return rows


def test_load_test_figures_are_those_of_the_results_file():
    """docs/performance.md quotes bench/results/load_test.md's rows and README its median times; after a new
    `bench/load_test.py` run, both must be brought up to date with the file."""
    results = (REPO / "bench" / "results" / "load_test.md").read_text(encoding="utf-8")
    header = next(line for line in results.splitlines() if line.startswith("| N |"))
    columns = [c.strip() for c in header.strip().strip("|").split("|")]
    measured = _table_rows(results)
    perf = (DOCS / "performance.md").read_text(encoding="utf-8").split("## Many people at once", 1)[1]
    perf_header = next(line for line in perf.splitlines() if line.startswith("| N |"))
    perf_columns = [c.strip() for c in perf_header.strip().strip("|").split("|")]
    quoted = _table_rows(perf)
    assert set(quoted) == set(measured), (sorted(quoted), sorted(measured))
    for n, cells in quoted.items():
        for column, cell in zip(perf_columns, cells):
            assert cell == measured[n][columns.index(column)], (n, column)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    medians = " / ".join(measured[n][columns.index("time to score p50 / p95 / max (s)")].split(" / ")[0]
                         for n in sorted(measured, key=int))
    assert re.sub(r"\s+", " ", f"median time to a score {medians} s") in re.sub(r"\s+", " ", readme)


def test_workshop_load_test_figures_are_those_of_the_results_file():
    """docs/performance.md quotes both tables of bench/results/ws_load_test.md (the Locust run at the server) and
    README its p95 times; after a new `bench/ws_load_test.py` run, both must be brought up to date with the file."""
    results = (REPO / "bench" / "results" / "ws_load_test.md").read_text(encoding="utf-8")
    measured = [_table_rows(part) for part in results.split("Where the time goes", 1)]
    perf = (DOCS / "performance.md").read_text(encoding="utf-8").split("## The workshop at the server", 1)[1]
    perf = perf.split("\n## ", 1)[0]
    quoted = [_table_rows(part) for part in perf.split("Where the time goes", 1)]
    assert quoted == measured
    header = next(line for line in results.splitlines() if line.startswith("| N |"))
    column = [c.strip() for c in header.strip().strip("|").split("|")].index("submit → score p50 / p95 / max (s)")
    ns = sorted(measured[0], key=int)
    p95 = " / ".join(measured[0][n][column].split(" / ")[1] for n in ns)
    expected = f"submit → score p95 {p95} s at N = {' / '.join(ns)}"
    readme = re.sub(r"\s+", " ", (REPO / "README.md").read_text(encoding="utf-8"))
    assert expected in readme, expected
