"""The per-head score table: one row per (layer, head) ↔ the (layers, heads) matrix b, and the top heads.

Shared by the scorer (which writes the table), the masking experiment and the counter-stereotype test
(which read it back as a matrix).

**Numbering**: layers and heads are **0-based** everywhere — the table's ``layer``/``head`` (the schema), a head's
``name`` ``"<layer>-<head>"``, the masking table's head lists, the page's heatmap axes and head inputs — as
``model.layers[i]`` and the attention tensors index them. The paper names heads 1-based (its footnote 2: "9-12"
is the 12th head of the 9th layer); that head is ``8-11`` here.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from biascore.contract.views import HeadGrid


def scores_frame(b: np.ndarray) -> pd.DataFrame:
    """One row per head: 0-based ``layer``, ``head`` (``b[layer, head]``) and ``score``."""
    layers, heads = np.meshgrid(np.arange(b.shape[0]), np.arange(b.shape[1]), indexing="ij")
    return pd.DataFrame({"layer": layers.ravel(), "head": heads.ravel(), "score": b.ravel()})


def scores_to_matrix(frame: pd.DataFrame) -> np.ndarray:
    """Back from :func:`scores_frame` rows to the (layers, heads) matrix (the kit's :class:`HeadGrid`'s)."""
    return HeadGrid(frame).matrix()


def head_name(layer: int, head: int) -> str:
    """A head's name, ``"<layer>-<head>"``, 0-based like the table."""
    return f"{layer}-{head}"


def top_heads(frame: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k heads with the largest scores, with a ``name`` column ``"<layer>-<head>"`` (0-based: the paper's
    "9-12" is "8-11")."""
    top = frame.nlargest(k, "score").copy()
    top.insert(0, "name", [head_name(l, h) for l, h in zip(top["layer"], top["head"])])
    return top.reset_index(drop=True)
