"""Errors as one line: the one helper every shell uses to turn an exception into a message.

The CLI prints ``error: <line>`` (exit 2), the dashboard shows the line on the page (never a traceback),
sweeps record it per task, and the Python API raises the exception itself. In public mode
(``BIASCORE_PUBLIC=1``) the line names no server path and no URL (a served model's server, a host): anything
that looks like one becomes ``…``.
"""
from __future__ import annotations

import re

from biascore import settings

#: what looks like a file-system path in a message (POSIX or Windows), for public mode
_PATH = re.compile(r"(?:[A-Za-z]:)?(?:[\\/](?:[^\s'\"`,;:()]|:(?=[^\s'\"`,;()]))+)+")  # a path may hold host:port
#: a URL (scheme://host…) in a message, for public mode: a served model's server is named by its label only
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"`,;()<>]*")
MAX_CHARS = 400


def one_line(exc: BaseException, *, with_type: bool = False, public: bool | None = None) -> str:
    """The first line of ``exc``'s message (its type's name when it has none), at most :data:`MAX_CHARS`
    characters; ``with_type`` puts the type's name in front (for logs of many failures, e.g. a sweep);
    without server paths and URLs when ``public`` (default: the server's public mode)."""
    lines = str(exc).strip().splitlines()
    line = lines[0].strip() if lines else type(exc).__name__
    if with_type and lines:
        line = f"{type(exc).__name__}: {line}"
    root = settings.snapshot_root()
    if root is not None:  # the snapshot's private unpacked folder is named by what it is
        line = line.replace(f"{root}/", "(snapshot)/")
    if settings.public_mode() if public is None else public:
        line = _PATH.sub("…", _URL.sub("…", line))
    return line if len(line) <= MAX_CHARS else line[:MAX_CHARS - 1] + "…"


class BenchmarkError(ValueError):
    """A benchmark cannot be loaded; the message says why and what to do."""


class ModelLoadError(RuntimeError):
    """A model could not be loaded; the message lists every place that was tried."""


class ModelChanged(ModelLoadError):
    """A model (a served one) no longer computes what its identity says; nothing of what it answered is stored."""


def user_errors() -> tuple[type[BaseException], ...]:
    """The exceptions that are a user's input problem (bad benchmark, model, option, file), shown as one line
    rather than a crash; every engine error type for bad input derives from one of these."""
    return BenchmarkError, ModelLoadError, ValueError, FileNotFoundError
