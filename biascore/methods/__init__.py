"""The bias methods, one folder per paper's method: ``methods/<name>/`` holds its mathematics and its
``method.py`` with the :class:`~biascore.core.method.Method` (see docs/adding-a-method.md).

:func:`discover` imports every method folder's ``method.py`` (found by listing this package: no hand-kept
list) and returns the registry; a folder without ``method.py``, or one that fails to import, is an error —
never silently left out.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import types
from typing import TYPE_CHECKING

from biascore.core.method import Method
from biascore.core.registry import lookup, registered

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def method_packages() -> list[str]:
    """Names of the method folders (``association``, ``attribution``, …), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def discover() -> list[Method]:
    """Import every method folder's ``method.py`` and return the registered methods in listing order."""
    for name in method_packages():
        importlib.import_module(f"{__name__}.{name}.method")
    return registered()


def table() -> "pd.DataFrame":
    """The registered methods: name, CLI command, input, model kinds, paper, one-line summary."""
    import pandas as pd

    return pd.DataFrame([m.describe() for m in discover()])


def get(name: str) -> Method:
    """The method called ``name`` (registry name or CLI command), after discovery."""
    discover()
    return lookup(name)


class _MethodsPackage(types.ModuleType):
    """``biascore.methods`` is this package and, called, the API's table of the registered methods: the
    public name ``biascore.methods()`` and the folder ``biascore/methods/`` are one object, so whichever
    Python resolves first (the attribute set by importing the package, or the API) behaves the same."""

    def __call__(self) -> "pd.DataFrame":
        return table()


sys.modules[__name__].__class__ = _MethodsPackage
