"""A deliberately naive b(u) implementation that does what the published code does, for timing only.

Published bias-attribution code (Gamboa & Lee), restated from its description: one model call per masked
token (masked LM) or per sentence (causal LM) at batch size 1, a full softmax over the vocabulary at
every scored position, a vocabulary-sized one-hot vector, ε = 1e-16 smoothing of both distributions,
scipy's ``jensenshannon`` (base 2) and a square root of it. Written from that description, not copied.
The model runs on its own device (as the published code does with ``.to(device)``); the softmax goes back to
the CPU for scipy at every scored position.
"""
from __future__ import annotations

import numpy as np
import torch
from scipy.spatial.distance import jensenshannon

from biascore.models.loading import LanguageModel
from biascore.models.pair_tokens import pair_of, tokenize_sentences


def _smoothed_distance(probs: np.ndarray, gold: int) -> float:
    onehot = np.zeros(len(probs), dtype=np.float32)
    onehot[gold] = 1.0
    eps = 1e-16
    p = probs + eps
    p = p / p.sum()
    g = onehot + eps
    g = g / g.sum()
    return float(np.sqrt(jensenshannon(g, p, base=2)))


def naive_pair_bu(lm: LanguageModel, sent_more: str, sent_less: str) -> list[float]:
    pt = pair_of(*tokenize_sentences(lm, [sent_more, sent_less]))
    softmax = torch.nn.Softmax(dim=0)
    scores = []
    with torch.no_grad():
        if lm.kind == "masked":
            for pm, pl in zip(pt.shared_more, pt.shared_less):
                d = []
                for ids, pos in ((pt.more.ids, pm), (pt.less.ids, pl)):
                    masked = torch.tensor([ids], device=lm.device)
                    masked[0, pos] = lm.tokenizer.mask_token_id
                    logits = lm.model(masked)[0].squeeze(0)  # full head at every position
                    d.append(_smoothed_distance(softmax(logits[pos]).float().cpu().numpy(), ids[pos]))
                scores.append(d[0] - d[1])
        else:
            start = lm.start_token_id()
            mats = [lm.model(torch.tensor([[start] + ids], device=lm.device))[0].squeeze(0)
                    for ids in (pt.more.ids, pt.less.ids)]
            for pm, pl in zip(pt.shared_more, pt.shared_less):
                d1 = _smoothed_distance(softmax(mats[0][pm]).float().cpu().numpy(), pt.more.ids[pm])
                d2 = _smoothed_distance(softmax(mats[1][pl]).float().cpu().numpy(), pt.less.ids[pl])
                scores.append(d1 - d2)
    return scores


def naive_forward_shapes(lm: LanguageModel, sent_more: str, sent_less: str) -> list[int]:
    """Sequence lengths of the forwards the naive code runs for one pair (for FLOP accounting)."""
    pt = pair_of(*tokenize_sentences(lm, [sent_more, sent_less]))
    if lm.kind == "masked":
        return [len(pt.more.ids)] * len(pt.shared_more) + [len(pt.less.ids)] * len(pt.shared_less)
    return [len(pt.more.ids) + 1, len(pt.less.ids) + 1]
