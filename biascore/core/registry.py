"""The scorer registry: each method registers itself by name; the CLI and the dashboard read the list.

A method's ``scorer`` module decorates its CLI hook with :func:`register_scorer`::

    @register_scorer("heads", "attention-head bias scores …", pages=[Page("views/attention_heads.py", …)])
    def register_cli(subparsers) -> None: ...

(as lm-eval's ``register_task`` and inseq's registries do). ``register_cli(subparsers)`` adds the
method's subcommand(s), each with ``func`` set to a function taking the parsed ``argparse.Namespace``
and returning an exit code. ``pages`` are the dashboard pages that draw the method's results, in menu
order. :func:`biascore.methods.scorers` imports every method's ``scorer`` module (so all register) and
returns the entries; this module imports nothing of the methods.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

#: ``progress(done, total)``: the one progress-callback signature of the engine (items done of total).
ProgressFn = Callable[[int, int], None]


@dataclass(frozen=True)
class Page:
    """A dashboard page: file under views/, menu title and icon."""

    path: str
    title: str
    icon: str


@dataclass(frozen=True)
class ScorerEntry:
    name: str  # registry name (the CLI subcommand, unless register_cli adds several)
    summary: str  # one line for help texts and the dashboard
    module: str  # the scorer module, e.g. biascore.methods.heads.scorer
    register_cli: Callable[..., None]
    pages: tuple[Page, ...]
    order: int  # menu position (smaller first)


_SCORERS: dict[str, ScorerEntry] = {}


def register_scorer(name: str, summary: str, *, pages: tuple[Page, ...] | list[Page] = (),
                    order: int = 100) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Decorator for a method's ``register_cli(subparsers)``: records the method under ``name``."""

    def decorate(register_cli: Callable[..., None]) -> Callable[..., None]:
        entry = ScorerEntry(name, summary, register_cli.__module__, register_cli, tuple(pages), order)
        known = _SCORERS.get(name)
        if known is not None and known.module != entry.module:
            raise ValueError(f"scorer name {name!r} registered twice: {known.module} and {entry.module}")
        _SCORERS[name] = entry
        return register_cli

    return decorate


def registered() -> list[ScorerEntry]:
    """The scorers registered so far, in menu order."""
    return sorted(_SCORERS.values(), key=lambda e: (e.order, e.name))
