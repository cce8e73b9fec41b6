"""Contextual embeddings of SEAT items, differentiable with respect to head masks.

Attention-head bias paper, footnote 3 (Kaneko & Bollegala 2021): a **word-level** item is embedded in every context
of :data:`biascore.inputs.seat_tests.WORD_TEMPLATES`, final-layer states averaged over its sub-tokens, then over
the contexts; a **sentence-level** item (``sent-*``, Heilman tests) is its own context, mean-pooled over its
non-special tokens. Causal models get their start token in front (never pooled) and right padding; texts go
through ``lm.prepare_text``.
"""
from __future__ import annotations

from dataclasses import dataclass
import numpy as np
import torch

from biascore.models.embeddings import last_hidden_state
from biascore.progress import ProgressFn
from biascore.stats.effect_size import effect_size
from biascore.inputs.seat_tests import ROLES, WORD_TEMPLATES, SeatTest


@dataclass(frozen=True)
class Occurrences:
    """Every context in which a test item is read, and how to average them back into items."""

    texts: tuple[str, ...]
    spans: tuple[tuple[int, int] | None, ...]  # char span of the item in its text; None = whole text
    item_of: np.ndarray  # occurrence -> item index
    role_of_item: tuple[str, ...]  # item -> targ1 / targ2 / attr1 / attr2

    @property
    def n_items(self) -> int:
        return len(self.role_of_item)


def item_occurrences(test: SeatTest) -> Occurrences:
    texts, spans, item_of, roles = [], [], [], []
    sentence_level = test.sentence_level
    for role in ROLES:
        for item in test.examples[role]:
            idx = len(roles)
            roles.append(role)
            if sentence_level:
                texts.append(item)
                spans.append(None)
                item_of.append(idx)
                continue
            for template in WORD_TEMPLATES:
                start = template.index("{}")
                text = template.format(item)
                if start == 0:
                    text = text[0].upper() + text[1:]
                texts.append(text)
                spans.append((start, start + len(item)))
                item_of.append(idx)
    return Occurrences(tuple(texts), tuple(spans), np.asarray(item_of), tuple(roles))


@dataclass
class EncodedBatch:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    pool: torch.Tensor  # (batch, tokens) averaging weights, rows sum to 1


def encode(lm, texts: list[str], spans: list[tuple[int, int] | None]) -> EncodedBatch:
    """Tokenise with offsets and build each row's pooling weights (the item's sub-tokens, or the whole
    sentence without special tokens)."""
    causal = lm.kind == "causal"
    enc = lm.tokenizer([lm.prepare_text(t) for t in texts], add_special_tokens=not causal, padding=True,
                       padding_side="right", return_offsets_mapping=True, return_special_tokens_mask=True,
                       return_tensors="pt")
    ids, att = enc["input_ids"], enc["attention_mask"]
    offsets, special = enc["offset_mapping"], enc["special_tokens_mask"].bool()
    if causal:
        start = torch.full((ids.shape[0], 1), lm.start_token_id(), dtype=ids.dtype)
        ids = torch.cat([start, ids], dim=1)
        att = torch.cat([torch.ones_like(start), att], dim=1)
        offsets = torch.cat([torch.zeros(ids.shape[0], 1, 2, dtype=offsets.dtype), offsets], dim=1)
        special = torch.cat([torch.ones(ids.shape[0], 1, dtype=torch.bool), special], dim=1)
    usable = att.bool() & ~special & (offsets[..., 1] > offsets[..., 0])
    pool = torch.zeros(ids.shape, dtype=torch.float32)
    for row, span in enumerate(spans):
        sel = usable[row].clone()
        if span is not None:
            sel &= (offsets[row, :, 0] < span[1]) & (offsets[row, :, 1] > span[0])
        if not sel.any():
            raise ValueError(f"no tokens found for {texts[row][span[0]:span[1]] if span else texts[row]!r} "
                             f"in {texts[row]!r}")
        pool[row, sel] = 1.0 / sel.sum()
    return EncodedBatch(ids.to(lm.device), att.to(lm.device), pool.to(lm.device))


def pooled(lm, batch: EncodedBatch) -> torch.Tensor:
    """Each row's weighted mean of the final layer (the engine's one forward pass,
    :func:`biascore.models.embeddings.last_hidden_state`, run with gradients for the head mask)."""
    hidden = last_hidden_state(lm, batch.input_ids, batch.attention_mask)
    return torch.einsum("bt,btd->bd", batch.pool.to(device=hidden.device, dtype=hidden.dtype), hidden)


class SeatEmbedder:
    """Embeds one SEAT test's occurrences in batches and turns them into the |effect size| loss."""

    def __init__(self, lm, test: SeatTest, batch_size: int = 128):
        self.lm, self.test = lm, test
        self.occ = item_occurrences(test)
        n = len(self.occ.texts)
        self.batches = [encode(lm, list(self.occ.texts[i:i + batch_size]), list(self.occ.spans[i:i + batch_size]))
                        for i in range(0, n, batch_size)]
        self.slices = [slice(i, min(i + batch_size, n)) for i in range(0, n, batch_size)]
        counts = np.bincount(self.occ.item_of, minlength=self.occ.n_items)
        avg = np.zeros((self.occ.n_items, n))
        avg[self.occ.item_of, np.arange(n)] = 1.0 / counts[self.occ.item_of]
        self.average = torch.as_tensor(avg)
        self.role_index = {r: [i for i, x in enumerate(self.occ.role_of_item) if x == r] for r in ROLES}

    def effect_size(self, occurrence_embeddings: torch.Tensor) -> torch.Tensor:
        """Signed SEAT effect size from occurrence embeddings (differentiable)."""
        items = self.average.to(occurrence_embeddings) @ occurrence_embeddings
        X, Y, A, B = (items[self.role_index[r]] for r in ROLES)
        return effect_size(X, Y, A, B)

    def embed_all(self, progress: ProgressFn | None = None) -> torch.Tensor:
        parts = []
        for k, batch in enumerate(self.batches):
            parts.append(pooled(self.lm, batch))
            if progress:
                progress(k + 1, len(self.batches))
        return torch.cat(parts)
