"""Result files: what ``--out FILE.parquet`` and :meth:`~biascore.contract.result.Result.to_parquet` write, and the
one reader of result parquet files, :func:`load_result` (``biascore.load_result``).

:func:`load_result` reads three kinds of file, each checked at load time, never later:

* a **result file** — :meth:`Result.to_parquet`, and ``--out x.parquet`` of one model on one input (the CLI writes
  it through :func:`write_result_file`, so it *is* that result file);
* a **cache file** — ``<cache>/<method>/<digest>.parquet`` (or its ``<method>.derived/`` frame), opened through
  the runner's door (:func:`biascore.runs.stored.open_stored`: page checksums, stored key = file name,
  schema, input unchanged), so it needs its input in the data directory;
* neither — refused in one line saying what the file is.

Refused in one line (:class:`ResultFileError`): a file written by **another engine version** (``engine_version``
of its key ≠ :data:`biascore.version.ENGINE_VERSION`) or another version of its method (``method_version``) — its
numbers are not this engine's, so it is run again rather than read as if it were; a result file whose columns are
without every column of its method's schema (:attr:`Method.schema`; the
cache's rule); a file stacking several results (``--out`` of several models or
inputs).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from biascore.store.cache import CorruptCacheFile, ResultCache
from biascore.errors import one_line
from biascore.contract.method import Method
from biascore.contract.result import RECORD_FORMAT, RECORD_KEY, Result, write_frame
from biascore.version import ENGINE_VERSION


class ResultFileError(ValueError):
    """A file :func:`load_result` cannot read as a result (one line)."""


#: the footer key of a cache file's stored key (biascore.store.cache)
_CACHE_KEY = b"biascore"


def write_result_file(results: Sequence[Result], frame: pd.DataFrame, path: str | Path) -> Path:
    """What ``--out`` writes for ``results``: ``frame`` (the method's output table) as CSV, or as parquet — one
    result: its result file (:meth:`Result.to_parquet`, read back by :func:`load_result`); several results:
    the stacked ``frame`` with a record saying how many it holds (:func:`load_result` refuses it in one line)."""
    path = Path(path)
    if path.suffix != ".parquet":
        write_frame(frame, str(path))
    elif len(results) == 1:
        results[0].to_parquet(path)
    else:
        import pyarrow as pa
        import pyarrow.parquet as pq

        record = {"format": RECORD_FORMAT, "method": results[0].method.name, "stacked": len(results)}
        table = pa.Table.from_pandas(frame, preserve_index=False)
        pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}),
                                                      RECORD_KEY: json.dumps(record).encode()}), path)
    return path


def load_result(path: str | Path, *, data_dir: str | Path | None = None) -> Result:
    """The :class:`Result` a result file or a cache file holds (module docstring): the same frame, meta, options,
    summary (and ``pair(i)`` for attribution results). No model is loaded and nothing is recomputed. A result
    file's input is reloaded by name from the data directory when its content hash still matches (else
    ``input`` is None); a cache file needs it. Anything else: :class:`ResultFileError`, one line."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise ResultFileError(f"no result file at {path}")
    try:
        footer = pq.read_schema(path).metadata or {}
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a non-parquet file
        raise ResultFileError(f"{path} is not a parquet file ({type(exc).__name__})") from None
    if RECORD_KEY in footer:
        return _result_file(path, footer[RECORD_KEY], data_dir)
    cache_meta = _json(footer.get(_CACHE_KEY))
    if isinstance(cache_meta, dict) and "scorer" in cache_meta and "digest" in cache_meta:
        return _cache_file(path, data_dir)
    raise ResultFileError(f"{path} holds a table but no biascore result (write one with Result.to_parquet or "
                          "`--out FILE.parquet` of one model on one input, or load a file of the result cache)")


def _json(raw: bytes | None) -> Any:
    try:
        return json.loads(raw) if raw is not None else None
    except ValueError:
        return None


def _method(name: str, path: Path) -> Method:
    from biascore.methods import get

    try:
        return get(name)
    except (KeyError, ValueError) as exc:
        raise ResultFileError(f"{path} holds a result of method {name!r}, which this biascore does not have "
                              f"({one_line(exc)})") from None


def _check_versions(path: Path, method: Method, meta: dict) -> None:
    engine = str(meta.get("engine_version", "unknown"))
    if engine != ENGINE_VERSION:
        raise ResultFileError(f"{path} was computed by biascore engine {engine}, not this engine ({ENGINE_VERSION}): "
                              f"its numbers are not this engine's; run {method.name} on this model and input again")
    version = meta.get("method_version")
    if version is not None and int(version) != method.version:
        raise ResultFileError(f"{path} was computed by version {version} of {method.name}, not this one "
                              f"({method.version}): run it again")


def _result_file(path: Path, raw: bytes, data_dir: str | Path | None) -> Result:
    import pyarrow.parquet as pq

    record = _json(raw)
    if not isinstance(record, dict) or "method" not in record:
        raise ResultFileError(f"{path}: its result record cannot be read")
    if int(record.get("format", 0)) > RECORD_FORMAT:
        raise ResultFileError(f"{path} was written by a newer biascore (record format {record['format']})")
    method = _method(str(record["method"]), path)
    if record.get("stacked"):
        raise ResultFileError(f"{path} holds {record['stacked']} {method.name} results stacked (--out of several "
                              "models or inputs): write one model on one input to a file to load it as a result")
    try:
        options = method.Options.from_values(record["options"])
        meta = dict(record["meta"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultFileError(f"{path}: its result record cannot be read ({one_line(exc)})") from None
    _check_versions(path, method, meta)
    frame = pq.read_table(path).to_pandas()
    missing = [c.name for c in method.schema if c.name not in frame.columns]  # the cache's rule: every column
    if missing:                                                                 # of the schema (more may follow)
        raise ResultFileError(f"{path}: its columns are not the {method.name} result schema (missing "
                              f"{', '.join(missing)}; `biascore methods --schema {method.name}` lists them)")
    return (method.result_type or Result)(method=method, frame=frame, meta=meta, options=options,
                                          input=_reload_input(method, meta, data_dir))


def _cache_file(path: Path, data_dir: str | Path | None) -> Result:
    from biascore.runs.stored import Stored, UnreadableResult, open_stored
    from biascore.methods import discover

    meta = ResultCache.entry_meta(path)
    scorer = str(meta["scorer"])
    if scorer.endswith(".derived"):  # a derived frame: the result is the stored file it was derived from
        source = path.parent.parent / scorer[:-len(".derived")] / f"{meta.get('run', '')}.parquet"
        if not source.is_file():
            raise ResultFileError(f"{path} is a derived frame of the cache whose stored result {source} is gone")
        return _cache_file(source, data_dir)
    method = next((m for m in discover() if m.cache_folder == scorer), None)
    if method is None:
        raise ResultFileError(f"{path} is a cache file of {scorer!r}, a method this biascore does not have")
    _check_versions(path, method, meta)
    if path.parent.name != scorer:
        raise ResultFileError(f"{path} is a {method.name} cache file outside its cache (load it from "
                              f"<cache>/{scorer}/, where it is verified against its key)")
    try:
        return open_stored(method, Stored(method.name, str(meta["digest"]), meta, path, path.stat().st_mtime_ns),
                           cache=ResultCache(path.parent.parent), data_dir=data_dir)
    except (UnreadableResult, CorruptCacheFile, OSError, ValueError, KeyError) as exc:
        raise ResultFileError(f"{path}: {one_line(exc)}") from None


def _reload_input(method: Method, meta: dict, data_dir: str | Path | None) -> Any:
    try:
        loaded = method.input_kind.load(str(meta.get("input", "")), Path(data_dir) if data_dir else None)
    except Exception:  # noqa: BLE001 - an input that is gone or changed is simply not attached
        return None
    same = getattr(loaded, "content_hash", None) == meta.get("input_hash")
    return loaded if same else None
