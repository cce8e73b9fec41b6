"""How a model is named where its location must not show: a public dashboard, a snapshot shared with others.

A model is named as the user gave it: an embedded alias, a hub id or a local path. Where others see the name
(public mode, ``BIASCORE_PUBLIC=1``; a snapshot) a path is shown by its *display name*, the folder's name (a .gguf
file's without the suffix); the weights are identified by the fingerprint every cached result stores beside it.
"""
from __future__ import annotations

import re
from pathlib import Path

from biascore import settings

_DRIVE = re.compile(r"^[A-Za-z]:[\\/]")
#: how a served model is named wherever a model is named: ``served:http://HOST:PORT/v1[#NAME][?OPTIONS]``
PREFIX = "served:"


#: the ``dtype`` a served model's identity and results carry: the server decides the numerics
SERVED_DTYPE = "served"


def is_served(model: object) -> bool:
    """The one "is this model served?" rule (:mod:`biascore.models.served`): a name ``served:http(s)://…``, or an
    identity, loaded model, result's meta or cached-runs row whose ``dtype`` is :data:`SERVED_DTYPE`."""
    if isinstance(model, str):
        return model.strip().startswith(PREFIX)
    extra = getattr(model, "extra", None)
    source = extra if isinstance(extra, dict) else model  # a loaded model says it in its extra
    # a dict or a pandas row (whose attribute ``dtype`` is the row's own) by its key, else the attribute
    dtype = source.get("dtype") if hasattr(source, "get") else getattr(source, "dtype", None)
    return isinstance(dtype, str) and dtype == SERVED_DTYPE


def is_local_path(name: str) -> bool:
    """True when ``name`` names a local folder or file rather than an alias or a hub id: absolute, home- or
    dot-relative, a Windows path, a .gguf file, or a relative path that exists here or has more than one ``/``
    (a hub id has at most one)."""
    name = str(name).strip()
    if not name:
        return False
    if name.startswith(("/", "~", "./", "../", "\\")) or _DRIVE.match(name) or name.lower().endswith(".gguf"):
        return True
    if "/" in name or "\\" in name:
        return name.count("/") > 1 or "\\" in name or Path(name).expanduser().exists()
    return False


def display_name(name: str, public: bool | None = True) -> str:
    """``name`` without its location: a path becomes its last component (a .gguf file's without ``.gguf``);
    an alias or hub id stays as it is. The one model display name: ``public`` says whether the location must not
    show (None: the settings' public mode, how every page names a model); False gives ``name`` as given."""
    if not (settings.public_mode() if public is None else public):
        return str(name)
    name = str(name).strip()
    if not is_local_path(name):
        return name
    last = re.split(r"[\\/]", name.rstrip("/\\"))[-1] or "model"
    return last[: -len(".gguf")] if last.lower().endswith(".gguf") and len(last) > 5 else last


#: an absolute path inside a text (POSIX, home-relative or Windows), not part of a word such as ``a/b``
_PATH_IN_TEXT = re.compile(r"(?<![\w.~])(?:[A-Za-z]:|~)?(?:[\\/][^\s'\"`,;:()\[\]{}<>]+)+")


def redact_paths(text: str) -> str:
    """``text`` with every absolute path replaced by its display name (its last component)."""
    return _PATH_IN_TEXT.sub(lambda m: display_name(m.group(0)), str(text))
