"""Runs announce themselves: from its first second, a run that has to compute a result says so where every
process and page can read it, and a run that dies leaves nothing behind (docs/operating.md tells the whole story).

The runner announces every computation before it loads anything and updates it as it goes::

    <cache>/running/<id>.json   {tag, digest, method, model, input, state, done, total, host, pid, started, …}
    <cache>/running/<id>.lock   a file lock the announcing run holds for its whole life

``<id>`` = tag, host, pid, a counter; a result is found by its **tag** (:func:`run_tag`) and by the key's
**digest** when both sides know it. A **stale** one (lock not held, or its process gone on this host) is cleared by
:func:`announcements`; a finished one stays readable :data:`LINGER_S` seconds; a read-only cache announces nothing.
"""
from __future__ import annotations

import hashlib
import itertools
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from biascore.errors import one_line
from biascore.models.spec import ModelSpec
from biascore.store.cache import CacheKey, ResultCache, _jsonable, write_json_atomic
from biascore.store.locks import file_lock, is_held, pid_alive
from biascore.progress import ProgressFn

STARTING = "starting"
LOADING = "loading the model"
CONVERTING = "converting the model"
WAITING = "waiting for another run"
SCORING = "scoring"
DONE = "done"
FAILED = "failed"
#: the states of a run that is still going on
LIVE = (STARTING, LOADING, CONVERTING, WAITING, SCORING)
#: Seconds a finished (done or failed) announcement stays readable.
LINGER_S = 30.0
#: Seconds between two progress writes (state changes and the last item are written at once).
WRITE_EVERY_S = 0.5
FOLDER = "running"

_counter = itertools.count()
_HOST = socket.gethostname()
_HOST_IN_NAME = "".join(c if c.isalnum() or c in "-_" else "_" for c in _HOST)[:40]  # as a file name may hold it


def run_tag(method: Any, model: ModelSpec | str, input: Any, limit: int | None, options: Any) -> str:
    """The tag of a result, made from names alone: the method's cache folder and version, the model's
    :attr:`~biascore.models.spec.ModelSpec.run_name` (a name: its spec's), the input's name (a loaded input's
    ``name``; None: the method's default input), the item limit and the key options. A page matches runs by it on
    every render without reading the input or identifying the model (a GGUF file not yet converted, a hub id not
    yet downloaded); the key's digest, when both sides know it, then decides (another fingerprint or dtype)."""
    spec = model if isinstance(model, ModelSpec) else ModelSpec(str(model))
    name = method.input_kind.default if input is None else str(getattr(input, "name", input))
    blob = json.dumps([method.cache_folder, method.version, spec.run_name, name, limit,
                       _jsonable(options.key_parts())], default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


@dataclass(frozen=True)
class Announcement:
    """One caller's announcement of one result."""

    id: str
    tag: str
    digest: str | None
    method: str
    model: str
    input: str
    state: str
    done: int
    total: int
    host: str
    pid: int
    started: float
    updated: float
    error: str | None = None

    def describe(self, unit: str = "pairs") -> str:
        """The state in words, e.g. ``scoring: 12 of 38 pairs`` or ``waiting for another run (12 of 38 pairs)``."""
        if self.state == SCORING:
            return f"scoring: {self.done} of {self.total} {unit}" if self.total else "scoring"
        if self.state == WAITING and self.total:
            return f"{WAITING} ({self.done} of {self.total} {unit})"
        if self.state == FAILED and self.error:
            return f"failed: {self.error}"
        return self.state


#: how far along a state is (the page shows the furthest of several announcements of one result)
_RANK = {STARTING: 0, WAITING: 1, LOADING: 2, CONVERTING: 3, SCORING: 4, FAILED: 5, DONE: 6}


def furthest(found: list[Announcement]) -> Announcement | None:
    """The announcement that says most about a result: the one computing it, else the one furthest along."""
    return max(found, key=lambda a: (_RANK.get(a.state, 0), a.done, a.updated), default=None)


class Announcer:
    """The runner's announcement of one result (silent until :meth:`start`): use it as a context manager; its
    end writes ``done`` or ``failed`` (with the error's line) and releases the lock."""

    def __init__(self, cache: ResultCache, method: Any, handle: Any, loaded: Any, tag: str):
        self.cache, self.handle, self.folder = cache, handle, cache.root / FOLDER
        self.enabled = not cache.read_only
        self._of = (method, loaded, tag)  # written when the run is announced
        self.tag = self.id = self.method = self.model = self.input = ""
        self.digest: str | None = None
        self.state: str | None = None
        self.done = self.total = 0
        self.started = self._last = 0.0
        self._lock = None
        self._mutex = threading.Lock()

    def start(self, state: str = STARTING) -> None:
        """Announce the run (once; later calls only move its state forward from ``starting``)."""
        if not self.enabled:
            return
        if self._lock is None:
            method, loaded, self.tag = self._of
            self.method, self.model = method.name, self.handle.spec.run_name
            self.input = str(getattr(loaded, "name", ""))
            self.id = f"{self.tag[:16]}-{_HOST_IN_NAME}-{os.getpid()}-{next(_counter)}"
            self.folder.mkdir(parents=True, exist_ok=True)
            self._lock = file_lock(self.folder / f"{self.id}.lock")
            self._lock.acquire(timeout=0)  # a fresh name: nobody else can hold it
            self.started = time.time()
            self._set(state)
        elif self.state == STARTING and state != STARTING:
            self._set(state)

    def load(self, handle: Any) -> Any:
        """``handle``'s model, announcing "loading the model" (or "converting the model": a GGUF file's first
        load) first when it is not loaded yet."""
        if not handle.loaded:
            self.start(STARTING)
            self._set(CONVERTING if handle.converts else LOADING)
        return handle.load()

    def keyed(self, key: CacheKey) -> None:
        """The run's cache key is known (or, after a load, known for sure)."""
        self.digest = key.digest
        if self.state is not None:
            self._set(self.state)

    def scoring(self, done: int = 0, total: int = 0) -> None:
        """This caller holds the key and computes: ``done`` of ``total``."""
        self._set(SCORING, done, total)

    def reporter(self, state: str, outer: ProgressFn | None) -> ProgressFn:
        """A progress callback (``SCORING``: this caller computes; ``WAITING``: another caller computes the key)
        that updates the announcement, then calls ``outer``."""
        def report(done: int, total: int) -> None:
            self._set(state, done, total)
            if outer is not None:
                outer(done, total)
        return report

    def finish(self, error: BaseException | None = None) -> None:
        """End the announcement: ``done``, or ``failed`` with ``error``'s line; the lock is released."""
        if self._lock is None:
            return
        try:
            self._set(DONE if error is None else FAILED, self.done, self.total,
                      error=None if error is None else one_line(error, public=True))
        finally:
            lock, self._lock = self._lock, None
            Path(lock.lock_file).unlink(missing_ok=True)
            lock.release()

    def __enter__(self) -> "Announcer":
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.finish(exc)

    def _set(self, state: str, done: int | None = None, total: int | None = None, error: str | None = None) -> None:
        if not self.enabled or self._lock is None:
            return
        with self._mutex:
            changed = state != self.state
            if done is not None:
                self.done = int(done)
            if total is not None:
                self.total = int(total)
            now = time.monotonic()
            if not changed and now - self._last < WRITE_EVERY_S and self.done < self.total:
                return
            self.state, self._last = state, now
            record = Announcement(self.id, self.tag, self.digest, self.method, self.model, self.input, state,
                                  self.done, self.total, _HOST, os.getpid(), self.started, time.time(), error)
            write_json_atomic(self.folder / f"{self.id}.json", asdict(record))


def _read(path: Path) -> Announcement | None:
    try:
        return Announcement(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _stale(a: Announcement, path: Path, now: float) -> bool:
    if a.host == _HOST and not pid_alive(a.pid):
        return True
    return now - a.updated > LINGER_S if a.state not in LIVE else not is_held(path.with_suffix(".lock"))


def _clear(path: Path, seen: Announcement) -> None:
    again = _read(path)
    if again is not None and (again.state, again.updated) != (seen.state, seen.updated):
        return  # it moved on while we looked (e.g. it has just finished): not stale
    path.unlink(missing_ok=True)
    if seen.state in LIVE:
        path.with_suffix(".lock").unlink(missing_ok=True)


def announcements(cache: ResultCache | None = None, *, tag: str | None = None, digest: str | None = None,
                  live_only: bool = False) -> list[Announcement]:
    """The announcements in ``cache`` (stale ones are cleared on the way), those of one result when ``tag``
    is given: same tag, and same digest when both sides know it (``digest``). Reads a few small files."""
    cache = cache or ResultCache()
    now, out = time.time(), []
    for path in (cache.root / FOLDER).glob("*.json"):  # none when the folder is absent
        a = _read(path)
        if a is None:
            continue
        if tag is not None and (a.tag != tag or (digest and a.digest and a.digest != digest)):
            continue
        if _stale(a, path, now):
            if not cache.read_only:
                _clear(path, a)
            continue
        if live_only and a.state not in LIVE:
            continue
        out.append(a)
    return sorted(out, key=lambda a: a.started)


@dataclass(frozen=True)
class Selection:
    """What a page shows: one method's result for a model by name on an input (made by
    :func:`biascore.runs.runner.selection`): found among announcements by tag (and digest), and among results by
    its key when the model's identity is known without a load."""

    tag: str
    key: CacheKey | None

    def runs(self, cache: ResultCache | None = None, live_only: bool = True) -> list[Announcement]:
        return announcements(cache, tag=self.tag, digest=self.key.digest if self.key else None, live_only=live_only)

    def stored(self, cache: ResultCache | None = None) -> bool:
        """Whether the result file exists (one ``stat``; it is verified when it is read)."""
        return self.key is not None and (cache or ResultCache()).path(self.key).exists()

