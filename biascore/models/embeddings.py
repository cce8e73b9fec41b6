"""The engine's one embedder: the last hidden layer of a model's base network (never the LM head).

:func:`last_hidden_state` is the one forward pass (differentiable, for the heads method's gradients; the rest runs
under ``torch.inference_mode``). :func:`embed_sentences` (LABDet, SEAT, WEAT) pools ``mean`` (default: non-special,
non-padding tokens, LABDet's), ``first`` (position 0) or ``last`` (the last non-padding token, for causal models).
:func:`embed_spans` gives a word in context as the mean over the tokens overlapping its span, sub-word fragments
included (CEAT; the Bangla paper mean-pools all fragments), in a token window around it for long texts.
:func:`embed_words` (WEAT): ``contextual`` embeds the bare word, ``input`` averages its input-embedding rows.
"""
from __future__ import annotations

from typing import Iterator, Literal, Sequence

import numpy as np
import pandas as pd
import torch

from biascore.store.cache import CacheKey, ResultCache
from biascore.store.hashing import sentences_hash
from biascore.store.keys import result_key
from biascore.models.lm_scoring import pad_batch
from biascore.models.loading import LanguageModel
from biascore.models.pair_tokens import max_input_length
from biascore.progress import ProgressFn

Pooling = Literal["mean", "first", "last"]
POOLINGS: tuple[str, ...] = ("mean", "first", "last")
FEATURES_SCORER = "sentence_features"


def last_hidden_state(lm: LanguageModel, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """(batch, seq, dim) last hidden layer of ``lm``'s base network (no LM head), in the model's dtype. Right padding
    (``attention_mask`` 0 at the end) never changes a real token's state. Differentiable: wrap in
    ``torch.inference_mode()`` when no gradient is needed. A split model's last layer may sit on another device: its
    states are gathered onto the inputs' device (a no-op on one device)."""
    hidden = lm.model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    return hidden.to(input_ids.device)


def _hidden_batches(lm: LanguageModel, ids: Sequence[Sequence[int]], batch_size: int,
                    progress: ProgressFn | None) -> Iterator[tuple[np.ndarray, torch.Tensor, torch.Tensor]]:
    """The one batching loop of the embedder: id sequences sorted by length (stable, so similar lengths share a batch
    and padding stays small), right-padded, run through :func:`last_hidden_state` without gradients. Yields, per batch,
    the indices into ``ids``, the attention mask and the float32 last hidden layer; ``progress(done, total)`` follows
    the sequences done."""
    tok = lm.tokenizer
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    order = np.argsort([len(x) for x in ids], kind="stable")
    done = 0
    for start in range(0, len(order), batch_size):
        idx = order[start:start + batch_size]
        input_ids, attention = pad_batch([list(ids[i]) for i in idx], pad_id, lm.device)
        with torch.inference_mode():
            hidden = last_hidden_state(lm, input_ids, attention).float()
        yield idx, attention, hidden
        done += len(idx)
        if progress is not None:
            progress(done, len(ids))


def _pool(hidden: torch.Tensor, attention: torch.Tensor, special: torch.Tensor, pooling: str) -> torch.Tensor:
    """Pool ``hidden`` (batch, seq, dim) to (batch, dim); ``attention``/``special`` are (batch, seq) 0/1 masks."""
    if pooling == "first":
        return hidden[:, 0]
    if pooling == "last":
        last = attention.sum(dim=1) - 1  # right padding: the last real token
        return hidden[torch.arange(hidden.shape[0]), last]
    keep = attention * (1 - special)
    # a sentence made only of special tokens (empty text) falls back to all its real tokens
    keep = torch.where(keep.sum(dim=1, keepdim=True) > 0, keep, attention)
    keep = keep.unsqueeze(-1).to(hidden.dtype)
    return (hidden * keep).sum(dim=1) / keep.sum(dim=1)


def embed_sentences(lm: LanguageModel, sentences: Sequence[str], pooling: Pooling = "mean", batch_size: int = 64,
                    progress: ProgressFn | None = None, max_length: int = 256) -> np.ndarray:
    """One float32 vector per sentence (rows in input order) from ``lm``'s last hidden layer, pooled (module
    docstring) over :func:`_hidden_batches`; text goes through ``lm.prepare_text`` (lower-case for uncased models)."""
    if pooling not in POOLINGS:
        raise ValueError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    sentences = [str(s) for s in sentences]
    if not sentences:
        cfg = lm.config
        return np.zeros((0, int(getattr(cfg, "hidden_size", None) or getattr(cfg.get_text_config(), "hidden_size"))),
                        dtype=np.float32)
    enc = lm.tokenizer([lm.prepare_text(s) for s in sentences], add_special_tokens=True, truncation=True,
                       max_length=max_length, return_special_tokens_mask=True)
    ids, specials = enc["input_ids"], enc["special_tokens_mask"]
    out: np.ndarray | None = None
    for idx, attention, hidden in _hidden_batches(lm, ids, batch_size, progress):
        special, _ = pad_batch([specials[i] for i in idx], 0, lm.device)
        vecs = _pool(hidden, attention, special, pooling).cpu().numpy()
        if out is None:
            out = np.empty((len(sentences), vecs.shape[1]), dtype=np.float32)
        out[idx] = vecs
    return out


def features_key(lm: LanguageModel, sentences: Sequence[str], pooling: str) -> CacheKey:
    return result_key(FEATURES_SCORER, lm, pooling=pooling, sentences=sentences_hash(sentences), n=len(sentences))


def cached_embeddings(lm: LanguageModel, sentences: Sequence[str], pooling: Pooling = "mean",
                      cache: ResultCache | None = None, progress: ProgressFn | None = None) -> np.ndarray:
    """:func:`embed_sentences` through the parquet cache (one row per sentence, column ``vector``; key: the model's
    identity, pooling and a hash of the sentences), so a second run reads the vectors back."""
    cache = cache or ResultCache()
    key = features_key(lm, sentences, pooling)

    def compute() -> pd.DataFrame:
        vecs = embed_sentences(lm, sentences, pooling=pooling, progress=progress)
        return pd.DataFrame({"sentence": list(sentences), "vector": list(vecs)})

    frame = cache.get_or_compute(key, compute)
    return np.stack(frame["vector"].to_numpy()).astype(np.float32) if len(frame) else np.zeros((0, 0), np.float32)


def special_tokens_around(lm: LanguageModel) -> tuple[list[int], list[int]]:
    """The special token ids the tokenizer puts before and after a text ([CLS] … [SEP], <bos> …, or none)."""
    tok = lm.tokenizer
    full = list(tok("a", add_special_tokens=True)["input_ids"])
    bare = list(tok("a", add_special_tokens=False)["input_ids"])
    for k in range(len(full) - len(bare) + 1):
        if full[k:k + len(bare)] == bare:
            return full[:k], full[k + len(bare):]
    raise ValueError(f"{lm.name}: tokenizer special-token layout not understood")


def _encode(lm: LanguageModel, text: str, span: tuple[int, int]) -> tuple[list[int], list[int]]:
    """Token ids with special tokens, and the positions to pool (the tokens overlapping ``span``)."""
    enc = lm.tokenizer(lm.prepare_text(text), add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(enc["input_ids"]), list(enc["offset_mapping"])
    s, e = span
    chosen = [i for i, (a, b) in enumerate(offsets) if a < e and b > s and b > a]
    if not chosen:
        raise ValueError(f"span {span} covers no token of {text[:60]!r}")
    before, after = special_tokens_around(lm)
    room = max_input_length(lm) - len(before) - len(after)
    if len(ids) > room:  # keep a window of tokens around what is pooled
        centre = (chosen[0] + chosen[-1]) // 2
        lo = min(max(0, centre - room // 2), len(ids) - room)
        ids = ids[lo:lo + room]
        chosen = [i - lo for i in chosen if lo <= i < lo + room]
    return before + ids + after, [i + len(before) for i in chosen]


def embed_spans(lm: LanguageModel, texts: Sequence[str], spans: Sequence[tuple[int, int]], batch_size: int = 32,
                progress: ProgressFn | None = None) -> np.ndarray:
    """(n, dim) float32: mean of the last hidden layer over the tokens overlapping each character span (the
    positions :func:`_encode` chooses)."""
    if len(texts) != len(spans):
        raise ValueError("texts and spans differ in length")
    if not texts:
        raise ValueError("no texts to embed")
    encoded = [_encode(lm, t, tuple(s)) for t, s in zip(texts, spans)]
    out: np.ndarray | None = None
    for idx, _, hidden in _hidden_batches(lm, [e[0] for e in encoded], batch_size, progress):
        hidden = hidden.cpu()
        if out is None:
            out = np.zeros((len(texts), hidden.shape[-1]), dtype=np.float32)
        for row, i in enumerate(idx):
            out[i] = hidden[row, encoded[i][1]].mean(dim=0).numpy()
    return out


def embed_words(lm: LanguageModel, words: Sequence[str],
                mode: Literal["contextual", "input"] = "contextual") -> np.ndarray:
    """WEAT word vectors: the word embedded alone (mean over its tokens) or its mean input-embedding row."""
    if mode == "contextual":
        return embed_sentences(lm, words, pooling="mean")
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
