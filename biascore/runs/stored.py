"""The stored results of a method, as the runner's door lists and opens them (:mod:`biascore.runs.runner` is
where shells import these from). Nothing here loads a model; every read is remembered by the version of what it
read (:mod:`biascore.runs.memo`)."""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

from biascore import settings
from biascore.store.cache import CacheKey, ResultCache
from biascore.runs.compute import resolve_input, run
from biascore.runs.memo import file_version, remember
from biascore.models.handle import ModelHandle
from biascore.contract.method import Method
from biascore.models.loading import ModelIdentity
from biascore.models.prefix import SpecialTokens
from biascore.contract.result import Result


class UnreadableResult(RuntimeError):
    """A stored result that cannot be shown; the message is one line for the page."""


class DamagedResult(UnreadableResult):
    """The stored result failed verification (and was removed): score it again."""


class StaleResult(UnreadableResult):
    """The stored result was computed on another version of its input: score it again."""


@dataclass(frozen=True)
class Stored:
    """One stored result of a method, as :func:`stored` lists it (from its file's footer: not yet verified;
    :func:`open_stored` verifies; every read of it is remembered by its file's version: :mod:`biascore.runs.memo`)."""

    method: str
    digest: str
    meta: dict = field(repr=False, compare=False, hash=False)
    path: Path = field(repr=False, compare=False, hash=False)
    mtime_ns: int = 0

    @property
    def model(self) -> str:
        return str(self.meta.get("model", ""))

    @property
    def input(self) -> str:
        return str(self.meta.get("input", ""))

    @property
    def named_by_its_key(self) -> bool:
        """Whether its stored key hashes to its file name (else a foreign or damaged file); footer only."""
        return key_of(self.meta).digest == self.digest == self.path.stem

    @property
    def n_rows(self) -> int | None:
        """How many input rows it covers when it is a ``--limit`` run's (the key's ``n_pairs``), else None."""
        n = self.meta.get("n_pairs")
        return int(n) if n is not None else None


def stored(method: Method, *, model: str | None = None, input: str | None = None, cache: ResultCache | None = None,
           derived: bool = False) -> list[Stored]:
    """The stored results of ``method`` (only ``model``'s / ``input``'s when given), newest first. With
    ``derived=True``: the frames derived from them (a method with ``cache_derived``)."""
    cache = cache or ResultCache()
    folder = f"{method.cache_folder}.derived" if derived else method.cache_folder
    found = remember(("stored", str(cache.root), folder, cache.fingerprint(folder)), lambda: tuple(sorted(
        (Stored(method.name, str(m.get("digest", "")), m, Path(m["path"]), v[0]) for m in cache.entries(folder)
         if (v := file_version(m["path"]))), key=lambda s: -s.mtime_ns)))  # (v None: removed since it was listed)
    return [s for s in found if (model is None or s.model == model) and (input is None or s.input == input)]


def stored_version(method: Method, cache: ResultCache | None = None) -> tuple:
    """A cheap fingerprint of what :func:`stored` lists for ``method`` (the cache folder, file names and modification
    times, no file opened): it changes when a result is added, replaced or removed."""
    cache = cache or ResultCache()
    return str(cache.root), cache.fingerprint(method.cache_folder)


def listed(method: Method, draw: Callable[[list[Stored], Any], Any], *, cache: ResultCache | None = None,
           data_dir: str | Path | None = None) -> Any:
    """``draw(stored(method), data_dir)``, a table drawn from the list, remembered by :func:`stored_version`."""
    return remember(("listed", draw, stored_version(method, cache), str(settings.data_dir(data_dir))),
                     lambda: draw(stored(method, cache=cache), data_dir))


def standin(entry: Stored) -> ModelHandle:
    """The model of a stored result, by the identity it was keyed with; it never loads."""
    meta = entry.meta
    identity = ModelIdentity(str(meta.get("model", "")), str(meta.get("model_fingerprint", "")),
                             meta.get("model_kind", "encoder"), str(meta.get("dtype", "")), str(meta.get("device", "")),
                             SpecialTokens.from_meta(meta.get("tokenizer_specials")), str(meta.get("weights", "")))
    return ModelHandle.standin(entry.model, identity, "reading a stored result never loads a model")


def open_stored(method: Method, entry: Stored, *, cache: ResultCache | None = None,
                data_dir: str | Path | None = None, **options: Any) -> Result:
    """One result listed by :func:`stored`, read and verified as :func:`run` reads one (page checksums, stored
    key = file name, schema, every row id once) and derived like it: its input loaded by name, its options rebuilt
    from the key (``options`` set those outside the key, e.g. the JSD variant), its model standing in by identity.
    Raises :class:`DamagedResult` (the file has been removed) or :class:`StaleResult` (its input changed since),
    each in one line. Remembered by the file's version, the data folder and ``options`` (shared: read-only)."""
    return remember(("open", method.name, *_shape(entry, data_dir, options)),
                     lambda: _open(method, entry, cache, data_dir, options))


def drawn(method: Method, entry: Stored, draw: Callable[[Result], Any], *, cache: ResultCache | None = None,
          **options: Any) -> Any:
    """``draw(open_stored(method, entry, **options))``, a table drawn from one result, remembered like the read."""
    return remember(("drawn", draw, *_shape(entry, None, options)),
                     lambda: draw(open_stored(method, entry, cache=cache, **options)))


def _shape(entry: Stored, data_dir: Any, options: dict) -> tuple:
    """What a read of ``entry`` is remembered by: its file's version now and what shapes the read."""
    return (str(entry.path), file_version(entry.path), str(settings.data_dir(data_dir)), *sorted(options.items()))


def _open(method: Method, entry: Stored, cache: ResultCache | None, data_dir: Any, options: dict) -> Result:
    cache, meta = cache or ResultCache(), entry.meta
    data_dir = Path(data_dir) if data_dir else None
    loaded = resolve_input(method, entry.input, data_dir, entry.n_rows if method.input_kind.first else None)
    if loaded.content_hash != meta.get("input_hash"):
        raise StaleResult(f"the stored {method.name} result was computed on a different version of {entry.input!r}; "
                          "score it again")
    opts = replace(method.Options.from_meta(meta), **options).validate()
    result = run(method, standin(entry), loaded, opts, cache=cache, data_dir=data_dir, only_cached=True)
    if result is None:  # the read found it damaged and removed it
        raise DamagedResult(f"the stored {method.name} result on {entry.input!r} was damaged (it failed verification) "
                            "and has been removed; score it again")
    return result


def run_on_stored(method: Method, entry: Stored, *, cache: ResultCache | None = None,
                  data_dir: str | Path | None = None, **options: Any) -> Result | None:
    """``method``'s result for the model and input of another method's stored result (e.g. the words of a stored
    attribution run): computed from cached results only, never loading the model; remembered like a read."""
    limit = entry.n_rows if method.input_kind.first is not None else None
    started, calls = time.perf_counter(), []

    def compute() -> Result | None:
        calls.append(1)
        return run(method, standin(entry), entry.input, limit=limit, cache=cache, data_dir=data_dir, **options)

    result = remember(("on", method.name, *_shape(entry, data_dir, options)), compute)
    if result is None or calls:
        return result
    remembered = copy.copy(result)  # this call's own timings: read from the stored result, not computed
    remembered.timings = {"this_call_s": round(time.perf_counter() - started, 6), "from_cache": True}
    return remembered


def verify_file(path: str | Path) -> None:
    """Raise :class:`~biascore.store.cache.CorruptCacheFile` unless the stored result file ``path`` reads back
    with intact page checksums and a stored key that matches its name (a snapshot checks what it ships)."""
    ResultCache.check_entry(path)


def key_of(meta: dict, **changes: Any) -> CacheKey:
    """The key a stored result's footer ``meta`` records, with ``changes`` to some of its parts (a snapshot
    stores a model under its display name)."""
    parts = {k: v for k, v in meta.items() if k not in ("scorer", "digest", "path", "info")}
    parts.update(changes)
    return CacheKey(str(meta.get("scorer", "")), tuple(sorted(parts.items())))
