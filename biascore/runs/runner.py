"""The one runner: every method's result goes through :func:`run` — computed once, cached, verified, resumable.

It answers the CLI, the Python API, sweeps, snapshots (read-only) and the dashboard alike; nothing else reads the
cache or rebuilds a key. For a method ``m``, a model handle ``h``, an input and options::

    identity = h.identity()                       # from the model's files when possible: no load
    key      = result_key(m.cache_folder, identity, input, options, m.version)
    cached   → verified read (page checksums, stored key = file name, schema, every row id once) → Result
    missing  → (only_cached: None) → announce the run (:mod:`biascore.runs.announce`) → load the model (only now)
               → per-key lock (one computation across threads and processes; a waiter sees the holder's progress)
               → look again → compute the missing shards (resumable) → verify → store with its conventions
    derived  → ``m.derive`` (itself cached when ``m.cache_derived``)

Also the stored results (:func:`stored`, :func:`open_stored`, :func:`run_on_stored`, …; reads memoised by
:mod:`biascore.runs.memo`) and what a page watches without loading anything (:func:`is_cached`, :func:`watch`, …).
"""
from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from biascore import settings
from biascore.contract.method import Method, NotApplicable
from biascore.contract.options import Options
from biascore.contract.result import Result
from biascore.errors import ModelChanged
from biascore.models.handle import ModelHandle, as_handle
from biascore.models.loading import LanguageModel, ModelIdentity
from biascore.models.names import is_served
from biascore.models.prefix import SpecialTokens
from biascore.progress import ProgressFn
from biascore.runs.announce import (CONVERTING, FAILED, SCORING, WAITING, Announcement, Announcer,  # noqa: F401
                                    Selection, furthest, run_tag)
from biascore.runs.memo import file_version, read_file, remember
from biascore.store.cache import CacheKey, CorruptCacheFile, Progress, ResultCache, ShardWriter, check_ids
from biascore.store.keys import result_key
from biascore.store.provenance import package_versions, utc_now


@dataclass
class Context:
    """What a method's :meth:`~biascore.contract.method.Method.compute` works with."""

    method: Method
    handle: ModelHandle
    cache: ResultCache
    data_dir: Path | None
    progress: ProgressFn | None = None
    waiting: ProgressFn | None = None
    #: results of other methods this computation read (name → key digest), recorded with the result
    used: dict[str, str] = field(default_factory=dict)
    #: what the computation itself recorded for its readers (a comparison's method line and notes): stored
    #: with the result's conventions
    recorded: dict[str, Any] = field(default_factory=dict)
    #: a quantized run's agreement with float32 (:func:`biascore.models.precision.agreement`), stored in its info
    float32_agreement: dict | None = None

    def model(self) -> LanguageModel:
        """The model, loaded now if it was not (thread-safe, once per handle)."""
        return self.handle.load()

    def run(self, method: Method, input: Any, *, limit: int | None = None, progress: ProgressFn | None = None,
            **options: Any) -> Result:
        """Another method's result on the same model, cache and data (a dependency, e.g. the semantic fields
        read the attribution scores): cached, locked and verified like any other."""
        result = run(method, self.handle, input, limit=limit, cache=self.cache, data_dir=self.data_dir,
                     progress=progress if progress is not None else self.progress, waiting=self.waiting, **options)
        self.used[method.name] = result.meta["digest"]
        return result


def model_key(method: Method, identity: ModelIdentity, loaded: Any, options: Options,
              data_dir: Path | None = None) -> CacheKey:
    """The cache key of ``method``'s result for a model identity, a loaded input and options."""
    return result_key(method.cache_folder, identity, **method.key_parts(loaded, options, data_dir),
                      **method.model_key_parts(identity, options))


def resolve_input(method: Method, input: Any, data_dir: Path | None, limit: int | None) -> Any:
    """A loaded input: ``input`` itself when it is already loaded, else loaded by name (None: the default);
    ``limit`` keeps the first rows (a ``--limit`` run)."""
    kind = method.input_kind
    loaded = kind.load(input if input is not None else kind.default, data_dir) if input is None or isinstance(
        input, (str, Path)) else input
    if limit is not None:
        if kind.first is None:
            raise ValueError(f"{method.name}: --limit applies to pair benchmarks, not to a {kind.noun}")
        if limit < 1:
            raise ValueError(f"--limit must be at least 1, got {limit}")
        loaded = kind.first(loaded, limit)
    return loaded


def build_options(method: Method, options: Options | None, values: dict[str, Any]) -> Options:
    if options is not None and values:
        raise TypeError("give either an Options object or option keyword arguments, not both")
    if options is None:
        return method.Options.build(**values)
    if not isinstance(options, method.Options):
        raise TypeError(f"{method.name} takes {method.Options.__qualname__}, not {type(options).__name__}")
    return options.validate()


def _verifier(method: Method, loaded: Any) -> Callable[[pd.DataFrame], None]:
    columns = [c.name for c in (method.stored_schema or method.schema)]
    ids = method.input_kind.ids(loaded) if method.one_row_per_input_row and method.input_kind.ids else None

    def verify(frame: pd.DataFrame) -> None:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise CorruptCacheFile(f"missing column(s) {', '.join(missing)}")
        if ids is not None:
            check_ids(frame, ids)

    return verify


def run(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, options: Options | None = None,
        *, limit: int | None = None, cache: ResultCache | None = None, data_dir: str | Path | None = None,
        progress: ProgressFn | None = None, waiting: ProgressFn | None = None, only_cached: bool = False,
        shard_size: int | None = None, **option_values: Any) -> Result | None:
    """``method``'s result for ``model`` on ``input`` (name or loaded; None = the method's default input). Options come
    as an ``Options`` instance or as keyword arguments (validated; one-line
    :class:`~biascore.contract.options.OptionError`). ``progress(done, total)`` follows the computation; ``waiting(done,
    total)`` follows another caller computing the same key. ``only_cached=True`` never loads or computes: the cached
    result or None. ``shard_size`` overrides the method's resumable-shard size."""
    started = time.perf_counter()
    opts = build_options(method, options, option_values)
    data_dir = Path(data_dir) if data_dir is not None else None
    handle = as_handle(model)
    if handle.served_label is not None:
        method.refuse_served(handle.served_label)  # before the input is read (the identity is checked again below)
    loaded = resolve_input(method, input, data_dir, limit)
    method.validate_input(loaded, opts)  # bad options and inputs are refused before any model is touched
    cache = cache or ResultCache()
    run_handle = handle.variant(**method.load_variant(opts))  # loaded the way the method needs
    tag = run_tag(method, run_handle.spec, input, limit, opts)
    with Announcer(cache, method, run_handle, loaded, tag) as announcer:  # silent until it must compute
        return _find_or_compute(method, run_handle, loaded, opts, cache, data_dir, progress, waiting, only_cached,
                                shard_size, announcer, started)


def _find_or_compute(method: Method, run_handle: ModelHandle, loaded: Any, opts: Options, cache: ResultCache,
                     data_dir: Path | None, progress: ProgressFn | None, waiting: ProgressFn | None,
                     only_cached: bool, shard_size: int | None, announcer: Announcer, started: float) -> Result | None:
    identity = run_handle.known_identity()
    if identity is None:
        if only_cached:
            return None
        identity = announcer.load(run_handle).identity()  # a hub id not in the local cache: only a load can tell
    try:
        if is_served(identity):  # refused unless the method needs only its prompt log-probabilities
            method.refuse_served(identity.name)
        method.check(identity.kind, loaded, opts)
    except NotApplicable:
        if only_cached:  # a method that cannot run on this model has no stored result to read
            return None
        raise
    verify = _verifier(method, loaded)
    key = model_key(method, identity, loaded, opts, data_dir)
    found = read_file(cache.path(key), lambda: cache.load_entry(key, verify))  # remembered by the file's version
    if found is None and only_cached:
        return None
    ctx = Context(method, run_handle, cache, data_dir, progress, waiting)
    from_cache = found is not None
    if found is None:
        announcer.keyed(key)
        announcer.start()
        ctx.progress, ctx.waiting = announcer.reporter(SCORING, progress), announcer.reporter(WAITING, waiting)
        if method.needs_model:
            lm = announcer.load(run_handle)  # announced first: "loading the model" / "converting the model"
            key = model_key(method, lm.identity(), loaded, opts, data_dir)  # the loaded model is the authority
            announcer.keyed(key)
        found = _compute(ctx, method, loaded, opts, key, verify, shard_size, announcer)
    stored, meta = found
    result = _result(ctx, method, loaded, opts, key, stored, meta)
    result.timings = {"this_call_s": round(time.perf_counter() - started, 6), "from_cache": from_cache}
    return result


def _compute(ctx: Context, method: Method, loaded: Any, opts: Options, key: CacheKey,
             verify: Callable[[pd.DataFrame], None], shard_size: int | None, announcer: Announcer
             ) -> tuple[pd.DataFrame, dict]:
    cache = ctx.cache
    started = time.perf_counter()
    if cache.read_only:  # a snapshot: what can be derived without a model is derived in memory, never stored
        stored = method.compute(ctx, loaded, opts)
        verify(stored)
        return stored, {**key.meta, "digest": key.digest, "info": _info(ctx, method, loaded, opts, started)}
    total_hint = len(method.input_kind.ids(loaded)) if method.input_kind.ids else 0

    def wait(report: Progress | None) -> None:
        if ctx.waiting is not None:
            ctx.waiting(report.done if report else 0, report.total if report else total_hint)

    with cache.computing(key, wait):
        announcer.scoring(0, total_hint)
        found = cache.load_entry(key, verify)  # another caller may have finished it while we waited
        if found is not None:
            return found
        size = shard_size or _shard_size(method, ctx)
        if size and method.input_kind.ids is not None:
            stored = _sharded(ctx, method, loaded, opts, key, verify, size, started)
        else:
            stored = _computed(ctx, method, loaded, opts)
            info = _info(ctx, method, loaded, opts, started)
            cache.save(key, stored, verify, info)
        found = cache.load_entry(key, verify)
        if found is None:  # pragma: no cover - a store that cannot be read back is a broken disk
            raise CorruptCacheFile(f"{method.name}: the result just stored cannot be read back")
        return found


def _computed(ctx: Context, method: Method, loaded: Any, opts: Options) -> pd.DataFrame:
    """``method.compute``; a model found computing something else than its identity says (a served model whose
    answers stop proving themselves mid-run, :class:`~biascore.errors.ModelChanged`: one line, nothing of it
    stored) is let go by the handle, so that the next run connects afresh (conformance and fingerprint again)."""
    try:
        return method.compute(ctx, loaded, opts)
    except ModelChanged:
        ctx.handle.release()
        raise


def _shard_size(method: Method, ctx: Context) -> int | None:
    if method.shard_size is None:
        return None
    lm = ctx.handle.load() if method.needs_model else None
    if lm is not None and lm.device.type == "cuda" and method.gpu_shard_size:
        return method.gpu_shard_size
    return method.shard_size


def _sharded(ctx: Context, method: Method, loaded: Any, opts: Options, key: CacheKey,
             verify: Callable[[pd.DataFrame], None], size: int, started: float) -> pd.DataFrame:
    """Compute the missing shards of ``key`` (the caller holds its lock), publishing progress for waiting
    callers, and store the finished, checked result."""
    kind, cache = method.input_kind, ctx.cache
    ids = kind.ids(loaded)
    shards = ShardWriter(cache, key, ids, size)
    done = shards.completed()
    total, last = len(ids), [0.0]
    outer = ctx.progress

    def report(n: int, force: bool = False) -> None:
        if outer is not None:
            outer(n, total)
        now = time.monotonic()
        if force or now - last[0] > 0.5:  # waiting callers poll every half second
            cache.report_progress(key, n, total)
            last[0] = now

    finished = resumed = sum(b - a for a, b in done)
    report(finished, force=True)
    try:
        for a, b in shards.ranges:
            if (a, b) in done:
                continue

            def inner(d: int, tot: int, base: int = finished, n: int = b - a) -> None:
                report(base + int(round(n * d / max(tot, 1))))

            ctx.progress = inner
            frame = _computed(ctx, method, kind.subset(loaded, a, b), opts)
            shards.write(a, b, frame)
            done[(a, b)] = frame
            finished += b - a
            report(finished, force=True)
    finally:
        ctx.progress = outer
    info = _info(ctx, method, loaded, opts, started)
    if resumed:
        info["timings"]["resumed_items"] = resumed  # computed before this process; compute_s excludes them
    return shards.finish(done, verify, info)


def _info(ctx: Context, method: Method, loaded: Any, opts: Options, started: float) -> dict:
    """What a computation records about itself beside its frame: its conventions, the results it read, the
    package versions it ran with and how long it took (``compute_s``, seconds in this process)."""
    info = {"conventions": {**method.conventions(ctx, loaded, opts), **ctx.recorded}, "versions": package_versions(),
            "timings": {"compute_s": round(time.perf_counter() - started, 3), "finished_at": utc_now()}}
    placement = ctx.handle.load().extra.get("placement") if method.needs_model and ctx.handle.loaded else None
    if placement:  # a split model: where its layers sat (not part of the key; see biascore.store.keys)
        info["placement"] = placement
    if ctx.used:
        info["uses"] = dict(ctx.used)
    if ctx.float32_agreement:
        info["float32_agreement"] = ctx.float32_agreement
    return info


def _result(ctx: Context, method: Method, loaded: Any, opts: Options, key: CacheKey, stored: pd.DataFrame,
            meta: dict) -> Result:
    if method.cache_derived:
        dkey = CacheKey.make(f"{method.cache_folder}.derived", run=key.digest, **method.derive_key_parts(opts),
                             input_hash=loaded.content_hash, method_version=method.version)
        frame = read_file(ctx.cache.path(dkey), lambda: ctx.cache.get_or_compute(
            dkey, lambda: method.derive(ctx, stored, loaded, opts)))
    else:
        frame = method.derive(ctx, stored, loaded, opts)
    return (method.result_type or Result)(method=method, frame=frame, meta=meta, options=opts, input=loaded,
                                          stored=stored)


def live_result(method: Method, handle: ModelHandle, frame: pd.DataFrame, options: Options, *,
                input_name: str) -> Result:
    """A result computed outside the cache (one typed pair scored live), with the key metadata and conventions a
    cached one carries (its digest is empty: it is stored nowhere)."""
    lm = handle.load()
    conventions = method.conventions(Context(method, handle, None, None), None, options)  # type: ignore[arg-type]
    key = result_key(method.cache_folder, lm, input_kind=method.input_kind.name, input=input_name, input_hash="",
                     **options.key_parts())
    meta = {**key.meta, "digest": "", "info": {"conventions": conventions}}
    return (method.result_type or Result)(method=method, frame=frame, meta=meta, options=options, input=None)


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


def is_cached(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              cache: ResultCache | None = None, data_dir: str | Path | None = None, limit: int | None = None,
              **option_values: Any) -> bool:
    """Whether ``method``'s result for this model, input and options is stored (its file exists; it is verified
    when it is read). Never loads or computes; False when the model's identity needs a load to be known."""
    return selection(method, model, input, data_dir=data_dir, limit=limit, **option_values).stored(cache)


def selection(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              data_dir: str | Path | None = None, limit: int | None = None, **option_values: Any) -> Selection:
    """``method``'s result for ``model`` on ``input`` as a page watches it
    (:class:`~biascore.runs.announce.Selection`: the runs announced for it, whether it is stored), without
    loading anything; its key is None when the model's identity needs a load to be known."""
    opts = build_options(method, None, option_values)
    data_dir = Path(data_dir) if data_dir is not None else None
    loaded = resolve_input(method, input, data_dir, limit)
    run_handle = as_handle(model).variant(**method.load_variant(opts))
    identity = run_handle.known_identity()
    key = model_key(method, identity, loaded, opts, data_dir) if identity is not None else None
    return Selection(run_tag(method, run_handle.name, input, limit, opts), key)


def watch(method: Method, model: str, input: Any = None, *, limit: int | None = None,
          **option_values: Any) -> Selection:
    """``method``'s result for the model named ``model`` on ``input`` as a page watches it on every render: the
    runs announced for it, matched by names alone (its tag) — no input read, no model identity, no key, so its
    ``stored()`` is always False; a page sees a result stored through :func:`stored_version`."""
    return Selection(run_tag(method, model, input, limit, build_options(method, None, option_values)), None)


def computing(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              cache: ResultCache | None = None, data_dir: str | Path | None = None, limit: int | None = None,
              **option_values: Any) -> Announcement | None:
    """Whether ``method``'s result for this model, input and options is being computed right now (by anyone) and
    how far it has got: the furthest of the runs announced for it (:mod:`biascore.runs.announce`), found even when
    the model's identity needs a load to be known; None when none is. Nothing is loaded here."""
    cache = cache or ResultCache()
    if cache.read_only:
        return None
    return furthest(selection(method, model, input, data_dir=data_dir, limit=limit, **option_values).runs(cache))
