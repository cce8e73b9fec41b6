"""Cross-process file locks (the ``filelock`` library) with a visible wait.

One computation per cache key, one hash of a model file, one GGUF conversion: whoever takes the lock does the
work, everyone else waits and then reads the result. ``flock`` locks are released by the operating system when
the holder dies (also by SIGKILL). Lock files are kept: deleting them would let a waiter lock a file that a
newcomer no longer sees.
"""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, Iterator

from filelock import FileLock, Timeout

#: Seconds between two looks at the holder's progress while waiting.
POLL_SECONDS = 0.5


def file_lock(path: str | os.PathLike) -> FileLock:
    """A fresh lock object on ``path`` (created with its folder if missing). A fresh object per use, so two
    threads of one process exclude each other as two processes do."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path, thread_local=False, preserve_lock_file=True)


@contextlib.contextmanager
def held(path: str | os.PathLike, waiting: Callable[[], None] | None = None,
         poll: float = POLL_SECONDS) -> Iterator[bool]:
    """Hold the lock at ``path`` for the ``with`` block; yields True when someone else held it first (so the
    caller should look again for their result). ``waiting()`` is called every ``poll`` seconds meanwhile."""
    lock = file_lock(path)
    waited = False
    while True:
        try:
            lock.acquire(timeout=0 if not waited else poll)
            break
        except Timeout:
            waited = True
            if waiting is not None:
                waiting()
    try:
        yield waited
    finally:
        lock.release()


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (a zombie counts: its locks are gone, but not its pid).
    An unknown pid (0 or less) counts as alive: never call a run dead for want of a pid."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def is_held(path: str | os.PathLike) -> bool:
    """True when another holder has the lock at ``path`` right now (a lock file alone means nothing)."""
    if not Path(path).exists():
        return False
    lock = file_lock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False
