"""The cached attribution runs, as the dashboard browses them: listed and opened through the one runner's door.

Each run is one stored result of the ``attribution`` method (per model × benchmark × pair count ×
numerics). :func:`cached_runs` tabulates what :func:`biascore.runs.runner.stored` lists (with whether the
benchmark changed since: ``stale``); :func:`load_run` opens one through :func:`biascore.runs.runner.open_stored`
— the same verified read, the same derived frame (cached per JSD variant) as the CLI and the Python API.
"""
from __future__ import annotations

import pandas as pd

from biascore.methods import get
from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.inputs.datasets import Benchmark, BenchmarkError, load_benchmark
from biascore.models.precision import is_approximate
from biascore.runs.runner import DamagedResult, StaleResult, Stored  # noqa: F401 - what opening a run raises

#: ``entry`` is the runner's :class:`~biascore.runs.runner.Stored` (open it with :func:`load_run`)
RUN_COLUMNS = ["model", "benchmark", "n_pairs", "benchmark_pairs", "complete", "stale", "model_kind",
               "model_fingerprint", "dtype", "weights", "device", "approximate", "conventions", "entry", "mtime",
               "prefix_token_id", "prefix_token", "prefix_conventions", "published_prefix", "lmeval_prefix"]


def cached_runs(cache: ResultCache | None = None, data_dir=None) -> pd.DataFrame:
    """One row per cached attribution run (columns :data:`RUN_COLUMNS`), newest first per model × benchmark (remembered
    by the runner until a run is stored, replaced or removed: read-only). ``complete`` is False for a ``--limit`` run;
    ``stale`` is True when the benchmark file changed since (its content hash differs) or is no longer in the data
    directory; ``approximate`` is True for a bf16/fp16 run; ``conventions`` names the conventions the run recorded (e.g.
    the prefix token of a causal model)."""
    return runner.listed(get("attribution"), _tabulate, cache=cache, data_dir=data_dir)


def _tabulate(entries: list[Stored], data_dir) -> pd.DataFrame:
    benches: dict[str, Benchmark | None] = {}
    rows = []
    for entry in entries:
        meta, name = entry.meta, entry.input
        if name not in benches:
            try:
                benches[name] = load_benchmark(name, data_dir)
            except (BenchmarkError, KeyError):
                benches[name] = None
        bm = benches[name]
        n_pairs = int(meta.get("n_pairs", 0))
        total = len(bm.frame) if bm is not None else 0
        stale = bm is None or bm.first(n_pairs).content_hash != meta.get("input_hash")
        conventions = (meta.get("info") or {}).get("conventions") or {}
        rows.append({"model": meta.get("model", "?"), "benchmark": name, "n_pairs": n_pairs,
                     "benchmark_pairs": total, "complete": bm is not None and n_pairs == total, "stale": stale,
                     "model_kind": meta.get("model_kind", ""), "model_fingerprint": meta.get("model_fingerprint", ""),
                     "dtype": meta.get("dtype", ""), "weights": meta.get("weights", ""),
                     "device": meta.get("device", ""),
                     "approximate": is_approximate(meta.get("dtype", ""), meta.get("weights", "")),
                     "conventions": "; ".join(f"{k} {v}" for k, v in conventions.items()),
                     "entry": entry, "mtime": entry.mtime_ns / 1e9, **_prefix_columns(meta)})
    runs = pd.DataFrame.from_records(rows, columns=RUN_COLUMNS)
    return runs.sort_values(["model", "benchmark", "complete", "approximate", "published_prefix", "mtime"],
                            ascending=[True, True, False, True, False, False], kind="stable").reset_index(drop=True)


def _prefix_columns(meta: dict) -> dict:
    """The causal prefix token of a run (id, text, the conventions giving it) and whether it is the published
    convention's (B/PLL as published) and lm-eval's (its lm-eval-compatible score is lm-eval's). A masked LM has
    no prefix (id −1); a causal run cached before prefixes were recorded used the published convention."""
    if meta.get("model_kind") != "causal":
        return {"prefix_token_id": -1, "prefix_token": "", "prefix_conventions": "", "published_prefix": True,
                "lmeval_prefix": False}
    if "prefix_token_id" not in meta:
        return {"prefix_token_id": -1, "prefix_token": "(not recorded)", "prefix_conventions": "published",
                "published_prefix": True, "lmeval_prefix": False}
    conventions = list(meta.get("prefix_conventions") or [])
    return {"prefix_token_id": int(meta["prefix_token_id"]), "prefix_token": str(meta.get("prefix_token", "")),
            "prefix_conventions": ",".join(conventions), "published_prefix": "published" in conventions,
            "lmeval_prefix": "lmeval" in conventions}


def best_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The run to show per model × benchmark: not stale, complete before partial, exact (fp32) before approximate
    (bf16/fp16), the published prefix convention before another, newest first. A quantized model (``weights``
    int8 / int4) is a model of its own here: its runs are shown beside the full-weight model's, labelled."""
    usable = runs[~runs["stale"].astype(bool)]  # astype: an empty frame has object dtype
    return usable.drop_duplicates(["model", "weights", "benchmark"], keep="first").reset_index(drop=True)


def lmeval_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Per model × benchmark, the run whose prefix token is lm-eval's (so its ll_more/ll_less give the
    lm-eval-compatible score), chosen as :func:`best_runs` chooses; causal models only."""
    usable = runs[runs["lmeval_prefix"].astype(bool) & ~runs["stale"].astype(bool)]
    return usable.drop_duplicates(["model", "weights", "benchmark"], keep="first").reset_index(drop=True)


def load_run(entry: Stored, *, data_dir=None, cache: ResultCache | None = None, **options) -> pd.DataFrame:
    """The attribution frame (one row per pair) of one cached run, as :func:`biascore.runs.runner.open_stored` opens
    it: verified (a damaged file is removed: :class:`DamagedResult`; :class:`StaleResult` when the benchmark changed
    since), remembered, read-only. ``options``: those outside the key (``jsd``); the derived frame is cached per JSD
    variant (deriving 12,089 pairs takes seconds on a small CPU; reading it back, milliseconds)."""
    return runner.open_stored(get("attribution"), entry, cache=cache, data_dir=data_dir, **options).frame
