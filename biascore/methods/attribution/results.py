"""The cached attribution runs, as the dashboard browses them: listed without loading a model, opened through
the one runner.

Each run is one stored result of the ``attribution`` method (per model × benchmark × pair count ×
numerics). :func:`cached_runs` lists them from the files' footers (with whether the benchmark changed since:
``stale``); :func:`load_run` opens one through :func:`biascore.core.runner.open_entry` — the same verified
read, the same derived frame (cached per JSD variant) as the CLI and the Python API.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from biascore.core.cache import CacheKey, CorruptCacheFile, ResultCache
from biascore.core.datasets import Benchmark, BenchmarkError, load_benchmark
from biascore.core.models import ModelIdentity
from biascore.core.precision import is_approximate
from biascore.core.runner import model_key, open_entry, resolve_input
from biascore.methods.attribution.jsd import JsdVariant

RUN_COLUMNS = ["model", "benchmark", "n_pairs", "benchmark_pairs", "complete", "stale", "model_kind",
               "model_fingerprint", "dtype", "weights", "device", "approximate", "conventions", "path", "mtime",
               "prefix_token_id", "prefix_token", "prefix_conventions", "published_prefix", "lmeval_prefix"]


class StaleResult(RuntimeError):
    """The cached run was made on a different version of the benchmark file."""


class DamagedResult(RuntimeError):
    """The cached run failed verification (and was removed); the message is one line for the page."""


def _method():
    from biascore.methods import get

    return get("attribution")


def cached_runs(cache: ResultCache | None = None, data_dir=None) -> pd.DataFrame:
    """One row per cached attribution run (columns :data:`RUN_COLUMNS`), newest first per model × benchmark.

    ``complete`` is False for a ``--limit`` run; ``stale`` is True when the benchmark file changed since
    (its content hash differs) or is no longer in the data directory; ``approximate`` is True for a bf16/fp16
    run; ``conventions`` names the conventions the run recorded (e.g. the prefix token of a causal model).
    """
    cache = cache or ResultCache()
    benches: dict[str, Benchmark | None] = {}
    rows = []
    for meta in cache.entries(_method().cache_folder):
        mtime = _mtime(meta["path"])
        if mtime is None:
            continue
        name = str(meta.get("input", ""))
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
                     "path": meta["path"], "mtime": mtime / 1e9, **_prefix_columns(meta)})
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


def runs_signature(cache: ResultCache | None = None) -> tuple:
    """A cheap fingerprint of the cached runs (file names and modification times): changes when a run is
    added, replaced or removed, so a caller can memoise :func:`cached_runs` on it."""
    cache = cache or ResultCache()
    return tuple((p.name, mtime) for p in sorted((cache.root / _method().cache_folder).glob("*.parquet"))
                 if (mtime := _mtime(p)) is not None)


def _mtime(path: str | Path) -> int | None:
    """Modification time in ns, or None when another process has just removed the file."""
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


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


def load_run(path: str | Path, benchmark: str, *, jsd: JsdVariant = "reference", data_dir=None,
             cache: ResultCache | None = None) -> pd.DataFrame:
    """The attribution frame (one row per pair, the engine's columns) of one cached run, through the one
    runner: the same verification as every cached read (page checksums, stored key, schema, every pair of
    the benchmark exactly once); a file failing it is removed and :class:`DamagedResult` raised with a
    one-line reason, so the caller can report it and offer to score again. The derived frame is cached per
    JSD variant (deriving 12,089 pairs takes seconds on a small CPU; reading it back, milliseconds)."""
    cache = cache or ResultCache()
    seen = cache.snapshot(path)
    try:
        _, meta = cache.read_entry(path)  # checksums and stored key, with the reason when they fail
    except (CorruptCacheFile, FileNotFoundError) as exc:
        if seen is not None:
            cache.discard(path, seen)
        raise DamagedResult(f"the cached result for {benchmark!r} was damaged ({exc}) and has been removed; "
                            "score it again") from exc
    bm = load_benchmark(benchmark, data_dir).first(int(meta.get("n_pairs", 0)) or 10 ** 9)
    if meta.get("input_hash") != bm.content_hash:
        raise StaleResult(f"the cached result was computed on a different version of {benchmark!r}; score it again")
    result = open_entry(_method(), meta, cache=cache, data_dir=data_dir, input=bm, jsd=jsd)
    if result is None:
        raise DamagedResult(f"the cached result for {benchmark!r} failed verification and has been removed; "
                            "score it again")
    return result.frame


def run_key(identity: ModelIdentity, benchmark: str, data_dir=None) -> CacheKey:
    """The cache key of a whole-benchmark exact run of ``identity`` on ``benchmark`` (what the dashboard's "Score
    now", the CLI and a sweep compute by default), without loading the model. With it,
    :meth:`ResultCache.progress` tells whether someone is computing that run now (per-key lock) and how far."""
    method = _method()
    options = method.Options.build()
    loaded = resolve_input(method, benchmark, Path(data_dir) if data_dir else None, None)
    return model_key(method, identity, loaded, options, Path(data_dir) if data_dir else None)
