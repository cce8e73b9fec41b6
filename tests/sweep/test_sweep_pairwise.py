"""The sweep report's pairwise table: two models swept on one benchmark are compared pair by pair, with the same
numbers as biascore.compare on their cached results."""
from __future__ import annotations

import contextlib
import io

import pytest

import biascore
from biascore.cli.main import main
from biascore.sweep.pairwise import pairwise_table
from biascore.sweep.report import format_report


def test_local_sweep_reports_the_pairwise_comparison(hermetic_models, tmp_path):
    mlm, gpt = str(hermetic_models / "random-mlm"), str(hermetic_models / "random-gpt2")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["sweep", "--models", mlm, gpt, "--benchmarks", "demo", "--metrics", "attribution", "pll",
                   "--cache-dir", str(tmp_path)])
    text = out.getvalue()
    assert rc == 0 and "Pairwise model comparison on the pairs both scored" in text and "McNemar" in text
    a = biascore.run("attribution", mlm, "demo", cache_dir=tmp_path, only_cached=True)
    b = biascore.run("attribution", gpt, "demo", cache_dir=tmp_path, only_cached=True)
    expected = biascore.compare(a, b).summary().iloc[0]
    line = next(ln for ln in text.splitlines() if ln.lstrip().startswith("demo"))
    assert f"{expected.delta:.2f}" in line and f"{expected.ci_low:.2f}" in line and f"{expected.pll_delta:.2f}" in line
    table, notes = pairwise_table([], cache_dir=str(tmp_path))
    assert table.empty and not notes
    assert "Pairwise" not in format_report([])  # nothing to compare: no table


def test_pairwise_table_equals_compare(hermetic_models, tmp_path):
    from biascore.models.spec import ModelSpec
    from biascore.sweep.tasks import TaskResult

    mlm, gpt = str(hermetic_models / "random-mlm"), str(hermetic_models / "random-gpt2")
    for model in (mlm, gpt):
        biascore.run("attribution", model, "demo", cache_dir=tmp_path, progress=False)
    results = [TaskResult(f"{m} × demo", ModelSpec(m), "pairs", "demo", ("attribution",), ok=True) for m in (mlm, gpt)]
    table, notes = pairwise_table(results, cache_dir=str(tmp_path), n_boot=500)
    assert not notes and len(table) == 1
    expected = biascore.compare(biascore.run("attribution", mlm, "demo", cache_dir=tmp_path, only_cached=True),
                                biascore.run("attribution", gpt, "demo", cache_dir=tmp_path, only_cached=True),
                                n_boot=500).summary().iloc[0]
    row = table.iloc[0]
    for col in ("n", "delta", "ci_low", "ci_high", "mcnemar_p", "sjsd_delta", "pll_delta", "pll_mcnemar_p"):
        assert row[col] == pytest.approx(expected[col]), col
    assert row.mcnemar_p_holm == pytest.approx(row.mcnemar_p)  # one row: a family of one
