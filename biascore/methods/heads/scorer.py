"""Attention-head bias scores: b_ij = ∂|SEAT effect size| / ∂m_ij at m = 1.

Attention-head bias paper (Yang et al., "Bias A-head? Analyzing bias in transformer-based language
model attention heads"), eqs. 2–4::

    MultiHead_i(X) = Concat_j (m_ij · head_ij) W^O,        m = 1
    L = |ES(X, Y, A, B)|                                    (SEAT effect size, biascore.stats.effect_size)
    b_ij = ∂L / ∂m_ij

b_ij > 0: turning the head down would shrink the measured bias (a "biased head"). One forward and one backward
pass; contexts that do not fit in one batch take two exact steps (g = ∂L/∂E from a no-grad forward, then each
batch back-propagated with g, a vector–Jacobian product) that sum to the same ∂L/∂m.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from biascore.progress import ProgressFn
from biascore.methods.heads.head_table import scores_frame, scores_to_matrix, top_heads
from biascore.methods.heads.masks import HeadMask
from biascore.inputs.seat_tests import SeatTest
from biascore.methods.heads.seat_embeddings import SeatEmbedder, pooled


def head_score_matrix(lm, test: SeatTest, *, batch_size: int = 256,
                      progress: ProgressFn | None = None) -> tuple[np.ndarray, float]:
    """(b, effect size at m = 1): b is the (layers, heads) gradient of |ES| w.r.t. the head mask. ``progress(done,
    total)`` follows the backward batches (a test that fits in one batch has none)."""
    emb = SeatEmbedder(lm, test, batch_size=batch_size)
    with HeadMask(lm.model) as hm:
        mask = hm.mask.requires_grad_(True)
        if len(emb.batches) == 1:
            es = emb.effect_size(pooled(lm, emb.batches[0]))
            (grad,) = torch.autograd.grad(es.abs(), mask)
        else:
            with torch.no_grad():
                E = emb.embed_all()
            E.requires_grad_(True)
            es = emb.effect_size(E)
            (gE,) = torch.autograd.grad(es.abs(), E)
            grad = torch.zeros_like(mask)
            for k, (batch, sl) in enumerate(zip(emb.batches, emb.slices)):
                (g,) = torch.autograd.grad(pooled(lm, batch), mask, grad_outputs=gE[sl].to(mask.dtype))
                grad += g
                if progress:
                    progress(k + 1, len(emb.batches))
    return grad.detach().double().cpu().numpy(), float(es.detach())


def head_frame(lm, test: SeatTest, *, batch_size: int, progress: ProgressFn | None = None) -> pd.DataFrame:
    """Per-head bias scores for one SEAT test: columns ``layer, head, score, effect_size`` (``effect_size``:
    the signed SEAT effect size of the unmasked model, the same on every row)."""
    b, es = head_score_matrix(lm, test, batch_size=batch_size, progress=progress)
    frame = scores_frame(b)
    frame["effect_size"] = es
    return frame

