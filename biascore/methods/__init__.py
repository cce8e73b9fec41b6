"""The bias methods, one subpackage per paper's method, each with a ``scorer`` module.

Every ``biascore/methods/<name>/scorer.py`` registers itself with
:func:`biascore.core.registry.register_scorer`; :func:`scorers` imports them all (found by listing this
package, no hand-kept list) and returns the registry. A subpackage without a ``scorer`` module, or a scorer
that fails to import, is an error — never silently left out.
"""
from __future__ import annotations

import importlib
import pkgutil

from biascore.core.registry import ScorerEntry, registered


def method_packages() -> list[str]:
    """Names of the method subpackages (``attribution``, ``fields``, …), sorted."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.ispkg)


def scorers() -> list[ScorerEntry]:
    """Import every method's ``scorer`` module and return the registered scorers in menu order."""
    for name in method_packages():
        importlib.import_module(f"{__name__}.{name}.scorer")
    return registered()
