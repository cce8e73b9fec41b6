"""Word and word-in-context embeddings from any loaded model (last hidden layer).

Sentence embeddings (mean over non-special tokens, or the first token) come from
:func:`biascore.core.embeddings.embed_sentences`, the one sentence embedder of the engine.

* :func:`embed_spans` — one vector per (text, character span): the mean of the last hidden layer over
  the tokens that overlap the span — a word's contextual embedding with all its sub-word fragments,
  suffixes included (CEAT; the Bangla paper mean-pools all fragments of the target word).
* :func:`embed_words` — WEAT word vectors: ``mode="contextual"`` embeds the word alone
  (= :func:`embed_sentences` of the bare word, mean over its sub-word tokens), ``mode="input"`` takes
  the mean of the model's input-embedding rows of the word's sub-word tokens (no context at all).

Texts longer than the model's position limit are cut to a window of tokens around the span (or the
first tokens for whole sentences), so no input is rejected for length.
"""
from __future__ import annotations

from typing import Callable, Literal, Sequence

import numpy as np
import torch

from biascore.core.lm_scoring import pad_batch
from biascore.core.pair_tokens import max_input_length
from biascore.core.models import LanguageModel
from biascore.core.embeddings import embed_sentences  # the one sentence embedder (also used by LABDet)

Pooling = Literal["mean", "first"]
Progress = Callable[[int, int], None]


def _hidden_states(lm: LanguageModel, input_ids: list[list[int]]) -> torch.Tensor:
    """Last hidden layer (batch, len, dim) for ``input_ids`` (right-padded in one batch)."""
    ids, att = pad_batch(input_ids, lm.tokenizer.pad_token_id or 0, lm.device)
    with torch.inference_mode():
        out = lm.model(input_ids=ids, attention_mask=att, output_hidden_states=True)
    return out.hidden_states[-1].float().cpu()


def special_tokens_around(lm: LanguageModel) -> tuple[list[int], list[int]]:
    """The special token ids the tokenizer puts before and after a text ([CLS] … [SEP], <bos> …, or none)."""
    tok = lm.tokenizer
    full = list(tok("a", add_special_tokens=True)["input_ids"])
    bare = list(tok("a", add_special_tokens=False)["input_ids"])
    for k in range(len(full) - len(bare) + 1):
        if full[k:k + len(bare)] == bare:
            return full[:k], full[k + len(bare):]
    raise ValueError(f"{lm.name}: tokenizer special-token layout not understood")


def _encode(lm: LanguageModel, text: str, span: tuple[int, int] | None) -> tuple[list[int], list[int]]:
    """Token ids with special tokens, and the positions to pool (span tokens, or all non-special ones)."""
    enc = lm.tokenizer(lm.prepare_text(text), add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    if span is None:
        chosen = list(range(len(ids)))
    else:
        s, e = span
        chosen = [i for i, (a, b) in enumerate(offsets) if a < e and b > s and b > a]
        if not chosen:
            raise ValueError(f"span {span} covers no token of {text[:60]!r}")
    if not chosen:
        raise ValueError(f"no tokens in {text[:60]!r}")
    before, after = special_tokens_around(lm)
    room = max_input_length(lm) - len(before) - len(after)
    if len(ids) > room:  # keep a window of tokens around what is pooled
        centre = (chosen[0] + chosen[-1]) // 2
        lo = min(max(0, centre - room // 2), len(ids) - room)
        ids = ids[lo:lo + room]
        chosen = [i - lo for i in chosen if lo <= i < lo + room]
    return before + ids + after, [i + len(before) for i in chosen]


def _pooled(lm: LanguageModel, texts: Sequence[str], spans: Sequence[tuple[int, int] | None], pooling: Pooling,
            batch_size: int, progress: Progress | None) -> np.ndarray:
    encoded = [_encode(lm, t, s) for t, s in zip(texts, spans)]
    order = np.argsort([len(e[0]) for e in encoded])  # similar lengths together: less padding
    out = np.zeros((len(texts), 0), dtype=np.float32)
    done = 0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        hidden = _hidden_states(lm, [encoded[i][0] for i in idx])
        if out.shape[1] == 0:
            out = np.zeros((len(texts), hidden.shape[-1]), dtype=np.float32)
        for row, i in enumerate(idx):
            full, positions = encoded[i]
            if pooling == "first":
                out[i] = hidden[row, 0].numpy()
            else:
                out[i] = hidden[row, positions].mean(dim=0).numpy()
        done += len(idx)
        if progress:
            progress(done, len(texts))
    return out


def embed_spans(lm: LanguageModel, texts: Sequence[str], spans: Sequence[tuple[int, int]], batch_size: int = 32,
                progress: Progress | None = None) -> np.ndarray:
    """(n, dim) float32: mean of the last hidden layer over the tokens overlapping each character span."""
    if len(texts) != len(spans):
        raise ValueError("texts and spans differ in length")
    if not texts:
        raise ValueError("no texts to embed")
    return _pooled(lm, list(texts), [tuple(s) for s in spans], "mean", batch_size, progress)


WordMode = Literal["contextual", "input"]


def embed_words(lm: LanguageModel, words: Sequence[str], mode: WordMode = "contextual",
                batch_size: int = 64) -> np.ndarray:
    """WEAT word vectors: the word embedded alone (mean over its tokens) or its mean input-embedding row."""
    if mode == "contextual":
        return embed_sentences(lm, words, pooling="mean", batch_size=batch_size)
    if mode != "input":
        raise ValueError(f"word embedding mode must be 'contextual' or 'input', not {mode!r}")
    table = lm.model.get_input_embeddings().weight.detach().float().cpu()
    rows = []
    for w in words:
        ids = lm.tokenizer(lm.prepare_text(w), add_special_tokens=False)["input_ids"]
        if not ids:
            raise ValueError(f"word {w!r} has no tokens")
        rows.append(table[ids].mean(dim=0).numpy())
    return np.stack(rows)
