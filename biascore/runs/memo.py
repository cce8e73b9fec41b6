"""The runner's reads, remembered by the version of what they read (a file's times, size and inode; a listing's
fingerprint) and what shapes them: the :data:`SIZE` keys asked last (least recently asked dropped first), one read
per key however many threads ask at once, a read that raises or finds nothing (None) never remembered (a damaged
file raises each time it is asked). Answers are shared, not copied: read-only."""
from __future__ import annotations

import functools
import os
import threading
from types import SimpleNamespace
from typing import Any, Callable, Hashable

#: keys remembered: an attribution run's reads and the tables drawn from it take about 8, so about 16 runs
#: (a 12,089-pair run's frames take about 34 MB)
SIZE = 128
_lock = threading.Lock()


@functools.lru_cache(maxsize=SIZE)
def _answer(key: Hashable) -> SimpleNamespace:
    """One key's answer, read under its own lock: a second thread asking waits for the first one's read."""
    return SimpleNamespace(lock=threading.Lock(), value=None)


def remember(key: Hashable, read: Callable[[], Any]) -> Any:
    """The remembered answer for ``key``, else ``read()`` (remembered unless it raises or is None)."""
    with _lock:  # one answer per key, however many threads ask at once
        answer = _answer(key)
    with answer.lock:
        if answer.value is None:
            answer.value = read()
        return answer.value


def file_version(path: os.PathLike) -> tuple[int, int, int, int] | None:
    """(mtime and ctime in ns, size, inode) of a file, None when it is absent: a replaced file has another."""
    try:
        s = os.stat(path)
    except FileNotFoundError:
        return None
    return s.st_mtime_ns, s.st_ctime_ns, s.st_size, s.st_ino


def read_file(path: os.PathLike, read: Callable[[], Any]) -> Any:
    """``read()`` of the file at ``path``, remembered by its version (an absent file's read is not)."""
    version = file_version(path)
    return read() if version is None else remember(("file", str(path), version), read)
