"""The one progress adapter: the engine's ``progress(done, total)`` callbacks drawn as a tqdm bar.

The engine reports progress only through :data:`biascore.core.registry.ProgressFn` and never draws a bar
itself; the shells draw it — the CLI and sweeps on the terminal (stderr), the Python API in a notebook
(``tqdm.auto`` picks the widget there) — all through :class:`Bar`, and the dashboard through its own widget
(``views/common.ProgressBar``)::

    with Bar("smollm2-135m on demo", unit="pair") as bar:
        biascore.run("attribution", "smollm2-135m", "demo", progress=bar, waiting=bar.waiting)
"""
from __future__ import annotations

import sys


class Bar:
    """A progress bar driven by ``bar(done, total)``; :meth:`waiting` moves it while another caller computes
    the same result (its description then says so)."""

    def __init__(self, desc: str, *, unit: str = "item", leave: bool = True, disable: bool = False):
        from tqdm.auto import tqdm

        self.desc = desc
        self._bar = tqdm(total=0, desc=desc, unit=unit, leave=leave, disable=disable, file=sys.stderr)

    def __call__(self, done: int, total: int, desc: str | None = None) -> None:
        bar = self._bar
        bar.set_description_str(desc or self.desc, refresh=False)
        bar.total, bar.n = total, done
        bar.refresh()

    def waiting(self, done: int, total: int) -> None:
        self(done, total, f"waiting for another process: {self.desc}")

    def close(self) -> None:
        self._bar.close()

    def __enter__(self) -> "Bar":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
