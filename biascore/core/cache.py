"""Parquet result cache: keyed by everything that determines a result, atomic, verified, resumable.

Layout::

    <cache>/<scorer>/<digest>.parquet          one finished result
    <cache>/<scorer>/<digest>.shards/NNNNN.parquet   completed shards of a run in progress

The digest is a SHA-256 of the key (model id + fingerprint, benchmark + content hash, options, engine
version). The key itself is stored in the parquet file's schema metadata and checked on every read, so a
truncated, foreign or corrupt file is detected, deleted and recomputed — never silently used.
Writes go to a temporary file in the same folder followed by ``os.replace`` (atomic on POSIX).

A cache inside an offline snapshot (:func:`biascore.core.settings.is_read_only`) is read-only: reads never
delete, lock or create anything there; :meth:`ResultCache.get_or_compute` returns a computed frame without
saving it, and :meth:`ResultCache.save` refuses with :class:`~biascore.core.settings.ReadOnlySnapshotError`.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from biascore import ENGINE_VERSION
from biascore.core import settings

log = logging.getLogger(__name__)
_META = b"biascore"


@dataclass(frozen=True)
class CacheKey:
    scorer: str
    parts: tuple  # sorted (name, value) pairs

    @classmethod
    def make(cls, scorer: str, **parts) -> "CacheKey":
        parts = {**parts, "engine_version": ENGINE_VERSION}
        return cls(scorer, tuple(sorted((k, _jsonable(v)) for k, v in parts.items())))

    @property
    def meta(self) -> dict:
        return {"scorer": self.scorer, **dict(self.parts)}

    @property
    def digest(self) -> str:
        return hashlib.sha256(json.dumps(self.meta, sort_keys=True).encode()).hexdigest()[:32]


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_jsonable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _jsonable(x)) for k, x in v.items()))
    if isinstance(v, Path):
        return str(v)
    return v


class CorruptCacheFile(RuntimeError):
    pass


class ResultCache:
    """Read and write cached result frames under one cache directory."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = settings.cache_dir(root)
        self.read_only = settings.is_read_only(self.root)

    # ---------------------------------------------------------------- paths
    def path(self, key: CacheKey) -> Path:
        return self.root / key.scorer / f"{key.digest}.parquet"

    def shard_dir(self, key: CacheKey) -> Path:
        return self.root / key.scorer / f"{key.digest}.shards"

    # ---------------------------------------------------------------- whole results
    def load(self, key: CacheKey) -> pd.DataFrame | None:
        """The cached frame, or None when absent. A corrupt or mismatched file is removed and None returned."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            return _read_verified(path, key)
        except CorruptCacheFile as exc:
            log.warning("discarding corrupt cache file %s: %s", path, exc)
            if not self.read_only:
                path.unlink(missing_ok=True)
            return None

    def save(self, key: CacheKey, frame: pd.DataFrame) -> Path:
        self.check_writable()
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, frame, key)
        return path

    def get_or_compute(self, key: CacheKey, compute: Callable[[], pd.DataFrame]) -> pd.DataFrame:
        frame = self.load(key)
        if frame is None:
            frame = compute()
            if not self.read_only:  # a snapshot keeps what it shipped with; a derived frame lives in memory
                self.save(key, frame)
        return frame

    def check_writable(self) -> None:
        """Raise :class:`~biascore.core.settings.ReadOnlySnapshotError` when this cache is a snapshot's."""
        if self.read_only:
            raise settings.ReadOnlySnapshotError(
                "this dashboard serves a read-only snapshot: results that are not in it cannot be computed here")

    def entries(self, scorer: str) -> list[dict]:
        """Metadata of every finished result of one scorer (what the Overview page lists)."""
        out = []
        for p in sorted((self.root / scorer).glob("*.parquet")):
            try:
                meta = json.loads(pq.read_schema(p).metadata[_META])
            except Exception:  # noqa: BLE001 - unreadable files are skipped here, recomputed on load
                continue
            meta["path"] = str(p)
            out.append(meta)
        return out

    # ---------------------------------------------------------------- shards (resume after interruption)
    def shards(self, key: CacheKey) -> "ShardWriter":
        return ShardWriter(self, key)


class ShardWriter:
    """Completed shards of a long run, written as they finish; a rerun skips what is already there."""

    def __init__(self, cache: ResultCache, key: CacheKey):
        self.cache, self.key = cache, key
        self.dir = cache.shard_dir(key)

    def completed(self) -> list[pd.DataFrame]:
        frames = []
        if not self.dir.exists():
            return frames
        for p in sorted(self.dir.glob("*.parquet")):
            try:
                frames.append(_read_verified(p, self.key))
            except CorruptCacheFile as exc:
                log.warning("discarding corrupt shard %s: %s", p, exc)
                p.unlink(missing_ok=True)
        return frames

    def write(self, frame: pd.DataFrame) -> None:
        self.cache.check_writable()
        self.dir.mkdir(parents=True, exist_ok=True)
        n = len(list(self.dir.glob("*.parquet")))
        _write_atomic(self.dir / f"{n:06d}.parquet", frame, self.key)

    def finish(self, frames: Iterable[pd.DataFrame]) -> pd.DataFrame:
        frames = [f for f in frames if len(f)]
        frame = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
        self.cache.save(self.key, frame)
        shutil.rmtree(self.dir, ignore_errors=True)
        return frame


def _write_atomic(path: Path, frame: pd.DataFrame, key: CacheKey) -> None:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META] = json.dumps({**key.meta, "digest": key.digest}).encode()
    table = table.replace_schema_metadata(meta)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_verified(path: Path, key: CacheKey) -> pd.DataFrame:
    try:
        table = pq.read_table(path)
    except Exception as exc:  # noqa: BLE001 - any read failure means the file is unusable
        raise CorruptCacheFile(f"unreadable parquet ({type(exc).__name__}: {exc})") from exc
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        raise CorruptCacheFile("no biascore metadata")
    try:
        meta = json.loads(raw)
    except ValueError as exc:
        raise CorruptCacheFile("metadata is not JSON") from exc
    if meta.get("digest") != key.digest:
        raise CorruptCacheFile(f"key mismatch (file has {meta.get('digest')}, expected {key.digest})")
    return table.to_pandas()
