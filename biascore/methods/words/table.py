"""Words view: every word type of a benchmark with its bias attribution, for one model (or two side by side).

Bias attribution score paper (Gamboa & Lee, §3.3–3.4 and §4.3): b(u) < 0 means the shared word u pushes the
model toward the more-biased sentence. Words are the attribution engine's word units (``words`` / ``word_bu``
of :func:`biascore.methods.attribution.scorer.attribution_frame`); a word type (:func:`word_types`) is the unit
NFKC-normalised, apostrophes unified, case-folded; punctuation-only units are left out. Per word type w with
occurrences b_1 … b_n::

    mean_b         = (1/n) Σ b_i
    95 % interval  = mean_b ± t_{0.975, n−1} · s / √n     (NaN when n = 1)
    share_biased   = |{i : b_i < 0}| / n,   share_zero = |{i : b_i = 0}| / n

(docs/methods.md#words; the occurrences are treated as independent, so the interval is slightly optimistic.)
"""
from __future__ import annotations

from typing import Iterable

import numpy as np
import pandas as pd

from biascore.stats.intervals import t_interval_halfwidth

CONFIDENCE = 0.95
OCCURRENCE_COLUMNS = ["pair_id", "bias_type", "word_index", "word", "word_type", "b"]
TABLE_COLUMNS = ["word_type", "n_pairs", "n_occurrences", "mean_b", "ci_low", "ci_high", "share_biased",
                 "share_zero", "forms"]
PAIR_COLUMNS = ["pair_id", "bias_type", "occurrences", "b", "sjsd", "biased", "sent_more", "sent_less"]
_APOSTROPHES = "[\u2019\u2018\u02bc]"


def word_types(words: pd.Series) -> pd.Series:
    """The word type of each unit (see module docstring); NaN for a punctuation-only unit."""
    folded = (words.astype(str).str.normalize("NFKC").str.replace(_APOSTROPHES, "'", regex=True)
              .str.casefold().str.strip())
    return folded.where(folded.str.contains(r"[^\W_]", regex=True))


def word_occurrences(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per scored word of every pair (columns :data:`OCCURRENCE_COLUMNS`), punctuation-only units
    left out. ``frame`` is an attribution frame (needs ``pair_id, bias_type, words, word_bu``; pairs with a
    ``skipped_reason`` have no words and contribute nothing)."""
    cols = frame[["pair_id", "bias_type", "words", "word_bu"]]
    lengths = cols["words"].map(len).to_numpy()
    if not len(cols) or lengths.sum() == 0:
        return pd.DataFrame({c: pd.Series(dtype=t) for c, t in zip(
            OCCURRENCE_COLUMNS, ["int64", "object", "int64", "object", "object", "float64"])})
    if not np.array_equal(lengths, cols["word_bu"].map(len).to_numpy()):
        raise ValueError("attribution frame is inconsistent: words and word_bu differ in length")
    flat = cols.explode(["words", "word_bu"], ignore_index=True).dropna(subset=["words"])
    occ = pd.DataFrame({
        "pair_id": flat["pair_id"].astype("int64").to_numpy(), "bias_type": flat["bias_type"].astype(str).to_numpy(),
        "word_index": np.concatenate([np.arange(n) for n in lengths[lengths > 0]]),
        "word": flat["words"].astype(str).to_numpy(), "b": flat["word_bu"].astype("float64").to_numpy(),
    })
    occ.insert(4, "word_type", word_types(occ["word"]).to_numpy())
    return occ.dropna(subset=["word_type"]).reset_index(drop=True)


def _select(occ: pd.DataFrame, bias_types: Iterable[str] | None) -> pd.DataFrame:
    types = [str(t) for t in bias_types or []]
    return occ[occ["bias_type"].isin(types)] if types else occ


def word_table(occ: pd.DataFrame, bias_types: Iterable[str] | None = None, min_count: int = 1) -> pd.DataFrame:
    """Per word type: counts, mean b, the 95 % Student-t interval and the shares (formulas in the module
    docstring). Only occurrences of ``bias_types`` count (all when empty); word types in fewer than
    ``min_count`` pairs are left out. Sorted by ``n_pairs`` (descending), then ``mean_b``, then the word."""
    if min_count < 1:
        raise ValueError(f"--min-count must be at least 1 (got {min_count})")
    sel = _select(occ, bias_types)
    b = sel["b"].to_numpy(dtype=float)
    if np.isnan(b).any():
        raise ValueError("word scores contain NaN; a scored word always has a finite b")
    marks = pd.DataFrame({"word_type": sel["word_type"].to_numpy(), "pair_id": sel["pair_id"].to_numpy(),
                          "b": b, "biased": b < 0, "zero": b == 0})
    g = marks.groupby("word_type", sort=False)
    table = pd.DataFrame({
        "n_pairs": g["pair_id"].nunique(), "n_occurrences": g["b"].size(), "mean_b": g["b"].mean(),
        "sd": g["b"].std(ddof=1), "share_biased": g["biased"].mean(), "share_zero": g["zero"].mean()})
    table = table[table["n_pairs"] >= min_count]
    half = t_interval_halfwidth(table["sd"].to_numpy(), table["n_occurrences"].to_numpy(), CONFIDENCE)
    table["ci_low"] = table["mean_b"] - half
    table["ci_high"] = table["mean_b"] + half
    table["forms"] = _forms(sel[sel["word_type"].isin(table.index)]).reindex(table.index)
    table = table.reset_index().rename(columns={"index": "word_type"})
    table = table.sort_values(["n_pairs", "mean_b", "word_type"], ascending=[False, True, True], kind="stable")
    return table[TABLE_COLUMNS].reset_index(drop=True)


def _forms(occ: pd.DataFrame) -> pd.Series:
    """Per word type, its distinct written forms, sorted and joined by " · " (one pass over sorted arrays;
    a pandas per-group apply costs ~4× more for thousands of types)."""
    uniq = occ[["word_type", "word"]].drop_duplicates().sort_values(["word_type", "word"])
    keys, words = uniq["word_type"].to_numpy(object), uniq["word"].to_numpy(object)
    if not len(keys):
        return pd.Series(dtype=object)
    cut = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    return pd.Series([" · ".join(w) for w in np.split(words, cut)], index=keys[np.r_[0, cut]], dtype=object)


def max_pair_count(occ: pd.DataFrame) -> int:
    """The largest ``n_pairs`` of any word type (1 when there is none): the top of a minimum-count slider."""
    return int(occ.groupby("word_type", sort=False)["pair_id"].nunique().max()) if len(occ) else 1


def word_pairs(occ: pd.DataFrame, pairs: pd.DataFrame, word_type: str,
               bias_types: Iterable[str] | None = None) -> pd.DataFrame:
    """The pairs in which ``word_type`` occurs (columns :data:`PAIR_COLUMNS`): ``occurrences`` in the pair,
    ``b`` = mean b of those occurrences, and the pair's S_JSD, verdict and sentences from ``pairs`` (an
    attribution frame or :func:`.token_view.pair_table`). Most negative b first."""
    sel = _select(occ, bias_types)
    sel = sel[sel["word_type"] == word_type]
    per = sel.groupby("pair_id", sort=False)["b"].agg(occurrences="size", b="mean").reset_index()
    info = pairs[["pair_id", "bias_type", "sjsd", "biased", "sent_more", "sent_less"]]
    out = per.merge(info, on="pair_id", how="left", validate="one_to_one")
    return out.sort_values(["b", "pair_id"], kind="stable")[PAIR_COLUMNS].reset_index(drop=True)


def compare_words(occurrences: dict[str, pd.DataFrame], bias_types: Iterable[str] | None = None,
                  min_count: int = 1) -> pd.DataFrame:
    """Two (or more) models side by side, joined on word type (outer join: a word one model never scored
    has NaN for it). A word is kept when at least one model has it in ``min_count`` pairs or more, and
    every model's numbers are its own unfiltered ones. Columns ``word_type`` then, per model label,
    ``<label>: n_pairs``, ``: mean_b``, ``: ci_low``, ``: ci_high``, ``: share_biased``; with two models
    ``mean_b difference`` = second − first. Sorted by the largest ``n_pairs`` of any model."""
    if len(occurrences) < 2:
        raise ValueError("choose two different models to compare")
    cols = ["n_pairs", "mean_b", "ci_low", "ci_high", "share_biased"]
    joined = None
    for label, occ in occurrences.items():
        t = word_table(occ, bias_types, 1).set_index("word_type")[cols]
        t.columns = [f"{label}: {c}" for c in cols]
        joined = t if joined is None else joined.join(t, how="outer")
    counts = joined[[f"{label}: n_pairs" for label in occurrences]]
    joined = joined[counts.max(axis=1) >= min_count].copy()
    labels = list(occurrences)
    if len(labels) == 2:
        joined["mean_b difference"] = joined[f"{labels[1]}: mean_b"] - joined[f"{labels[0]}: mean_b"]
    joined["_n"] = counts.max(axis=1)
    joined = joined.reset_index().rename(columns={"index": "word_type"})
    joined = joined.sort_values(["_n", "word_type"], ascending=[False, True], kind="stable").drop(columns="_n")
    for label in labels:
        joined[f"{label}: n_pairs"] = joined[f"{label}: n_pairs"].astype("Int64")
    return joined.reset_index(drop=True)
