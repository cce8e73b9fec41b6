"""The inputs shipped with the project (``data/shipped.json``), so that every method runs on a bare clone.

A shipped file sits under ``data/`` at the path it would have in the data directory (``seat/demo-weat6.jsonl``,
``labdet/train/demo.json``, ``wordlists/gender_female.txt``…) and is read where the data directory has no file of
that path (:func:`data_file`): the demo inputs have names of their own (``demo-weat6``, LABDet ``demo``), and the
shipped word lists are byte-identical copies of the downloadable ones (a data directory with other lists keeps
its own). Each entry of the registry also states the file's licence and citation (docs/data.md shows them).
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

from biascore import settings

REGISTRY = settings.PROJECT_DATA / "shipped.json"


@dataclass(frozen=True)
class ShippedFile:
    path: str  # relative to data/, laid out as the data directory
    input: str  # the input a method reads from it
    what: str
    licence: str
    citation: str


@functools.lru_cache(maxsize=1)
def shipped_files() -> tuple[ShippedFile, ...]:
    """The registry's entries, in order."""
    entries = json.loads(REGISTRY.read_text(encoding="utf-8"))["files"]
    return tuple(ShippedFile(e["path"], e["input"], e["what"], e["licence"], e["citation"]) for e in entries)


@functools.lru_cache(maxsize=1)
def _paths() -> frozenset[str]:
    return frozenset(f.path for f in shipped_files())


def _shipped_here(data_dir) -> bool:
    """False while a snapshot is in use and no data directory is named: then the snapshot's copies are read."""
    return data_dir is not None or settings.snapshot_root() is None


def data_file(relative: str, data_dir: str | Path | None = None) -> Path:
    """Where the engine reads the data file ``relative`` (``/``-separated, relative to the data directory): the
    data directory's file when it has one, else the shipped copy under ``data/`` when the registry lists one (and
    no snapshot is in use: a snapshot carries its own copies), else the data directory's (missing) path."""
    path = settings.data_dir(data_dir) / relative
    if not path.is_file() and relative in _paths() and _shipped_here(data_dir):
        return settings.PROJECT_DATA / relative
    return path


def shipped_stems(folder: str, suffix: str, data_dir: str | Path | None = None) -> list[str]:
    """The file stems of the shipped files directly in ``folder`` ending in ``suffix`` (e.g. the shipped SEAT
    tests: ``shipped_stems("seat", ".jsonl")``); none while a snapshot is in use (its data folder lists them)."""
    if not _shipped_here(data_dir):
        return []
    return [Path(p).name[:-len(suffix)] for p in sorted(_paths())
            if Path(p).parent.as_posix() == folder and p.endswith(suffix)]
