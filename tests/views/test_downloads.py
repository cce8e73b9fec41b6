"""Every download button on every page leaves the page as it is (``on_click="ignore"``).

A download that reruns the page renews the ids of the page's deferred downloads (a callable as ``data``): a second
download clicked before the browser has the new ids silently fails (Streamlit 1.67; seen in CI as a dataset zip that
never arrived after the reviews CSV was downloaded on a slow machine)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def download_calls() -> list[tuple[str, int, ast.Call]]:
    calls = []
    for path in sorted([ROOT / "app.py", *(ROOT / "views").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "download_button":
                calls.append((path.relative_to(ROOT).as_posix(), node.lineno, node))
    return calls


def test_every_download_button_leaves_the_page_as_it_is():
    calls = download_calls()
    assert len(calls) >= 4  # the CSV kit, the review's three, the figure exports
    rerunning = [f"{path}:{line}" for path, line, call in calls
                 if not any(k.arg == "on_click" and isinstance(k.value, ast.Constant) and k.value.value == "ignore"
                            for k in call.keywords)]
    assert rerunning == []
