"""Sentence embeddings from a frozen model: one vector per sentence, for probes and association tests.

:func:`embed_sentences` runs the model's base network (no LM head, no gradient, eval mode) over
length-sorted batches and pools its last hidden layer:

* ``mean`` (default): mean of the last hidden states over the sentence's non-special, non-padding
  tokens — the LABDet default (issue 6);
* ``first``: the state at position 0 (``[CLS]`` for BERT-style tokenizers, the first word for causal
  tokenizers that add no BOS);
* ``last``: the state of the last non-padding token (the natural choice for causal models, whose last
  position has seen the whole sentence).

:func:`cached_embeddings` wraps it with the result cache (key: model id + fingerprint, pooling and a hash
of the sentences), so a second run reads the vectors from parquet.
"""
from __future__ import annotations

import hashlib
import json
from typing import Callable, Literal, Sequence

import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from biascore.core.cache import CacheKey, ResultCache
from biascore.core.keys import result_key
from biascore.core.models import LanguageModel

Pooling = Literal["mean", "first", "last"]
POOLINGS: tuple[str, ...] = ("mean", "first", "last")
#: ``progress(done, total)``: called after each batch (the dashboard passes a progress-bar updater).
ProgressFn = Callable[[int, int], None]
FEATURES_SCORER = "sentence_features"


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
    """One float32 vector per sentence (rows in input order) from ``lm``'s last hidden layer.

    The model is frozen: it runs under ``torch.inference_mode`` and is never updated. Text goes through
    ``lm.prepare_text`` (lower-case for uncased models); sentences are sorted by token length and batched
    with right padding, so padding never changes a real token's state.
    """
    if pooling not in POOLINGS:
        raise ValueError(f"unknown pooling {pooling!r}; choose one of {', '.join(POOLINGS)}")
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    sentences = [str(s) for s in sentences]
    if not sentences:
        return np.zeros((0, _hidden_size(lm)), dtype=np.float32)
    tok = lm.tokenizer
    enc = tok([lm.prepare_text(s) for s in sentences], add_special_tokens=True, truncation=True,
              max_length=max_length, return_special_tokens_mask=True)
    ids, specials = enc["input_ids"], enc["special_tokens_mask"]
    pad_id = tok.pad_token_id if tok.pad_token_id is not None else 0
    order = np.argsort([len(x) for x in ids], kind="stable")
    base = lm.model.base_model
    out: np.ndarray | None = None
    done = 0
    bar = tqdm(total=len(sentences), desc="embedding", unit="sent", leave=False, disable=None)
    with torch.inference_mode():
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            width = max(len(ids[i]) for i in idx)
            input_ids = torch.full((len(idx), width), pad_id, dtype=torch.long)
            attention = torch.zeros((len(idx), width), dtype=torch.long)
            special = torch.zeros((len(idx), width), dtype=torch.long)
            for row, i in enumerate(idx):
                n = len(ids[i])
                input_ids[row, :n] = torch.tensor(ids[i])
                attention[row, :n] = 1
                special[row, :n] = torch.tensor(specials[i])
            hidden = base(input_ids=input_ids.to(lm.device), attention_mask=attention.to(lm.device)).last_hidden_state
            vecs = _pool(hidden.float(), attention.to(lm.device), special.to(lm.device), pooling).cpu().numpy()
            if out is None:
                out = np.empty((len(sentences), vecs.shape[1]), dtype=np.float32)
            out[idx] = vecs
            done += len(idx)
            bar.update(len(idx))
            if progress is not None:
                progress(done, len(sentences))
    bar.close()
    return out


def _hidden_size(lm: LanguageModel) -> int:
    cfg = lm.config
    return int(getattr(cfg, "hidden_size", None) or getattr(cfg.get_text_config(), "hidden_size"))


def sentences_hash(sentences: Sequence[str]) -> str:
    """SHA-256 of the sentence list (order matters): the data part of a feature cache key."""
    return hashlib.sha256(json.dumps(list(map(str, sentences)), ensure_ascii=False).encode()).hexdigest()


def features_key(lm: LanguageModel, sentences: Sequence[str], pooling: str) -> CacheKey:
    return result_key(FEATURES_SCORER, lm, pooling=pooling, sentences=sentences_hash(sentences), n=len(sentences))


def cached_embeddings(lm: LanguageModel, sentences: Sequence[str], pooling: Pooling = "mean",
                      cache: ResultCache | None = None, progress: ProgressFn | None = None,
                      batch_size: int = 64) -> np.ndarray:
    """:func:`embed_sentences` through the parquet cache (one row per sentence, column ``vector``)."""
    cache = cache or ResultCache()
    key = features_key(lm, sentences, pooling)

    def compute() -> pd.DataFrame:
        vecs = embed_sentences(lm, sentences, pooling=pooling, batch_size=batch_size, progress=progress)
        return pd.DataFrame({"sentence": list(sentences), "vector": list(vecs)})

    frame = cache.get_or_compute(key, compute)
    return np.stack(frame["vector"].to_numpy()).astype(np.float32) if len(frame) else np.zeros((0, 0), np.float32)
