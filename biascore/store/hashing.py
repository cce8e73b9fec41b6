"""The engine's hash helpers: SHA-256 of a file, of bytes or text, and of a list of sentences.

Every cache key that names data uses these, so two parts of the engine never hash the same thing
differently. Files are read with :func:`hashlib.file_digest` (chunked by the standard library).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Iterable


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def bytes_sha256(data: bytes | str) -> str:
    """Hex SHA-256 of bytes (text is encoded as UTF-8)."""
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def sentences_hash(sentences: Iterable[str]) -> str:
    """Hex SHA-256 of a sentence list (order matters): the JSON array of the sentences, UTF-8."""
    return bytes_sha256(json.dumps([str(s) for s in sentences], ensure_ascii=False))
