"""Find and open cached attribution runs without loading a model (what the dashboard browses).

:func:`biascore.methods.attribution.scorer.score_benchmark` caches, per model × benchmark, the per-pair
log-probabilities (cache scorer ``"attribution"``); b(u), S_JSD and the PLL sums are derived from
them by :func:`biascore.methods.attribution.scorer.attribution_frame`. This module lists those cache entries
and rebuilds the attribution frame from one of them plus the benchmark file — the same call
``score_benchmark`` ends with, so the numbers are the engine's.
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from biascore.core.cache import CacheKey, CorruptCacheFile, ResultCache, check_ids
from biascore.core.datasets import Benchmark, BenchmarkError, load_benchmark
from biascore.core.models import ModelIdentity
from biascore.core.precision import is_approximate
from biascore.methods.attribution.jsd import JsdVariant
from biascore.methods.attribution.scorer import attribution_frame, logprob_cache_key

RUN_COLUMNS = ["model", "benchmark", "n_pairs", "benchmark_pairs", "complete", "stale", "model_kind",
               "model_fingerprint", "dtype", "device", "approximate", "path", "mtime"]


class StaleResult(RuntimeError):
    """The cached run was made on a different version of the benchmark file."""


class DamagedResult(RuntimeError):
    """The cached run failed verification (and was removed); the message is one line for the page."""


def cached_runs(cache: ResultCache | None = None, data_dir=None) -> pd.DataFrame:
    """One row per cached attribution run (columns :data:`RUN_COLUMNS`), newest first per model × benchmark.

    ``complete`` is False for a ``--limit`` run; ``stale`` is True when the benchmark file changed since
    (its content hash differs) or is no longer in the data directory; ``approximate`` is True for a bf16/fp16 run.
    """
    cache = cache or ResultCache()
    benches: dict[str, Benchmark | None] = {}
    rows = []
    for meta in cache.entries("attribution"):
        mtime = _mtime(meta["path"])
        if mtime is None:
            continue
        name = meta.get("benchmark", "")
        if name not in benches:
            try:
                benches[name] = load_benchmark(name, data_dir)
            except (BenchmarkError, KeyError):
                benches[name] = None
        bm = benches[name]
        n_pairs = int(meta.get("n_pairs", 0))
        total = len(bm.frame) if bm is not None else 0
        stale = bm is None or bm.first(n_pairs).content_hash != meta.get("benchmark_hash")
        rows.append({"model": meta.get("model", "?"), "benchmark": name, "n_pairs": n_pairs,
                     "benchmark_pairs": total, "complete": bm is not None and n_pairs == total, "stale": stale,
                     "model_kind": meta.get("model_kind", ""), "model_fingerprint": meta.get("model_fingerprint", ""),
                     "dtype": meta.get("dtype", ""), "device": meta.get("device", ""),
                     "approximate": is_approximate(meta.get("dtype", "")),
                     "path": meta["path"], "mtime": mtime / 1e9})
    runs = pd.DataFrame.from_records(rows, columns=RUN_COLUMNS)
    return runs.sort_values(["model", "benchmark", "complete", "approximate", "mtime"],
                            ascending=[True, True, False, True, False], kind="stable").reset_index(drop=True)


def runs_signature(cache: ResultCache | None = None) -> tuple:
    """A cheap fingerprint of the cached runs (file names and modification times): changes when a run is
    added, replaced or removed, so a caller can memoise :func:`cached_runs` on it."""
    cache = cache or ResultCache()
    return tuple((p.name, mtime) for p in sorted((cache.root / "attribution").glob("*.parquet"))
                 if (mtime := _mtime(p)) is not None)


def _mtime(path: str | Path) -> int | None:
    """Modification time in ns, or None when another process has just removed the file."""
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return None


def best_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The run to show per model × benchmark: not stale, complete before partial, exact (fp32) before approximate
    (bf16/fp16), newest first."""
    usable = runs[~runs["stale"].astype(bool)]  # astype: an empty frame has object dtype
    return usable.drop_duplicates(["model", "benchmark"], keep="first").reset_index(drop=True)


def load_run(path: str | Path, benchmark: str, *, jsd: JsdVariant = "reference", data_dir=None,
             cache: ResultCache | None = None) -> pd.DataFrame:
    """The attribution frame (one row per pair, the engine's columns) of one cached run.

    The run is read through the same verification as the CLI's cache reads (page checksums, stored key,
    every pair of the benchmark exactly once); a file failing it is removed and :class:`DamagedResult`
    raised with a one-line reason, so the caller can report it and offer to score again.

    Deriving b(u) and the word units for 12,089 pairs takes tens of seconds on a small CPU, so the derived
    frame is itself cached (scorer ``attribution_frame``, keyed by the run's digest, the JSD variant and the
    benchmark's content hash); later loads read one parquet file.
    """
    cache = cache or ResultCache()
    try:
        seen = cache.snapshot(path)
        logp, meta = cache.read_entry(path)
        bm = load_benchmark(benchmark, data_dir)
        bm = bm.first(int(meta.get("n_pairs", len(logp))))
        if meta.get("benchmark_hash") and meta["benchmark_hash"] != bm.content_hash:
            raise StaleResult(f"the cached result was computed on a different version of {benchmark!r}; "
                              "score it again")
        check_ids(logp, bm.frame["pair_id"].tolist())
    except CorruptCacheFile as exc:
        if seen is not None:  # (None: it was not there to begin with)
            cache.discard(path, seen)
        raise DamagedResult(f"the cached result for {benchmark!r} was damaged ({exc}) and has been removed; "
                            "score it again") from exc
    key = CacheKey.make("attribution_frame", run=meta["digest"], jsd=jsd, benchmark_hash=bm.content_hash)
    return cache.get_or_compute(key, lambda: attribution_frame(bm, logp, jsd))


def run_key(identity: ModelIdentity, benchmark: str, data_dir=None) -> CacheKey:
    """The cache key of a whole-benchmark exact run of ``identity`` on ``benchmark`` (what the dashboard's "Score
    now", the CLI and a sweep compute by default), without loading the model. With it,
    :meth:`ResultCache.progress` tells whether someone is computing that run now (per-key lock) and how far."""
    return logprob_cache_key(identity, load_benchmark(benchmark, data_dir), None)
