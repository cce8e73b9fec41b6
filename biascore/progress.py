"""The one progress adapter: the engine's ``progress(done, total)`` callbacks drawn as a tqdm bar.

The engine reports progress only through :data:`biascore.progress.ProgressFn` and never draws a bar
itself; the shells draw it — the CLI and sweeps on the terminal (stderr), the Python API in a notebook
(``tqdm.auto`` picks the widget there) — all through :class:`Bar`, and the dashboard through its own widget
(its ``ProgressBar`` widget).
"""
from __future__ import annotations

import sys
from typing import Callable

#: ``progress(done, total)``: the one progress-callback signature of the engine (items done of total).
ProgressFn = Callable[[int, int], None]


class Bar:
    """A progress bar driven by ``bar(done, total)``; :meth:`waiting` moves it while another caller computes
    the same result (its description then says so). Nothing is drawn until the first report, so a command
    that fails before any work prints its one-line error alone."""

    def __init__(self, desc: str, *, unit: str = "item", leave: bool = True, disable: bool = False):
        self.desc, self.unit, self.leave, self.disable = desc, unit, leave, disable
        self._bar = None

    def __call__(self, done: int, total: int, desc: str | None = None) -> None:
        if self._bar is None:
            from tqdm.auto import tqdm

            # ``initial``: a resumed run (or a waiter joining late) starts at ``done``; its rate counts only the rest
            self._bar = tqdm(total=total, initial=done, desc=self.desc, unit=self.unit, leave=self.leave,
                             disable=self.disable, file=sys.stderr)
        bar = self._bar
        bar.set_description_str(desc or self.desc, refresh=False)
        bar.total, bar.n = total, done
        bar.refresh()

    def waiting(self, done: int, total: int) -> None:
        self(done, total, f"waiting for another process: {self.desc}")

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
