"""The typed views a result is drawn as (LIT's ``TokenSalience`` output specs are the model): small frozen dataclasses
a method returns from :meth:`~biascore.contract.method.Method.drawn`, each drawn by one function of the drawing kit
with its PNG/SVG/CSV exports, so a plugin gets the built-in pages' drawings with no view code. Nothing here draws.
A salience < 0 pushes the model toward the more-biased sentence (red), > 0 away (blue); NaN is a *modified* unit.
"""
from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass, field
from typing import Callable, Literal, Mapping, Sequence, Union

import numpy as np
import pandas as pd

from biascore.models.pair_tokens import word_spans

Level = Literal["token", "word"]
Direction = Literal["ltr", "rtl"]
#: the columns of one sentence's units: text, its character span, its value, whether scored, its position
UNIT_COLUMNS = ["text", "start", "end", "b", "scored", "position"]


def token_units(sentence: str, spans: Sequence[tuple[int, int]], values: Sequence[float],
                fallback: Sequence[str] = ()) -> pd.DataFrame:
    """One sentence's sub-word units (:data:`UNIT_COLUMNS`): each span's characters (``fallback[i]`` when the span
    is not in the sentence) and its value; NaN marks a modified unit (``scored=False``)."""
    records = []
    for pos, ((start, end), value) in enumerate(zip(spans, values)):
        text = sentence[start:end].strip() if 0 <= start < end <= len(sentence) else ""
        b = float(value)
        records.append((text or (str(fallback[pos]) if pos < len(fallback) else ""), start, end, b,
                        not math.isnan(b), pos))
    return pd.DataFrame.from_records(records, columns=UNIT_COLUMNS)


def word_units(sentence: str, tokens: pd.DataFrame) -> pd.DataFrame:
    """The words (and punctuation marks: the engine's one word definition) of a sentence from its sub-word units: a
    word's value is the mean of its units' values when every unit with characters that overlaps it is scored; a word
    that a modified unit overlaps is modified (docs/methods.md, "Words: how sub-word tokens become words")."""
    records = []
    for pos, (ws, we) in enumerate(word_spans(sentence)):
        inside = tokens[(tokens.start < we) & (tokens.end > ws) & (tokens.start < tokens.end)]
        scored = bool(len(inside)) and bool(inside.scored.all())
        records.append((sentence[ws:we], ws, we, float(np.mean(inside.b)) if scored else float("nan"), scored, pos))
    return pd.DataFrame.from_records(records, columns=UNIT_COLUMNS)


def script_direction(text: str) -> Direction:
    """``rtl`` when ``text`` has more right-to-left letters (Arabic, Hebrew, …) than left-to-right ones."""
    kinds = [unicodedata.bidirectional(c) for c in text]
    return "rtl" if sum(k in ("R", "AL") for k in kinds) > sum(k == "L" for k in kinds) else "ltr"


def color_limit(*unit_frames: pd.DataFrame, floor: float = 1e-6) -> float:
    """A symmetric colour-scale limit: the largest |value| shown, so 0 sits in the middle of the scale."""
    values = [abs(b) for f in unit_frames for b in f.b if not math.isnan(b)]
    return max(values + [floor])


@dataclass(frozen=True, eq=False)
class TokenSalience:
    """Signed salience of every unit of a pair's sentences, at sub-word and word level: ``sentences`` holds
    (row label, sentence text, sub-word units) per sentence (:func:`token_units`); the word level is derived
    (:func:`word_units`). ``direction`` is the script's (``rtl`` for Arabic, Hebrew, Urdu, …)."""

    sentences: tuple[tuple[str, str, pd.DataFrame], ...]
    direction: Direction = "ltr"
    scale: str = "b(u): red → biased, blue → away"

    @classmethod
    def of_pair(cls, sent_more: str, sent_less: str, more: tuple[Sequence[tuple[int, int]], Sequence[float]],
                less: tuple[Sequence[tuple[int, int]], Sequence[float]], direction: Direction = "ltr"
                ) -> "TokenSalience":
        """A pair's salience from each sentence's (character spans, value per span; NaN: modified)."""
        return cls((("more-biased", sent_more, token_units(sent_more, *more)),
                    ("less-biased", sent_less, token_units(sent_less, *less))), direction)

    def units(self, level: Level = "token") -> list[tuple[str, pd.DataFrame]]:
        """(row label, units) of each sentence at ``level``."""
        return [(label, word_units(text, units) if level == "word" else units) for label, text, units in self.sentences]

    def limit(self, level: Level = "token") -> float:
        return color_limit(*(units for _, units in self.units(level)))


@dataclass(frozen=True, eq=False)
class RankedUnits:
    """The scored units of one sentence of a :class:`TokenSalience` ranked from the strongest push toward the biased
    sentence (most negative) to the strongest push away."""

    salience: TokenSalience
    sentence: int = 0
    title: str = "Shared units ranked by b(u) (top: strongest push toward the biased sentence)"
    axis: str = "b(u)  (< 0: toward biased)"

    def units(self, level: Level = "token") -> pd.DataFrame:
        units = self.salience.units(level)[self.sentence][1]
        return units[units.scored].sort_values(["b", "position"], kind="stable").reset_index(drop=True)


def filter_pairs(table: pd.DataFrame, *, bias_types: Sequence[str] = (), biased: bool | None = None,
                 verdict: str | None = None, text: str = "", sort_by: str = "sjsd",
                 ascending: bool = True) -> pd.DataFrame:
    """Rows of a table of pairs matching the filters (``verdict``: e.g. biased / not biased / tie / not scored;
    case-insensitive literal text search in either sentence), sorted by ``sort_by``, then ``pair_id``."""
    mask = np.ones(len(table), dtype=bool)
    if bias_types:
        mask &= table["bias_type"].isin(list(bias_types)).to_numpy()
    if biased is not None:
        mask &= (table["biased"] == biased).to_numpy()
    if verdict is not None:
        mask &= (table["verdict"] == verdict).to_numpy()
    text = (text or "").strip()
    if text:
        mask &= (table["sent_more"].str.contains(text, case=False, regex=False)
                 | table["sent_less"].str.contains(text, case=False, regex=False)).to_numpy()
    out = table[mask]
    return out.sort_values([sort_by, "pair_id"], ascending=[ascending, True], kind="stable", na_position="last")


@dataclass(frozen=True, eq=False)
class PairTable:
    """One row per pair (``pair_id``, ``bias_type``, ``sent_more``, ``sent_less``, the ``score`` column, optionally
    ``verdict``), filtered by bias type, verdict and text and sorted by ``sorts`` ((label, column, ascending)); a
    row opens the views ``detail(pair_id)`` returns (e.g. its :class:`TokenSalience` and :class:`RankedUnits`)."""

    frame: pd.DataFrame
    detail: Callable[[int], Sequence["TypedView"]]
    score: str = "score"
    columns: tuple[str, ...] = ("pair_id", "bias_type", "score", "sent_more", "sent_less")
    sorts: tuple[tuple[str, str, bool], ...] = ()
    #: column → its header and number format (None: text), e.g. ``{"sjsd": ("S_JSD", "%.5f")}``
    formats: Mapping[str, tuple[str, str | None]] = field(default_factory=dict)
    #: the verdicts the verdict filter offers (when the frame has a ``verdict`` column)
    verdicts: tuple[str, ...] = ("biased", "not biased", "tie")

    def sort_options(self) -> tuple[tuple[str, str, bool], ...]:
        return self.sorts or ((f"{self.score}, lowest first", self.score, True),
                              (f"{self.score}, highest first", self.score, False), ("pair id", "pair_id", True))

    def filtered(self, **filters) -> pd.DataFrame:
        """The rows :func:`filter_pairs` keeps."""
        return filter_pairs(self.frame, **filters)


@dataclass(frozen=True, eq=False)
class HeadGrid:
    """A layer × head grid of scores (``frame`` columns ``layer``, ``head``, ``score``, 0-based)."""

    frame: pd.DataFrame
    title: str = ""
    #: draw negative scores as 0 (the attention-head bias paper's Figure 2)
    clip: bool = False

    def matrix(self) -> np.ndarray:
        """The (layers, heads) matrix of the scores (NaN where a head has none)."""
        frame = self.frame
        grid = np.full((int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1), np.nan)
        grid[frame["layer"].to_numpy(), frame["head"].to_numpy()] = frame["score"].to_numpy()
        return np.clip(grid, 0, None) if self.clip else grid


@dataclass(frozen=True, eq=False)
class Estimates:
    """An estimate with its interval per group (``frame`` columns ``group``, ``estimate``, ``low``, ``high`` and,
    for several series side by side, ``series``), e.g. B per bias type with its 95 % Wilson interval."""

    frame: pd.DataFrame
    axis: str = "estimate"
    title: str = ""
    #: a line across the chart (50 for B, 0 for an effect size), with its label
    reference: float | None = None
    reference_label: str = ""
    range: tuple[float, float] | None = None


@dataclass(frozen=True, eq=False)
class PairedComparison:
    """Two models (or two languages) compared on the same items: one row per group of ``frame`` (difference,
    interval, test), how it was computed (``method_line``) and its notes."""

    frame: pd.DataFrame
    method_line: str
    notes: tuple[str, ...] = ()
    caption: str = ""


@dataclass(frozen=True, eq=False)
class Table:
    """A plain table (CSV download ``name``.csv)."""

    frame: pd.DataFrame
    title: str = ""
    name: str = "table"


@dataclass(frozen=True, eq=False)
class Chart:
    """A plain chart of a table: ``bar`` (``label`` names each bar, ``value`` its length, ``low``/``high`` its
    interval, ``reference`` a line across) or ``heatmap`` (``rows`` × ``columns`` → ``value``)."""

    frame: pd.DataFrame
    kind: Literal["bar", "heatmap"]
    value: str
    label: str | None = None
    low: str | None = None
    high: str | None = None
    rows: str | None = None
    columns: str | None = None
    reference: float | None = None
    title: str = ""


TypedView = Union[TokenSalience, RankedUnits, PairTable, HeadGrid, Estimates, PairedComparison, Table, Chart]
