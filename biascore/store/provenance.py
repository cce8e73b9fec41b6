"""What a result records about the software and the moment it was computed with (the results record's
``versions`` and ``timings``; cf. lm-eval-harness's results file: versions, date, total evaluation time).

Package versions are read from the installed distributions' metadata (``importlib.metadata``), so asking for
them never imports torch or transformers.
"""
from __future__ import annotations

import importlib.metadata
import platform
from datetime import datetime, timezone

from biascore.version import ENGINE_VERSION

#: the distributions whose versions every record names (besides biascore's engine version and Python)
PACKAGES = ("torch", "transformers", "numpy", "pandas", "scipy", "pyarrow")


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """``{"biascore": ENGINE_VERSION, "python": …, "torch": …, "transformers": …, …}`` for ``packages``; a
    package that is not installed is left out."""
    out = {"biascore": ENGINE_VERSION, "python": platform.python_version()}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return out


def utc_now() -> str:
    """The current time as ISO 8601 in UTC, to the second."""
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat()
