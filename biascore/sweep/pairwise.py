"""The sweep report's pairwise table: every two models swept on the same pair benchmark, compared pair by pair.

For each benchmark and each two models whose attribution task succeeded, the two cached results are read back
(``only_cached``) and compared with :func:`biascore.methods.attribution.compare.compare_results` (docs/scores.md,
"Comparing two models"; the lm-eval columns when both ran ``lmeval``). ``mcnemar_p_holm`` adjusts B's overall
p-values across every row of the table (Holm).
"""
from __future__ import annotations

from itertools import combinations

import pandas as pd

from biascore.models.precision import precision_label
from biascore.store.cache import ResultCache
from biascore.models.handle import ModelHandle
from biascore.models.loading import ModelLoadError
from biascore.models.spec import ModelSpec
from biascore.runs.runner import run
from biascore.methods import get
from biascore.methods.attribution.compare import compare_results
from biascore.stats.paired import holm

COLUMNS = ["benchmark", "model_a", "model_b", "precision_a", "precision_b", "n", "score_a", "score_b", "delta", "ci_low", "ci_high",
           "n_discordant", "mcnemar_p", "mcnemar_p_holm", "sjsd_delta", "sjsd_ci_low", "sjsd_ci_high",
           "pll_score_a", "pll_score_b", "pll_delta", "pll_ci_low", "pll_ci_high", "pll_n_discordant",
           "pll_mcnemar_p", "lmeval_delta", "lmeval_ci_low", "lmeval_ci_high", "lmeval_mcnemar_p"]


def pairwise_table(results, *, cache_dir: str, data_dir: str | None = None, limit: int | None = None,
                   method_options: dict | None = None, n_boot: int = 2000,
                   seed: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """(table, notes): one row per benchmark × two models (columns :data:`COLUMNS`; B unprefixed)."""
    method = get("attribution")
    cache = ResultCache(cache_dir)
    values = dict((method_options or {}).get("attribution", {}))

    handles: dict[ModelSpec, ModelHandle] = {}  # one per model: a served model is measured once

    def cached(model: ModelSpec, benchmark: str, **extra):
        if model not in handles:
            handles[model] = ModelHandle(model)
            if model.served:  # its identity is measured on the server: connect (nothing is scored)
                handles[model].load()
        return run(method, handles[model], benchmark, limit=limit, cache=cache, data_dir=data_dir, only_cached=True,
                   **values, **extra)

    # a model loaded another way (quantized, bf16, split) is a model of its own, named with it
    swept: dict[str, dict[ModelSpec, set]] = {}
    for r in results:
        if r.ok and {"attribution", "pll"} & set(r.metrics):
            swept.setdefault(r.input, {}).setdefault(r.spec, set()).update(r.metrics)
    rows, notes = [], []
    for benchmark, models in swept.items():
        for a, b in combinations(list(models), 2):
            try:
                ra, rb = cached(a, benchmark), cached(b, benchmark)
                if ra is None or rb is None:
                    notes.append(f"{benchmark}: {a.label} vs {b.label}: a result is no longer in the cache")
                    continue
                row = compare_results(ra, rb, n_boot=n_boot, seed=seed).summary().iloc[0].to_dict()
                if "lmeval" in models[a] and "lmeval" in models[b]:
                    la, lb = cached(a, benchmark, prefix="lmeval"), cached(b, benchmark, prefix="lmeval")
                    if la is not None and lb is not None:
                        lm = compare_results(la, lb, n_boot=n_boot, seed=seed).summary().iloc[0]
                        row.update({k: lm[k] for k in lm.index if k.startswith("lmeval_")})
            except (ValueError, ModelLoadError) as exc:  # different pairs under one name, a server gone: said
                notes.append(f"{benchmark}: {a.label} vs {b.label}: {exc}")
                continue
            rows.append({**row, "benchmark": benchmark, "model_a": a.label, "model_b": b.label})
    table = pd.DataFrame.from_records(rows).reindex(columns=COLUMNS)
    if len(table):
        table["mcnemar_p_holm"] = holm(table["mcnemar_p"].to_numpy())
    return table, notes


def format_pairwise(table: pd.DataFrame, notes: list[str]) -> list[str]:
    """The report's lines for the pairwise table (nothing when fewer than two models share a benchmark)."""
    if table.empty and not notes:
        return []
    exact = {precision_label("float32"), precision_label("float64")}
    labels = set(table["precision_a"].dropna()) | set(table["precision_b"].dropna())
    mixed = bool(labels - exact)  # any side not exact: each row says which side is which
    shown = ["benchmark", "model_a", "model_b", *(["precision_a", "precision_b"] if mixed else []), "n", "score_a",
             "score_b", "delta", "ci_low", "ci_high", "n_discordant", "mcnemar_p", "mcnemar_p_holm", "sjsd_delta", "pll_delta", "pll_ci_low", "pll_ci_high",
             "pll_mcnemar_p"]
    if table["lmeval_delta"].notna().any():
        shown += ["lmeval_delta", "lmeval_ci_low", "lmeval_ci_high", "lmeval_mcnemar_p"]
    fmt = {c: (lambda x: f"{x:.3g}") for c in ("mcnemar_p", "mcnemar_p_holm", "pll_mcnemar_p", "lmeval_mcnemar_p")}
    fmt["sjsd_delta"] = lambda x: f"{x:.5f}"
    lines = ["", "Pairwise model comparison on the pairs both scored (B unprefixed, PLL pll_, lm-eval lmeval_; "
                 "delta = model_b − model_a in % points; 95% paired bootstrap interval, 2000 resamples; McNemar's "
                 "exact test on the discordant verdicts; mcnemar_p_holm: Holm across the rows of this table; "
                 "per bias type: biascore compare)"]
    if len(table):
        lines.append(table[shown].to_string(index=False, formatters=fmt, float_format=lambda x: f"{x:.2f}", na_rep="—"))
    if mixed:
        lines.append("note: pairwise: a row whose precision_a or precision_b is not exact compares an approximate or "
                     "served result: its delta holds that side's numerical error beside any difference between the "
                     "models")
    return lines + [f"note: pairwise: {n}" for n in notes]
