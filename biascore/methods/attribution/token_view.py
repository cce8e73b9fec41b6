"""Turn one scored pair (a row of the attribution frame) into display units: the tokens or words of each
sentence with their attribution b(u), for the dashboard's heatmaps and ranked bar charts.

No scoring happens here; this only regroups what :mod:`biascore.methods.attribution.scorer` computed:

* token level: every non-special token of the sentence, its text (the sentence's characters at the
  token's offsets, so byte-level markers such as ``Ġ`` or ``▁`` never show), and b(u) of the shared
  token it is, or NaN for a modified token (those are not scored);
* word level: the sentence's words and punctuation marks (the engine's one word definition,
  :func:`biascore.models.pair_tokens.word_spans`);
  a word's b is the mean b(u) of the shared tokens that overlap it (the same rule as the engine's
  ``word_bu``); a word without any shared token is modified and not scored.

b(u) < 0 means the unit pushes the model toward the more-biased sentence (Gamboa & Lee, eq. 5–6).
"""
from __future__ import annotations

import math
from typing import Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from biascore.models.pair_tokens import unflatten_spans, word_spans
from biascore.methods.attribution.ties import verdicts

Side = Literal["more", "less"]
Level = Literal["token", "word"]
UNIT_COLUMNS = ["text", "start", "end", "b", "scored", "position"]


def _as_list(value) -> list:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return []
    return list(value)


def token_units(row: Mapping, side: Side) -> pd.DataFrame:
    """The tokens of one sentence of a scored pair with b(u) (NaN and ``scored=False`` for modified tokens)."""
    sentence = str(row[f"sent_{side}"])
    tokens = _as_list(row[f"{side}_tokens"])
    spans = unflatten_spans(_as_list(row[f"{side}_spans"]))
    u_index = [int(i) for i in _as_list(row[f"{side}_u"])]
    bu = [float(x) for x in _as_list(row["bu"])]
    records = []
    for pos, tok in enumerate(tokens):
        start, end = spans[pos] if pos < len(spans) else (-1, -1)
        text = sentence[start:end].strip() if 0 <= start < end <= len(sentence) else str(tok)
        u = u_index[pos] if pos < len(u_index) else -1
        b = bu[u] if 0 <= u < len(bu) else float("nan")
        records.append((text or str(tok), start, end, b, 0 <= u < len(bu), pos))
    return pd.DataFrame.from_records(records, columns=UNIT_COLUMNS)


def word_units(row: Mapping, side: Side) -> pd.DataFrame:
    """The words (and punctuation marks) of one sentence; b = mean b(u) of the shared tokens inside the word."""
    sentence = str(row[f"sent_{side}"])
    toks = token_units(row, side)
    records = []
    for pos, (ws, we) in enumerate(word_spans(sentence)):
        inside = toks[(toks.start < we) & (toks.end > ws) & toks.scored]
        b = float(np.mean(inside.b)) if len(inside) else float("nan")
        records.append((sentence[ws:we], ws, we, b, bool(len(inside)), pos))
    return pd.DataFrame.from_records(records, columns=UNIT_COLUMNS)


def sentence_units(row: Mapping, side: Side, level: Level = "token") -> pd.DataFrame:
    """Display units of one sentence at the chosen level (columns :data:`UNIT_COLUMNS`)."""
    return word_units(row, side) if level == "word" else token_units(row, side)


def ranked_units(row: Mapping, level: Level = "token") -> pd.DataFrame:
    """The scored units of the more-biased sentence ordered from the strongest push toward the biased
    sentence (most negative b) to the strongest push away."""
    units = sentence_units(row, "more", level)
    return units[units.scored].sort_values(["b", "position"], kind="stable").reset_index(drop=True)


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


def color_limit(*unit_frames: pd.DataFrame, floor: float = 1e-6) -> float:
    """A symmetric colour-scale limit: the largest |b| shown, so 0 sits in the middle of the scale."""
    values = [abs(b) for f in unit_frames for b in f.b if not math.isnan(b)]
    return max(values + [floor])


def pair_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per pair for the browsing table: ids, sentences, S_JSD, ``biased`` (S_JSD < 0, as B counts),
    ``verdict`` (biased / not biased / tie / not scored: :mod:`.ties`) and the strongest token.

    ``strongest_b`` is the b(u) with the largest magnitude in the pair (sort by ``strongest_abs`` to find
    the pairs with the most influential single token).
    """
    strongest = [strongest_token(r) for r in frame[["bu", "tokens", "more_u", "more_spans", "sent_more"]].to_dict("records")]
    table = pd.DataFrame({
        "pair_id": frame["pair_id"].astype(int).to_numpy(),
        "bias_type": frame["bias_type"].astype(str).to_numpy(),
        "sent_more": frame["sent_more"].astype(str).to_numpy(),
        "sent_less": frame["sent_less"].astype(str).to_numpy(),
        "sjsd": frame["sjsd"].astype(float).to_numpy(),
        "biased": frame["biased"].astype(bool).to_numpy(),
        "verdict": verdicts(frame, "attribution").to_numpy(),
        "strongest_token": [t for t, _ in strongest],
        "strongest_b": [b for _, b in strongest],
        "skipped_reason": frame["skipped_reason"].fillna("").astype(str).to_numpy()
        if "skipped_reason" in frame else "",
    })
    table["strongest_abs"] = table["strongest_b"].abs()
    return table


def filter_pairs(table: pd.DataFrame, *, bias_types: Sequence[str] = (), biased: bool | None = None,
                 verdict: str | None = None, text: str = "", sort_by: str = "sjsd",
                 ascending: bool = True) -> pd.DataFrame:
    """Rows of :func:`pair_table` matching the filters (``verdict``: one of biased / not biased / tie / not
    scored; case-insensitive literal text search in either sentence), sorted by ``sort_by`` (``sjsd``,
    ``strongest_abs`` or ``pair_id``)."""
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
