"""Where the engine reads benchmark data and writes its cache.

* data directory: ``--data-dir`` (CLI) > ``BIASCORE_DATA_DIR`` > ``<repo>/data/downloads``
* cache directory: ``BIASCORE_CACHE_DIR`` > ``<repo>/cache``
"""
from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Small data shipped with the project (the dataset registry and the demo pairs).
PROJECT_DATA = REPO_ROOT / "data"
DEFAULT_DATA_DIR = PROJECT_DATA / "downloads"
DEFAULT_CACHE_DIR = REPO_ROOT / "cache"


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
