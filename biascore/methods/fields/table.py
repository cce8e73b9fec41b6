"""The semantic-field tables of the bias-attribution paper (Table 6) and their drill-downs, from the tagged words
of a ``fields`` result (its frame: one row per tagged word with its field and b): per field the shares of words
with b < 0 (↑), b = 0 (∘) and b > 0 (↓); the words of a field; the sentences they come from."""
from __future__ import annotations

import numpy as np
import pandas as pd

TABLE_COLUMNS = ["field", "n", "up_pct", "zero_pct", "down_pct"]


def field_table(words: pd.DataFrame, min_count: int = 30, top: int | None = 10) -> pd.DataFrame:
    """The paper's Table 6 for one model: per field ``n``, ``up_pct`` (b<0), ``zero_pct`` (b==0), ``down_pct``.
    ``words`` is :func:`word_fields` output (columns ``field`` and ``b`` are used). Fields with ``n < min_count`` are
    left out; sorted by ``up_pct`` (then ``n``, then name); the first ``top`` kept (all when ``top`` is None)."""
    if min_count < 1:
        raise ValueError("min_count must be at least 1")
    if words.empty:
        return pd.DataFrame({c: pd.Series(dtype=float if c.endswith("pct") else object) for c in TABLE_COLUMNS})
    b = words["b"].to_numpy(dtype=float)
    if np.isnan(b).any():
        raise ValueError("word scores contain NaN; a scored word always has a finite b")
    marks = pd.DataFrame({"field": words["field"].to_numpy(), "up": b < 0, "zero": b == 0, "down": b > 0})
    g = marks.groupby("field", sort=False)
    table = pd.DataFrame({"n": g.size(), "up_pct": 100 * g["up"].mean(), "zero_pct": 100 * g["zero"].mean(),
                          "down_pct": 100 * g["down"].mean()}).reset_index()
    table = table[table["n"] >= min_count]
    table = table.sort_values(["up_pct", "n", "field"], ascending=[False, False, True], kind="mergesort")
    if top is not None:
        table = table.head(top)
    return table.reset_index(drop=True)[TABLE_COLUMNS].astype({"n": int})


def side_by_side(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Several models' tables next to each other, as in the paper: row = rank, columns = (model, column)."""
    parts = {model: t.reset_index(drop=True)[["field", "up_pct", "zero_pct", "down_pct"]]
             for model, t in tables.items()}
    wide = pd.concat(parts, axis=1)
    wide.index = pd.RangeIndex(1, len(wide) + 1, name="rank")
    return wide


def field_words(words: pd.DataFrame, field_name: str) -> pd.DataFrame:
    """The words of one field: ``word, count`` (occurrences), ``mean_b``, ``up_pct``, sorted by count then mean b."""
    sel = words[words["field"] == field_name]
    if sel.empty:
        return pd.DataFrame(columns=["word", "count", "mean_b", "up_pct"])
    g = sel.assign(up=sel["b"] < 0).groupby("word")
    out = pd.DataFrame({"count": g.size(), "mean_b": g["b"].mean(), "up_pct": 100 * g["up"].mean()}).reset_index()
    return out.sort_values(["count", "mean_b"], ascending=[False, True], kind="mergesort").reset_index(drop=True)


def field_sentences(words: pd.DataFrame, field_name: str, word: str | None = None) -> pd.DataFrame:
    """The sentences a field's words (or one of them) come from: ``pair_id, word, b, sentence``."""
    sel = words[words["field"] == field_name]
    if word is not None:
        sel = sel[sel["word"] == word]
    return sel[["pair_id", "word", "b", "sentence"]].sort_values(["b", "pair_id"]).reset_index(drop=True)
