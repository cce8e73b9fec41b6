"""Turn one scored pair (a row of the attribution frame) into display units: the tokens or words of each sentence with
their attribution b(u), for the heatmaps and ranked bar charts; no scoring happens here.

Token level: every non-special token, its text read at its offsets (no ``Ġ``/``▁`` markers), b(u) or NaN for a
modified token. Word level: the engine's words (:func:`biascore.models.pair_tokens.word_spans`), b = mean b(u) of
the shared tokens overlapping it (as ``word_bu``); a word a modified token overlaps is not scored. b(u) < 0 pushes
the model toward the more-biased sentence (Gamboa & Lee, eq. 5–6).
"""
from __future__ import annotations

import math
from typing import Literal, Mapping

import numpy as np
import pandas as pd

from biascore.contract.views import (UNIT_COLUMNS, Direction, Level, PairTable, RankedUnits, TokenSalience,  # noqa: F401
                                     color_limit, filter_pairs, script_direction, token_units)
from biascore.models.pair_tokens import unflatten_spans
from biascore.methods.attribution.ties import verdicts

Side = Literal["more", "less"]


def _as_list(value) -> list:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value)


def _side(row: Mapping, side: Side) -> tuple[list[tuple[int, int]], list[float], list]:
    """One sentence's token spans, b(u) per token (NaN for a modified token) and token strings."""
    tokens = _as_list(row[f"{side}_tokens"])
    spans = unflatten_spans(_as_list(row[f"{side}_spans"]))
    u_index = [int(i) for i in _as_list(row[f"{side}_u"])]
    bu = [float(x) for x in _as_list(row["bu"])]
    u = [u_index[p] if p < len(u_index) else -1 for p in range(len(tokens))]
    return ([spans[p] if p < len(spans) else (-1, -1) for p in range(len(tokens))],
            [bu[i] if 0 <= i < len(bu) else float("nan") for i in u], tokens)


def salience(row: Mapping, direction: Direction | None = None) -> TokenSalience:
    """The pair's b(u) as the kit's typed view: each sentence's tokens with their b(u), the words derived;
    ``direction`` by default the script's (:func:`~biascore.contract.views.script_direction`: Arabic right to left)."""
    return TokenSalience(tuple((label, str(row[f"sent_{side}"]), token_units(str(row[f"sent_{side}"]),
                                                                             *_side(row, side)))
                               for label, side in (("more-biased", "more"), ("less-biased", "less"))),
                         direction or script_direction(str(row["sent_more"])))


def sentence_units(row: Mapping, side: Side, level: Level = "token") -> pd.DataFrame:
    """Display units of one sentence at the chosen level (columns :data:`UNIT_COLUMNS`; b = NaN and
    ``scored=False`` for a modified unit)."""
    return salience(row).units(level)[0 if side == "more" else 1][1]


def strongest_token(row: Mapping) -> tuple[str, float]:
    """The shared token with the largest |b(u)| (its text in the more-biased sentence) and its b(u);
    ``("", nan)`` for an unscored pair."""
    bu = [float(x) for x in _as_list(row.get("bu"))]
    if not bu:
        return "", float("nan")
    i = int(np.argmax(np.abs(bu)))
    tokens = _as_list(row.get("tokens"))
    text = str(tokens[i]) if i < len(tokens) else ""
    u_index = [int(x) for x in _as_list(row.get("more_u"))]
    spans = unflatten_spans(_as_list(row.get("more_spans")))
    sentence = str(row.get("sent_more", ""))
    if i in u_index and u_index.index(i) < len(spans):
        start, end = spans[u_index.index(i)]
        text = sentence[start:end].strip() or text
    return text, bu[i]


def pair_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per pair for the browsing table: ids, sentences, S_JSD, ``biased`` (S_JSD < 0, as B counts), ``verdict``
    (biased / not biased / tie / not scored: :mod:`.ties`) and the strongest token. ``strongest_b`` is the b(u) with the
    largest magnitude in the pair (sort by ``strongest_abs`` to find the pairs with the most influential single
    token)."""
    strongest = [strongest_token(r) for r in frame[["bu", "tokens", "more_u", "more_spans", "sent_more"]].to_dict("records")]
    table = pd.DataFrame({
        "pair_id": frame["pair_id"].astype(int).to_numpy(), "bias_type": frame["bias_type"].astype(str).to_numpy(),
        "sent_more": frame["sent_more"].astype(str).to_numpy(), "sent_less": frame["sent_less"].astype(str).to_numpy(),
        "sjsd": frame["sjsd"].astype(float).to_numpy(), "biased": frame["biased"].astype(bool).to_numpy(),
        "verdict": verdicts(frame, "attribution").to_numpy(), "strongest_token": [t for t, _ in strongest],
        "strongest_b": [b for _, b in strongest],
        "skipped_reason": frame["skipped_reason"].fillna("").astype(str).to_numpy()
        if "skipped_reason" in frame else "",
    })
    table["strongest_abs"] = table["strongest_b"].abs()
    return table


#: the Token attributions table: its columns, their headers and formats, and its sorts
TABLE_COLUMNS = ("pair_id", "bias_type", "sjsd", "verdict", "strongest_token", "strongest_b", "sent_more", "sent_less")
FORMATS = {"sjsd": ("S_JSD", "%.5f"), "strongest_b": ("strongest b", "%.5f"), "strongest_token": ("strongest token", None)}
SORTS = (("S_JSD, most biased first", "sjsd", True), ("S_JSD, least biased first", "sjsd", False),
         ("strongest token |b(u)|", "strongest_abs", False), ("pair id", "pair_id", True))


def pairs(frame: pd.DataFrame, table: pd.DataFrame | None = None) -> PairTable:
    """The pairs of an attribution frame as the kit's pair table (``table``: its :func:`pair_table`, when already
    made); a row opens the pair's b(u) heatmap and its ranked units."""
    def detail(pair_id: int) -> list:
        shown = salience(frame.loc[frame.pair_id == pair_id].iloc[0].to_dict())
        return [shown, RankedUnits(shown)]

    return PairTable(pair_table(frame) if table is None else table, detail, score="sjsd", columns=TABLE_COLUMNS,
                     sorts=SORTS, formats=FORMATS)
