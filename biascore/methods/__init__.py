"""The bias methods, one folder per paper's method: ``methods/<name>/`` holds its mathematics and its ``method.py``
with the :class:`~biascore.contract.method.Method` (docs/adding-a-method.md).

:func:`discover` imports every method folder's ``method.py`` and returns the registry (a folder without one, or one
that fails to import, is an error); methods of other installed packages join through the entry-point group
``biascore.methods``, after the built-in folders; a taken name or command, or a failed import, is refused in one
line naming both (:class:`PluginError`).
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import threading
import types
from importlib import metadata
from typing import TYPE_CHECKING

from biascore.errors import one_line
from biascore.contract.method import Method
from biascore.contract.registry import NameClash, lookup, register, registered

#: the entry-point group other packages register methods in
ENTRY_POINT_GROUP = "biascore.methods"
_PLUGINS_LOADED = False
_PLUGIN_ERROR: "PluginError | None" = None
_PLUGINS_LOCK = threading.Lock()


class PluginError(ValueError):
    """A method plugin that cannot join the registry (a name clash, an import error, not a Method); one line."""

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


def discover() -> list[Method]:
    """Import every method folder's ``method.py`` (the folders in name order), then the plugins of the
    ``biascore.methods`` entry-point group (once per process), and return the registered methods in listing order."""
    for name in sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg):
        importlib.import_module(f"{__name__}.{name}.method")
    _load_plugins()
    return registered()


def _load_plugins() -> None:
    """Load the entry-point group once; a refused plugin's one line is raised on every read of the registry
    (the plugins before and after it are loaded)."""
    global _PLUGINS_LOADED, _PLUGIN_ERROR
    with _PLUGINS_LOCK:
        if not _PLUGINS_LOADED:
            _PLUGINS_LOADED = True
            for ep in sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda e: (e.name, e.value)):
                try:
                    _load_plugin(ep)
                except PluginError as exc:
                    _PLUGIN_ERROR = _PLUGIN_ERROR or exc
    if _PLUGIN_ERROR is not None:
        raise PluginError(str(_PLUGIN_ERROR))


def _load_plugin(ep: metadata.EntryPoint) -> None:
    dist = getattr(ep.dist, "name", None) or "an unnamed distribution"
    where = f"method plugin {ep.name!r} ({ep.value}, from {dist})"
    try:
        loaded = ep.load()
        if isinstance(loaded, type) and issubclass(loaded, Method):
            if not any(type(m) is loaded for m in registered()):
                register(loaded)
        elif not isinstance(loaded, types.ModuleType):
            raise PluginError(f"{where} is neither a Method subclass nor a module")
    except NameClash as exc:
        raise PluginError(f"{where} refused: {one_line(exc)}; rename the plugin's method") from None
    except PluginError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party import becomes one line naming it
        raise PluginError(f"{where} failed to load: {one_line(exc, with_type=True, public=False)}") from exc


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
