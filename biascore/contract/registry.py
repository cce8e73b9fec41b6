"""The method registry: every method registers itself by name (:func:`register`, as lm-eval's ``register_task``);
:func:`biascore.methods.discover` imports every method folder's ``method.py`` so that all register before a shell
reads :func:`registered`. This module imports nothing of the methods.
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:  # pragma: no cover
    from biascore.contract.method import Method

M = TypeVar("M")
_METHODS: dict[str, "Method"] = {}
_LOCK = threading.Lock()


class NameClash(ValueError):
    """A method takes a name or command another registered method already has (one line naming both)."""


def register(cls: type[M]) -> type[M]:
    """Class decorator: register one instance of a :class:`~biascore.contract.method.Method` subclass under its
    ``name`` (and its CLI ``command``). A second class may not take a name or command already taken."""
    method = cls()
    with _LOCK:
        for other in _METHODS.values():
            if type(other).__qualname__ == cls.__qualname__ and type(other).__module__ == cls.__module__:
                continue
            clash = {method.name, method.cli_command} & {other.name, other.cli_command}
            if clash:
                raise NameClash(f"method name {sorted(clash)[0]!r} registered twice: "
                                f"{type(other).__module__} and {cls.__module__}")
        _METHODS[method.name] = method
    return cls


def registered() -> list["Method"]:
    """The methods registered so far, in listing order (``order``, then name)."""
    with _LOCK:
        return sorted(_METHODS.values(), key=lambda m: (m.order, m.name))


def lookup(name: str) -> "Method":
    """The registered method called ``name`` (its registry name or its CLI command)."""
    for method in registered():
        if name in (method.name, method.cli_command):
            return method
    known = ", ".join(m.name for m in registered())
    raise ValueError(f"unknown method {name!r}; the methods are: {known}")
