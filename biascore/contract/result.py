"""A method's result: its frame, what it was computed from and how, its summary — shown in notebooks too.

Every result comes from :func:`biascore.runs.runner.run` and carries ``frame`` (one row per item: pairs, heads,
nationalities…; the method's ``schema`` lists the columns) and ``meta``: the cache key's parts (method, model name
and weights fingerprint, model kind, dtype, device, input name and content hash, every option that changes the
numbers, engine version), the key's ``digest`` and ``info``, what the computation recorded about itself
(``info["conventions"]``: e.g. the prefix token of a causal model, the JSD variant, the neutral filler). In
Jupyter every piece of text is escaped: benchmark sentences stay literal text there too.
"""
from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from biascore import display
from biascore.models.precision import precision_of
from biascore.store.provenance import package_versions, utc_now


@dataclass
class Result:
    """One method's result for one model on one input (see the module docstring)."""

    method: "Method"
    frame: pd.DataFrame
    meta: dict
    options: "Options"
    input: Any
    #: follow-up results the CLI computed after this one (see ``Method.followups``), by name
    extras: dict = field(default_factory=dict)
    #: the cached frame the result frame was derived from, when the method derives one (else the frame itself)
    stored: pd.DataFrame | None = None
    #: how this call went: ``this_call_s`` (seconds) and ``from_cache`` (set by the runner)
    timings: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.stored is None:
            self.stored = self.frame

    # ------------------------------------------------------------------ what it is
    @property
    def model(self) -> str:
        return str(self.meta.get("model", ""))

    @property
    def input_name(self) -> str:
        return str(self.meta.get("input", ""))

    @property
    def digest(self) -> str:
        return str(self.meta.get("digest", ""))

    @property
    def conventions(self) -> dict:
        return {**dict((self.meta.get("info") or {}).get("conventions") or {}), **self.options.conventions()}

    @property
    def approximate(self) -> bool:
        return precision_of(self.meta).kind == "approximate"

    @property
    def precision(self) -> str:
        """The label of its :class:`~biascore.models.precision.Precision`: ``exact (float32)``, ``approximate
        (bfloat16)``, ``approximate (int8 weights)`` or ``served (precision as the server computes)``."""
        return precision_of(self.meta).label

    def headline(self) -> str:
        """One line naming the result: method, model, input, precision and conventions."""
        conv = "; ".join(f"{k} {v}" for k, v in self.conventions.items())
        return (f"{self.method.name}: {self.model} on {self.input_name} — {self.precision}, "
                f"{self.meta.get('device', '?')}" + (f"; {conv}" if conv else ""))

    def describe(self) -> dict[str, Any]:
        """The metadata a reader needs, flat: method, model, fingerprint, input, hash, precision, device,
        engine version, conventions, options."""
        return {"method": self.method.name, "model": self.model,
                "model_fingerprint": self.meta.get("model_fingerprint", ""), "input": self.input_name,
                "input_hash": self.meta.get("input_hash", ""), "precision": self.precision,
                "device": self.meta.get("device", ""), "engine_version": self.meta.get("engine_version", ""),
                "conventions": self.conventions, "options": self.options.as_dict(),
                **({"placement": self.placement} if self.placement else {})}

    @property
    def placement(self) -> dict:
        """Where a split model's modules sat when this result was computed (device → module count, and the
        offload folder), from the result's ``info``; {} for a model on one device."""
        return dict((self.meta.get("info") or {}).get("placement") or {})

    # ------------------------------------------------------------------ tables and files
    def summary(self) -> pd.DataFrame:
        """The method's summary table (what the CLI prints; with intervals where the method has them)."""
        return self.method.summary(self)

    def to_parquet(self, path: str | Path) -> Path:
        """The frame as parquet, with :meth:`describe` in the file's metadata (key ``biascore``) and what
        :func:`biascore.api.load_result` needs to rebuild this result (key ``biascore_result``: method, meta, options)."""
        record = {"format": RECORD_FORMAT, "method": self.method.name, "meta": self.meta,
                  "options": self.options.as_dict()}
        return _write_parquet(self.frame, path, {b"biascore": self.describe(), RECORD_KEY: record})

    def record(self) -> dict[str, Any]:
        """The results record of this run, as a dict (what :meth:`to_json` writes): like lm-eval-harness's results
        file (docs/api.md names its fields; ``versions`` are those the computation ran with, ``versions_read``
        those reading it now; ``timings`` the computation's and this call's)."""
        info, meta, options = dict(self.meta.get("info") or {}), self.meta, self.options.as_dict()
        summary = self.summary()
        return {
            "biascore_record": RECORD_FORMAT, "written_at": utc_now(), "headline": self.headline(),
            "config": {"method": self.method.name, "model": self.model, "input": self.input_name, "options": options},
            "model": {"name": self.model, "fingerprint": meta.get("model_fingerprint", ""),
                      "kind": meta.get("model_kind", ""), "dtype": meta.get("dtype", ""),
                      "device": meta.get("device", ""), "precision": self.precision},
            "input": {"name": self.input_name, "hash": meta.get("input_hash", ""), "rows": len(self.frame)},
            "seeds": {k: v for k, v in options.items() if "seed" in k}, "conventions": self.conventions,
            "versions": info.get("versions") or {}, "versions_read": package_versions(),
            "timings": {**(info.get("timings") or {}), **self.timings},
            "digest": self.digest, "engine_version": meta.get("engine_version", ""),
            "results": [{k: _plain(v) for k, v in row.items()} for row in summary.to_dict("records")],
        }

    def to_json(self, path: str | Path | None = None, *, indent: int = 2) -> str:
        """The results record (:meth:`record`) as JSON text; also written to ``path`` when one is given."""
        text = json.dumps(self.record(), indent=indent, ensure_ascii=False, default=str, allow_nan=False)
        if path is not None:
            Path(path).write_text(text + "\n", encoding="utf-8")
        return text

    def to_csv(self, path: str | Path) -> Path:
        """The frame as CSV (list columns as JSON arrays)."""
        write_frame(self.frame, str(path))
        return Path(path)

    # ------------------------------------------------------------------ notebooks and terminals
    def _repr_html_(self) -> str:
        return html_card(self.headline(), self.summary(), self.describe())

    def show(self, file=None) -> None:
        """Show the result: as HTML in Jupyter, else as text (headline and summary table) on ``file``
        (default stdout)."""
        if file is None and _in_notebook():
            from IPython.display import HTML, display as show_html

            show_html(HTML(self._repr_html_()))
            return
        with pd.option_context("display.width", 120, "display.max_rows", 60, "display.max_columns", 30):
            table = self.summary().to_string(index=False, float_format=lambda v: f"{v:.4g}")
        print(self.headline() + "\n" + table, file=file or sys.stdout)

    def save_html(self, path: str | Path) -> Path:
        """The notebook view (:meth:`_repr_html_`, every piece of text escaped) as a standalone HTML page."""
        page = ("<!DOCTYPE html><html><head><meta charset='utf-8'><title>"
                + display.html(self.headline()) + "</title></head><body>" + self._repr_html_() + "</body></html>")
        Path(path).write_text(page, encoding="utf-8")
        return Path(path)

    def __repr__(self) -> str:
        return f"<Result {self.headline()}; {len(self.frame)} rows>"


RECORD_KEY = b"biascore_result"
RECORD_FORMAT = 1


class ResultFileError(ValueError):
    """A file :func:`biascore.api.load_result` cannot read as a result (one line)."""


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    try:
        return shell is not None and type(shell.get_ipython()).__name__ == "ZMQInteractiveShell"
    except Exception:  # noqa: BLE001
        return False


def _plain(v: Any) -> Any:
    """A JSON-ready value: numpy scalars as Python numbers, NaN as None, arrays as lists."""
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, np.ndarray):
        return [_plain(x) for x in v.tolist()]
    if isinstance(v, float) and not math.isfinite(v):
        return None
    return v


def html_card(title: str, table: pd.DataFrame, facts: dict | None = None, body: str = "") -> str:
    """A small HTML block: a title, facts (key: value), an optional body and a table — all text escaped."""
    rows = "".join(f"<tr><th style='text-align:left'>{display.html(k)}</th><td>{display.html(v)}</td></tr>"
                   for k, v in (facts or {}).items())
    shown = table.head(50)
    more = f"<p>… {len(table) - len(shown)} more rows</p>" if len(table) > len(shown) else ""
    return (f"<div class='biascore-result'><p><b>{display.html(title)}</b></p>"
            + (f"<table>{rows}</table>" if rows else "") + body
            + shown.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}") + more + "</div>")


def check_out(path: str | Path | None) -> None:
    """Refuse an ``--out`` that cannot be a file (a folder), in one line, before anything is computed."""
    if path is not None and Path(path).expanduser().is_dir():
        raise ValueError(f"--out {path} is a folder: give a file name inside it")


def write_frame(frame: pd.DataFrame, path: str) -> None:
    """CSV (list columns as JSON) or parquet, by extension. A frame read back from the cache (numpy arrays of
    numpy scalars) writes the same file as a freshly computed one (Python lists)."""
    if path.endswith(".parquet"):
        frame.to_parquet(path, index=False)
        return
    out = frame.copy()
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, (list, np.ndarray))).any():
            out[col] = out[col].map(lambda v: json.dumps(np.asarray(v).tolist() if len(v) else [], ensure_ascii=False))
    out.to_csv(path, index=False)


def write_result_file(results: Sequence[Result], frame: pd.DataFrame, path: str | Path) -> Path:
    """What ``--out`` writes for ``results``: ``frame`` (the method's output table) as CSV, or as parquet — one
    result: its result file (:meth:`Result.to_parquet`, read back by :func:`load_result`); several results:
    the stacked ``frame`` with a record saying how many it holds (:func:`load_result` refuses it in one line)."""
    path = Path(path)
    if path.suffix != ".parquet":
        write_frame(frame, str(path))
    elif len(results) == 1:
        results[0].to_parquet(path)
    else:
        record = {"format": RECORD_FORMAT, "method": results[0].method.name, "stacked": len(results)}
        _write_parquet(frame, path, {RECORD_KEY: record})
    return path


def _write_parquet(frame: pd.DataFrame, path: str | Path, footer: dict[bytes, Any]) -> Path:
    """``frame`` as parquet, each of ``footer``'s values as JSON in the file's metadata under its key."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    table = pa.Table.from_pandas(frame, preserve_index=False)
    meta = {**(table.schema.metadata or {}), **{k: json.dumps(v, default=str).encode() for k, v in footer.items()}}
    pq.write_table(table.replace_schema_metadata(meta), path)
    return Path(path)
