"""What a sweep prints at the end: the Overview table, every other method's table, and every failure by name.

The Overview table is the dashboard's Overview layout (Table 3 of the bias-attribution paper): one row per
model × input × score, labelled with its precision (never an unlabelled mix), the score overall (``all``) and per
bias type. Which summary column is a method's score comes from its
:meth:`~biascore.contract.method.Method.headline` (e.g. attribution: B = % of pairs with S_JSD < 0, PLL, lm-eval's
pct_stereotype; 50 = unbiased); the numbers are the method's own ``summary`` rows, nothing is recomputed here.
"""
from __future__ import annotations

import pandas as pd

from biascore.sweep.tasks import TaskResult


#: the columns naming one row of the Overview table
ROW = ["model", "precision", "benchmark", "metric"]


def _precision(r: TaskResult) -> str:
    return r.precision.label if r.precision is not None else "?"


def overview_table(results: list[TaskResult]) -> pd.DataFrame:
    """Wide table: ``model, precision, benchmark, metric, n, all, <bias types…>`` (scores in %). A model loaded
    another way (quantized, bf16, split) is a row of its own, named with it; ``precision`` is every row's, from its
    stored result (``exact (float32)``, ``approximate (int8 weights)``, ``served (…)``)."""
    rows = []
    for r in results:
        for metric, (column, label) in r.headlines.items():
            for rec in r.summaries.get(metric, []):
                rows.append({"model": r.spec.label, "precision": _precision(r), "benchmark": r.input,
                             "metric": label, "bias_type": rec["bias_type"], "score": rec[column], "n": rec["n"]})
    if not rows:
        return pd.DataFrame(columns=ROW + ["n", "all"])
    long = pd.DataFrame.from_records(rows)
    wide = long.pivot_table(index=ROW, columns="bias_type", values="score", sort=False, dropna=False)
    wide = wide.reindex(pd.MultiIndex.from_frame(long[ROW].drop_duplicates()))  # the rows run, not every combination
    n_all = long[long["bias_type"] == "all"].set_index(ROW)["n"]
    order = ["all"] + sorted(c for c in wide.columns if c != "all")
    wide = wide[order]
    wide.insert(0, "n", n_all.reindex(wide.index).astype("Int64"))
    wide.columns.name = None
    return wide.reset_index()


def precision_lines(results: list[TaskResult]) -> list[str]:
    """One note per precision that is not exact among the results (what its label means)."""
    seen = {r.precision.label: r.precision for r in results if r.precision is not None and not r.precision.exact}
    return [f"note: rows labelled {label}: {p.note}" for label, p in seen.items()]


def format_report(results: list[TaskResult], pairwise: list[str] | None = None) -> str:
    """The Overview table, the other metrics' tables, notes, the pairwise model comparison's lines
    (:func:`biascore.sweep.pairwise.format_pairwise`, when given) and the failed tasks with their errors."""
    lines = []
    table = overview_table(results)
    if len(table):
        labels = " / ".join(dict.fromkeys(table["metric"]))
        lines += [f"{labels} bias score by bias type (% of pairs; 50 = unbiased)",
                  table.to_string(index=False, float_format=lambda x: f"{x:.2f}", na_rep="—")]
    lines += precision_lines(results)
    for r in results:
        for metric in (m for m in r.summaries if m not in r.headlines):
            if r.summaries.get(metric):
                frame = pd.DataFrame.from_records(r.summaries[metric])
                lines += ["", f"{metric}: {r.task} — {_precision(r)}",
                          frame.to_string(index=False, float_format=lambda x: f"{x:.4g}", max_rows=20)]
        lines += [f"note: {r.task}: {n}" for n in r.notes]
    lines += pairwise or []
    done = [r for r in results if r.ok]
    failed = [r for r in results if not r.ok]
    lines += ["", f"{len(done)} of {len(results)} task(s) done, {len(failed)} failed; model loads: "
                  f"{sum(r.model_loaded for r in results)} (a task answered from the cache loads none)"]
    lines += [f"FAILED {r.task}: {r.error}" for r in failed]
    return "\n".join(lines)
