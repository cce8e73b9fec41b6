"""The runner's reads, remembered by the version of what they read (a file's times, size and inode; a listing's
fingerprint) and what shapes them: bounded, one read per key however many threads ask at once, a read that raises
or finds nothing (None) never remembered (a damaged file raises each time). Answers are shared: read-only."""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable, Hashable

SIZE = 256  #: answers kept, least recently asked dropped first (an attribution run's reads and tables take ~8)


class Memo:
    """A bounded, thread-safe memo: :meth:`get` reads a key once, however many threads ask for it at once."""

    def __init__(self, size: int = SIZE) -> None:
        self.size, self._lock, self._answers, self._reading = size, threading.Lock(), OrderedDict(), {}

    def get(self, key: Hashable, read: Callable[[], Any]) -> Any:
        """The remembered answer for ``key``, else ``read()`` (remembered unless it raises or is None)."""
        with self._lock:
            if key in self._answers:
                self._answers.move_to_end(key)
                return self._answers[key]
            gate = self._reading.setdefault(key, threading.Lock())
        with gate:  # a second thread asking waits for the first one's read, then finds its answer
            answer = self._answers.get(key)  # (a single dict call: no torn read)
            try:
                answer = read() if answer is None else answer
                return answer
            finally:
                with self._lock:
                    if self._reading.get(key) is gate:
                        del self._reading[key]
                    if answer is not None:
                        self._answers[key] = answer
                        while len(self._answers) > self.size:
                            self._answers.popitem(last=False)


READS = Memo()  #: the runner's reads


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
    return read() if version is None else READS.get(("file", str(path), version), read)
