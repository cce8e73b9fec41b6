"""A result's schema: the columns of a method's result frame (and of its cached frame), each with its dtype and
meaning (``biascore methods --schema``, docs/methods.md)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd


@dataclass(frozen=True)
class Column:
    """One column of a result frame: its name, dtype (as pandas names it) and meaning."""

    name: str
    dtype: str
    meaning: str


def columns(rows: Sequence[Column | tuple[str, str, str]]) -> tuple[Column, ...]:
    """A schema from ``(name, dtype, meaning)`` rows (Columns are kept as they are)."""
    return tuple(r if isinstance(r, Column) else Column(*r) for r in rows)


def schema_table(columns: Sequence[Column]) -> pd.DataFrame:
    """A schema as a small frame (``column, dtype, meaning``) for listings and docs."""
    return pd.DataFrame([(c.name, c.dtype, c.meaning) for c in columns], columns=["column", "dtype", "meaning"])
