"""The per-head score table: one row per (layer, head) ↔ the (layers, heads) matrix b, and the top heads.

Shared by the scorer (which writes the table), the masking experiment and the counter-stereotype test
(which read it back as a matrix). Layers and heads are 1-based in the table, as in the paper ("9-12").
"""
from __future__ import annotations

import numpy as np
import pandas as pd


def scores_frame(b: np.ndarray) -> pd.DataFrame:
    """One row per head: 1-based ``layer``, ``head`` (the paper's "9-12") and ``score``."""
    layers, heads = np.meshgrid(np.arange(b.shape[0]), np.arange(b.shape[1]), indexing="ij")
    return pd.DataFrame({"layer": layers.ravel() + 1, "head": heads.ravel() + 1, "score": b.ravel()})


def scores_to_matrix(frame: pd.DataFrame) -> np.ndarray:
    """Back from :func:`scores_frame` rows to the (layers, heads) matrix."""
    b = np.full((int(frame["layer"].max()), int(frame["head"].max())), np.nan)
    b[frame["layer"].to_numpy() - 1, frame["head"].to_numpy() - 1] = frame["score"].to_numpy()
    return b


def top_heads(frame: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k heads with the largest scores, with a ``name`` column like the paper's "9-12"."""
    top = frame.nlargest(k, "score").copy()
    top.insert(0, "name", [f"{l}-{h}" for l, h in zip(top["layer"], top["head"])])
    return top.reset_index(drop=True)
