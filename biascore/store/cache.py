"""Parquet result cache: keyed by everything that determines a result, atomic, verified, resumable, and computed
once per key however many processes, threads or browser tabs ask for it (docs/operating.md).

Layout::

    <cache>/<scorer>/<digest>.parquet                       one finished result
    <cache>/<scorer>/<digest>.lock                          file lock: held while the result is computed
    <cache>/<scorer>/<digest>.progress.json                 the holder's progress {done, total, pid}
    <cache>/<scorer>/<digest>.shards/AAAAAA-BBBBBB.parquet  completed shard: rows AAAAAA..BBBBBB-1 of the input

The digest is a SHA-256 of the key, also stored in the file's metadata and checked on every read with the pages'
CRCs and the caller's ``verify`` (a bad file is deleted and recomputed). A cache inside an offline snapshot
(:func:`biascore.settings.is_read_only`) is read-only: :meth:`ResultCache.save` raises
:class:`~biascore.settings.ReadOnlySnapshotError`.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from biascore.version import ENGINE_VERSION
from biascore import settings
from biascore.errors import one_line
from biascore.store.locks import held, is_held

log = logging.getLogger(__name__)
_META = b"biascore"
#: footer entry beside the key: what a computation recorded about itself (conventions such as the prefix token)
_INFO = b"biascore_info"


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
        return _digest(self.meta)


def _digest(meta: dict) -> str:
    return hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()[:32]


def _jsonable(v):
    if isinstance(v, (list, tuple)):
        return tuple(_jsonable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((k, _jsonable(x)) for k, x in v.items()))
    if isinstance(v, Path):
        return str(v)
    return v


class CorruptCacheFile(RuntimeError):
    """A cached file that cannot be used: unreadable, damaged, foreign, or failing its content check."""


#: A content check: raises :class:`CorruptCacheFile` when a frame is not a valid result.
Verify = Callable[[pd.DataFrame], None]


@dataclass(frozen=True)
class Progress:
    """How far the process computing a key has got."""

    done: int
    total: int
    pid: int


def check_ids(frame: pd.DataFrame, expected: Sequence, column: str = "pair_id") -> None:
    """Raise :class:`CorruptCacheFile` unless ``frame[column]`` holds every expected id exactly once."""
    if column not in frame.columns:
        raise CorruptCacheFile(f"no {column} column")
    got = frame[column]
    if got.duplicated().any():
        raise CorruptCacheFile(f"{int(got.duplicated().sum())} duplicated {column} value(s) in {len(got)} rows")
    if len(got) != len(expected) or set(got.tolist()) != set(expected):
        raise CorruptCacheFile(f"holds {len(got)} rows, expected exactly the {len(expected)} input {column}s")


class ResultCache:
    """Read and write cached result frames under one cache directory."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = settings.cache_dir(root)
        self.read_only = settings.is_read_only(self.root)

    def path(self, key: CacheKey, suffix: str = ".parquet") -> Path:
        """``key``'s file of the layout (module docstring): its result, ``.lock``, ``.progress.json``, ``.shards``."""
        return self.root / key.scorer / f"{key.digest}{suffix}"

    def lock_path(self, key: CacheKey) -> Path:
        return self.path(key, ".lock")

    def load(self, key: CacheKey, verify: Verify | None = None) -> pd.DataFrame | None:
        """The cached frame, or None when absent. A corrupt, mismatched or (per ``verify``) invalid file is
        removed and None returned."""
        found = self.load_entry(key, verify)
        return None if found is None else found[0]

    def load_entry(self, key: CacheKey, verify: Verify | None = None) -> tuple[pd.DataFrame, dict] | None:
        """(frame, stored metadata) of a cached result, or None when absent; the same checks as :meth:`load`.
        The metadata is the key's plus ``info`` (what the computation recorded, e.g. its conventions)."""
        path = self.path(key)
        try:
            seen = _identity(path)
        except FileNotFoundError:
            return None
        try:
            table, meta = _read_keyed(path, key)
            frame = table.to_pandas()
            if verify is not None:
                verify(frame)
            return frame, {**meta, "info": _stored_info(table), "path": str(path)}
        except CorruptCacheFile as exc:
            log.warning("discarding corrupt cache file %s: %s", path, exc)
            try:  # removed (recomputed when next asked) unless another process replaced it since (not in a snapshot)
                if not self.read_only and _identity(path) == seen:
                    path.unlink()
            except FileNotFoundError:
                pass
            return None

    def save(self, key: CacheKey, frame: pd.DataFrame, verify: Verify | None = None, info: dict | None = None) -> Path:
        """Store a finished result (after ``verify``, which raises on an invalid one); ``info`` is stored beside
        the key in the file's footer (not part of the key)."""
        self.check_writable()
        if verify is not None:
            verify(frame)
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, frame, key, info)
        return path

    def get_or_compute(self, key: CacheKey, compute: Callable[[], pd.DataFrame], *,
                       waiting: Callable[[Progress | None], None] | None = None) -> pd.DataFrame:
        """The cached result, or ``compute()`` stored — computed by one caller only: a second caller (thread
        or process) waits for the first one's result, calling ``waiting(progress)`` meanwhile.

        The caller that computes gets the stored result read back, so every caller receives the same frame, values
        and container types alike (a cache answer equals the fresh computation: docs/reproducibility.md)."""
        frame = self.load(key)
        if frame is not None:
            return frame
        if self.read_only:  # a snapshot keeps what it shipped with: no lock, no file; derived frames stay in memory
            return compute()
        with self.computing(key, waiting):
            frame = self.load(key)  # someone else may have finished it while we waited
            if frame is None:
                self.save(key, compute())
                frame = self.load(key)
                if frame is None:
                    raise CorruptCacheFile(f"{self.path(key)} could not be read back after it was written")
        return frame

    @contextlib.contextmanager
    def computing(self, key: CacheKey, waiting: Callable[[Progress | None], None] | None = None) -> Iterator[None]:
        """Hold ``key``'s file lock for the block. While another caller holds it, ``waiting`` gets its progress
        (None before it has reported any) every half second. The caller should :meth:`load` again inside."""
        self.check_writable()
        look = None if waiting is None else (lambda: waiting(self.progress(key)))
        with held(self.lock_path(key), look):
            try:
                yield
            finally:
                self.path(key, ".progress.json").unlink(missing_ok=True)

    def check_writable(self) -> None:
        """Raise :class:`~biascore.settings.ReadOnlySnapshotError` when this cache is a snapshot's."""
        if self.read_only:
            raise settings.ReadOnlySnapshotError(
                "this dashboard serves a read-only snapshot: results that are not in it cannot be computed here")

    def report_progress(self, key: CacheKey, done: int, total: int) -> None:
        """Publish the lock holder's progress for waiting callers (atomic replace of a small JSON file)."""
        path = self.path(key, ".progress.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"done": int(done), "total": int(total), "pid": os.getpid()})

    def progress(self, key: CacheKey) -> Progress | None:
        """The progress of whoever is computing ``key`` now, or None when nobody is (or nothing reported)."""
        try:
            raw = json.loads(self.path(key, ".progress.json").read_text())
            report = Progress(int(raw["done"]), int(raw["total"]), int(raw["pid"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return report if is_held(self.lock_path(key)) else None

    def entries(self, scorer: str) -> list[dict]:
        """Metadata of every finished result of one scorer (what the Overview page lists), from the footers;
        the content is verified when a result is opened (:meth:`load_entry`; a corrupt one is skipped here)."""
        return self._each(scorer, self.entry_meta, (CorruptCacheFile, FileNotFoundError))

    def fingerprint(self, scorer: str) -> tuple:
        """(file name, mtime in ns) of every finished result of one scorer, no file opened: changes when a result
        is added, replaced or removed."""
        return tuple(self._each(scorer, lambda p: (p.name, p.stat().st_mtime_ns), (FileNotFoundError,)))

    def _each(self, scorer: str, read: Callable[[Path], object], skip: tuple[type[Exception], ...]) -> list:
        """``read(path)`` of every finished result of one scorer, by name; one that raises ``skip`` is left out
        (e.g. removed by another process meanwhile)."""
        out = []
        for p in sorted((self.root / scorer).glob("*.parquet")):
            try:
                out.append(read(p))
            except skip:
                continue
        return out

    @staticmethod
    def entry_meta(path: str | os.PathLike) -> dict:
        """The stored key metadata (and ``info``) of a cached file, from its footer only (not verified: a
        verified read is :meth:`load_entry`). Raises :class:`CorruptCacheFile`."""
        try:
            footer = pq.read_schema(path).metadata or {}
            meta = json.loads(footer[_META])
            meta["info"] = json.loads(footer[_INFO]) if _INFO in footer else {}
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - any unreadable footer means the file is unusable
            raise CorruptCacheFile(f"unreadable footer ({type(exc).__name__})") from exc
        meta["path"] = str(path)
        return meta

    @staticmethod
    def check_entry(path: str | os.PathLike) -> None:
        """Check a finished result file without its key (a snapshot checks what it ships): readable with intact
        page checksums, metadata that hashes to the file's name. Raises :class:`CorruptCacheFile` (one line)."""
        path = Path(path)
        meta = _stored_meta(_read_table(path))
        if meta.get("digest") != path.stem or _digest({k: v for k, v in meta.items() if k != "digest"}) != path.stem:
            raise CorruptCacheFile("its stored key does not match its name")


_SHARD_NAME = re.compile(r"^(\d{6,})-(\d{6,})\.parquet$")


class ShardWriter:
    """Completed shards of a long run over the input rows ``ids``, on a fixed grid of ``size`` rows. Shard ``[a, b)``
    holds exactly the rows with ids ``ids[a:b]`` (file ``aaaaaa-bbbbbb.parquet``), checked on write and on read, so a
    resumed run — or two at once — can only rewrite a shard with the same rows, never add a second copy of a pair. Write
    shards while holding :meth:`ResultCache.computing`."""

    def __init__(self, cache: ResultCache, key: CacheKey, ids: Sequence, size: int, column: str = "pair_id"):
        if size < 1:
            raise ValueError("shard size must be at least 1")
        self.cache, self.key, self.ids, self.column = cache, key, list(ids), column
        self.dir = cache.path(key, ".shards")
        self.ranges = [(a, min(a + size, len(self.ids))) for a in range(0, len(self.ids), size)]

    def path(self, a: int, b: int) -> Path:
        return self.dir / f"{a:06d}-{b:06d}.parquet"

    def completed(self) -> dict[tuple[int, int], pd.DataFrame]:
        """The verified shards on the current grid; anything else in the folder is discarded."""
        done: dict[tuple[int, int], pd.DataFrame] = {}
        grid = set(self.ranges)
        for p in sorted(self.dir.glob("*.parquet")):
            m = _SHARD_NAME.match(p.name)
            rng = (int(m.group(1)), int(m.group(2))) if m else None
            try:
                if rng not in grid:
                    raise CorruptCacheFile("not a shard of the current grid")
                frame = _read_keyed(p, self.key)[0].to_pandas()
                check_ids(frame, self.ids[rng[0]:rng[1]], self.column)
            except CorruptCacheFile as exc:
                log.warning("discarding shard %s: %s", p, exc)
                p.unlink(missing_ok=True)
                continue
            done[rng] = frame
        return done

    def write(self, a: int, b: int, frame: pd.DataFrame) -> None:
        self.cache.check_writable()
        check_ids(frame, self.ids[a:b], self.column)
        self.dir.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.path(a, b), frame, self.key)

    def finish(self, frames: dict[tuple[int, int], pd.DataFrame], verify: Verify | None = None,
               info: dict | None = None) -> pd.DataFrame:
        """Join one frame per grid range in input order, check every id occurs exactly once (and ``verify``),
        store it as the finished result (with ``info``) and remove the shards."""
        missing = [r for r in self.ranges if r not in frames]
        if missing:
            raise CorruptCacheFile(f"{len(missing)} shard(s) missing, first rows {missing[0][0]}-{missing[0][1]}")
        parts = [frames[r] for r in self.ranges if len(frames[r])]
        frame = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame({self.column: []})

        def check(f: pd.DataFrame) -> None:
            check_ids(f, self.ids, self.column)
            if verify is not None:
                verify(f)

        self.cache.save(self.key, frame, check, info)
        shutil.rmtree(self.dir, ignore_errors=True)
        return frame


def _write_atomic(path: Path, table: pa.Table | pd.DataFrame, key: CacheKey, info: dict | None = None) -> None:
    """``table`` with ``key`` (and ``info`` when given) in its footer and page checksums, written atomically."""
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table, preserve_index=False)
    meta = dict(table.schema.metadata or {})
    meta[_META] = json.dumps({**key.meta, "digest": key.digest}).encode()
    if info is not None:
        meta[_INFO] = json.dumps(info, sort_keys=True).encode()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.{time.monotonic_ns()}.tmp")
    try:
        pq.write_table(table.replace_schema_metadata(meta), tmp, write_page_checksum=True)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_json_atomic(path: Path, record: dict) -> None:
    """Write ``record`` as JSON to ``path`` atomically (a reader sees the old file or the new one, never half)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)


def rekey_file(src: str | os.PathLike, key: CacheKey, target: str | os.PathLike, info: dict | None = None) -> None:
    """Write the cached result ``src`` to ``target`` under another ``key`` (a snapshot stores a model by its display
    name): the same table, ``key`` (and ``info`` when given) in its metadata, page checksums; atomic."""
    _write_atomic(Path(target), _read_table(Path(src)), key, info)


def _identity(path: Path) -> tuple[int, int]:
    st = path.stat()
    return st.st_ino, st.st_mtime_ns


def _read_table(path: Path) -> pa.Table:
    try:
        return pq.read_table(path, page_checksum_verification=True)
    except Exception as exc:  # noqa: BLE001 - any read failure means the file is unusable
        raise CorruptCacheFile(f"unreadable parquet ({one_line(exc, with_type=True, public=False)})") from exc


def _stored_meta(table: pa.Table) -> dict:
    raw = (table.schema.metadata or {}).get(_META)
    if raw is None:
        raise CorruptCacheFile("no biascore metadata")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise CorruptCacheFile("metadata is not JSON") from exc


def _stored_info(table: pa.Table) -> dict:
    raw = (table.schema.metadata or {}).get(_INFO)
    if raw is None:
        return {}
    try:
        info = json.loads(raw)
    except ValueError as exc:
        raise CorruptCacheFile("its recorded conventions are not JSON") from exc
    if not isinstance(info, dict):
        raise CorruptCacheFile("its recorded conventions are not a JSON object")
    return info


def _read_keyed(path: Path, key: CacheKey) -> tuple[pa.Table, dict]:
    """The table at ``path`` (page checksums verified) and its stored key, which must be ``key``'s."""
    table = _read_table(path)
    meta = _stored_meta(table)
    if meta.get("digest") != key.digest:
        raise CorruptCacheFile(f"key mismatch (file has {meta.get('digest')}, expected {key.digest})")
    return table, meta
