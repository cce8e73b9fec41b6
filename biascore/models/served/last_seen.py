"""What a served model's server last said it was, so its stored results can be found while the server is down.

A served model's identity is measured on its server (:mod:`.fingerprint`), never assumed — so with the server
down, a freshly started dashboard could not tell which stored runs are its. Each successful connection records
the served model's name and fingerprint under a hash of its description (``served:URL[#NAME]``, options left
out; no URL, option or key is written), in ``<cache>/served/``. :func:`recall` answers it back: only for
*reading* stored results while the server cannot be reached (labelled so on the page); a computation always
connects and measures afresh.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

from biascore.models.served.client import ServedName
from biascore.store.cache import write_json_atomic


def _path(cache_root: Path, description: str) -> Path:
    digest = hashlib.sha256(ServedName.parse(description).describe().encode()).hexdigest()[:32]
    return Path(cache_root) / "served" / f"{digest}.json"


def remember(cache_root: Path, description: str, name: str, fingerprint: str) -> None:
    """Record (atomically) that ``description``'s server served ``name`` with ``fingerprint``."""
    path = _path(cache_root, description)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json_atomic(path, {"name": name, "fingerprint": fingerprint})


def recall(cache_root: Path, description: str) -> tuple[str, str] | None:
    """(name, fingerprint) last recorded for ``description``, or None."""
    try:
        data = json.loads(_path(cache_root, description).read_text())
        return str(data["name"]), str(data["fingerprint"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
