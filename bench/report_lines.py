"""Markdown lines shared by the load tests' reports (bench/load_test.py and bench/ws_load_test.py)."""
from __future__ import annotations


def error_sections(runs: list[dict]) -> list[str]:
    """For every run with failures, a heading "Errors at N = …" and its first error samples as a list."""
    lines: list[str] = []
    for r in runs:
        if r["error_samples"]:
            lines += ["", f"Errors at N = {r['users']} (first {len(r['error_samples'])}):", ""]
            lines += [f"- {e}" for e in r["error_samples"]]
    return lines
