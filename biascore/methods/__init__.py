"""The bias methods, one folder per paper's method: ``methods/<name>/`` holds its mathematics and its
``method.py`` with the :class:`~biascore.core.method.Method` (see docs/adding-a-method.md).

:func:`discover` imports every method folder's ``method.py`` (found by listing this package: no hand-kept
list) and returns the registry; a folder without ``method.py``, or one that fails to import, is an error —
never silently left out.
"""
from __future__ import annotations

import importlib
import pkgutil

from biascore.core.method import Method
from biascore.core.registry import lookup, registered


def method_packages() -> list[str]:
    """Names of the method folders (``association``, ``attribution``, …), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def discover() -> list[Method]:
    """Import every method folder's ``method.py`` and return the registered methods in listing order."""
    for name in method_packages():
        importlib.import_module(f"{__name__}.{name}.method")
    return registered()


def get(name: str) -> Method:
    """The method called ``name`` (registry name or CLI command), after discovery."""
    discover()
    return lookup(name)
