"""The kind of input a method reads (:class:`InputKind`): how it is named, loaded, listed, keyed, sliced and
shipped in a snapshot. The shared kinds (pair benchmarks, SEAT tests) are in :mod:`biascore.inputs.kinds`; a
method with an input of its own declares it in its folder."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class InputKind:
    """A kind of input a method reads (a pair benchmark, a SEAT test, a LABDet language…). ``load(name, data_dir)``
    returns the loaded input, which has ``.name`` and ``.content_hash``; ``names(data_dir)`` lists what is available;
    ``files(loaded, data_dir)`` the data files a snapshot must carry. Inputs with rows (pair benchmarks) also give
    ``ids`` (row ids: shards and checks), ``subset(loaded, a, b)`` (rows a..b) and ``first(loaded, n)``
    (``--limit``)."""

    name: str
    flag: str  # the CLI flag naming the input, e.g. "--benchmark"
    noun: str  # "benchmark", "SEAT test", "language"
    help: str
    default: str | None
    load: Callable[[str, Path | None], Any]
    names: Callable[[Path | None], list[str]]
    files: Callable[[Any, Path | None], list[Path]]
    ids: Callable[[Any], list] | None = None
    subset: Callable[[Any, int, int], Any] | None = None
    first: Callable[[Any, int], Any] | None = None
    extra_key: Callable[[Any], dict] | None = None  # more key parts (e.g. the pair count of a --limit run)
    unit: str = "item"  # what progress counts ("pair")
    choices: tuple[str, ...] | None = None  # the only names there can be (the CLI offers them as choices)
    selectable: bool = True  # False: fixed data of its method (a snapshot's --benchmarks does not filter it)
    label: Callable[[str], str] | None = None  # how a shell shows a name (e.g. "Turkish (tr)"); None: the name

    def key_parts(self, loaded: Any) -> dict[str, Any]:
        parts = {"input_kind": self.name, "input": loaded.name, "input_hash": loaded.content_hash}
        if self.extra_key is not None:
            parts.update(self.extra_key(loaded))
        return parts
