"""A method's result: its frame, what it was computed from and how, its summary — shown in notebooks too.

Every result comes from :func:`biascore.core.runner.run` and carries

* ``frame`` — one row per item (pairs, heads, nationalities…; the method's ``schema`` lists the columns);
* ``meta`` — the cache key's parts (method, model name and weights fingerprint, model kind, dtype, device,
  input name and content hash, every option that changes the numbers, engine version), the key's ``digest``
  and ``info`` — what the computation recorded about itself, ``info["conventions"]`` (e.g. the prefix token
  of a causal model, the JSD variant, the neutral filler);
* :meth:`Result.summary` — the method's summary table (with its intervals), :meth:`Result.to_parquet` and
  :meth:`Result.to_csv`, and ``_repr_html_`` for Jupyter (every piece of text escaped: benchmark sentences
  stay literal text there too).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from biascore.core import display
from biascore.core.precision import is_approximate, precision_label


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
        return is_approximate(str(self.meta.get("dtype", "")))

    @property
    def precision(self) -> str:
        """``exact (float32)``, ``approximate (bfloat16)`` (a fast reduced-precision run) or ``served (precision
        as the server computes)`` (:func:`biascore.core.precision.precision_label`)."""
        return precision_label(str(self.meta.get("dtype", "")))

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
                "conventions": self.conventions, "options": self.options.as_dict()}

    # ------------------------------------------------------------------ tables and files
    def summary(self) -> pd.DataFrame:
        """The method's summary table (what the CLI prints; with intervals where the method has them)."""
        return self.method.summary(self)

    def to_parquet(self, path: str | Path) -> Path:
        """The frame as parquet, with :meth:`describe` in the file's metadata (key ``biascore``)."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(self.frame, preserve_index=False)
        table = table.replace_schema_metadata({**(table.schema.metadata or {}),
                                               b"biascore": json.dumps(self.describe(), default=str).encode()})
        pq.write_table(table, path)
        return Path(path)

    def to_csv(self, path: str | Path) -> Path:
        """The frame as CSV (list columns as JSON arrays)."""
        write_frame(self.frame, str(path))
        return Path(path)

    # ------------------------------------------------------------------ notebooks
    def _repr_html_(self) -> str:
        return html_card(self.headline(), self.summary(), self.describe())

    def __repr__(self) -> str:
        return f"<Result {self.headline()}; {len(self.frame)} rows>"


def html_card(title: str, table: pd.DataFrame, facts: dict | None = None, body: str = "") -> str:
    """A small HTML block: a title, facts (key: value), an optional body and a table — all text escaped."""
    rows = "".join(f"<tr><th style='text-align:left'>{display.html(k)}</th><td>{display.html(v)}</td></tr>"
                   for k, v in (facts or {}).items())
    shown = table.head(50)
    more = f"<p>… {len(table) - len(shown)} more rows</p>" if len(table) > len(shown) else ""
    return (f"<div class='biascore-result'><p><b>{display.html(title)}</b></p>"
            + (f"<table>{rows}</table>" if rows else "") + body
            + shown.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}") + more + "</div>")


def write_frame(frame: pd.DataFrame, path: str) -> None:
    """CSV (list columns as JSON) or parquet, by extension. A frame read back from the cache (numpy arrays of
    numpy scalars) writes the same file as a freshly computed one (Python lists)."""
    if path.endswith(".parquet"):
        frame.to_parquet(path, index=False)
        return
    out = frame.copy()
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, (list, np.ndarray))).any():
            out[col] = out[col].map(lambda v: json.dumps(np.asarray(v).tolist() if len(v) else [],
                                                         ensure_ascii=False))
    out.to_csv(path, index=False)
