"""Targeted head masking (attention-head bias paper, Sec. 6, Table 1a).

Set m_ij = 0 for the top-K heads by bias score b_ij ("Targeted-Debias Top-K"), the bottom-K, K random heads
(``draws`` seeded draws, averaged: "Random-Debias") and all heads with b_ij > 0; report each masked model's SEAT
effect size and its language-modelling quality on held-out sentences:

* masked LM: pseudo-perplexity (Salazar et al. 2020) PPPL = exp(−(1/N) Σ_s Σ_t log P(w_t | s∖t)), each token
  masked in turn (:mod:`biascore.models.lm_scoring`);
* causal LM: perplexity exp(−(1/N) Σ log p(w_t | w_<t)) with the start token in front;
* an encoder without an LM head: n/a.

Held-out sentences: ``sent_less`` of the first crows-en pairs whose bias type is neither gender nor sexual
orientation (text the gender SEAT tests and counter-stereotype sentences do not use).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import torch

from biascore.inputs.datasets import load_benchmark
from biascore.progress import ProgressFn
from biascore.methods.heads.head_table import head_name, scores_to_matrix
from biascore.methods.heads.masks import HeadMask, mask_from_heads, mask_home
from biascore.models.lm_scoring import causal_gold_logprobs, masked_gold_logprobs
from biascore.inputs.seat_tests import SeatTest
from biascore.methods.heads.seat_embeddings import SeatEmbedder

HELD_OUT_EXCLUDE = ("gender", "sexual-orientation")


def held_out_sentences(n: int = 40, data_dir=None) -> list[str]:
    frame = load_benchmark("crows-en", data_dir).frame
    frame = frame[~frame["bias_type"].isin(HELD_OUT_EXCLUDE)].sort_values("pair_id")
    return [str(s).strip() for s in frame["sent_less"].head(n)]


def perplexity_kind(lm) -> str:
    return {"masked": "pseudo-perplexity", "causal": "perplexity"}.get(lm.kind, "n/a")


def _token_sequences(lm, sentences: list[str]) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and the positions to score: non-special tokens (masked LM, specials kept around
    them) or every token (causal LM, start token added by the scorer)."""
    causal = lm.kind == "causal"
    seqs, positions = [], []
    for s in sentences:
        enc = lm.tokenizer(lm.prepare_text(s), add_special_tokens=not causal, return_special_tokens_mask=True)
        seqs.append(list(enc["input_ids"]))
        positions.append([i for i, sp in enumerate(enc["special_tokens_mask"]) if not sp])
    return seqs, positions


def perplexity(lm, sentences: list[str]) -> float:
    """Corpus pseudo-perplexity (masked LM) or perplexity (causal LM); NaN for an encoder."""
    kind = perplexity_kind(lm)
    if kind == "n/a":
        return float("nan")
    seqs, positions = _token_sequences(lm, sentences)
    fn = masked_gold_logprobs if kind == "pseudo-perplexity" else causal_gold_logprobs
    logps = np.concatenate(fn(lm, seqs, positions))
    return float(np.exp(-logps.mean()))


def masking_strategies(scores: np.ndarray, k: int, draws: int = 5, seed: int = 0) -> list[tuple[str, list]]:
    """(label, list of head lists) per strategy; 0-based (layer, head) pairs. Random has ``draws`` lists."""
    L, H = scores.shape
    flat = scores.ravel()
    order = np.argsort(-flat, kind="stable")
    k = max(0, min(k, flat.size))

    def heads(idx) -> list[tuple[int, int]]:
        return [(int(i) // H, int(i) % H) for i in idx]

    rng = np.random.default_rng(seed)
    random_sets = [heads(rng.choice(flat.size, size=k, replace=False)) for _ in range(draws)]
    positive = np.flatnonzero(flat > 0)
    return [("none (full model)", [[]]), (f"top-{k}", [heads(order[:k])]), (f"bottom-{k}", [heads(order[::-1][:k])]),
            (f"random-{k} (mean of {draws} draws)", random_sets),
            (f"all positive ({positive.size})", [heads(positive)])]


def masked_effect_size(lm, embedder: SeatEmbedder, mask: torch.Tensor) -> float:
    with HeadMask(lm.model, mask), torch.no_grad():
        return float(embedder.effect_size(embedder.embed_all()))


def masked_perplexity(lm, sentences: list[str], mask: torch.Tensor) -> float:
    with HeadMask(lm.model, mask):
        return perplexity(lm, sentences)


def masking_rows(lm, test: SeatTest, scores_frame: pd.DataFrame, *, k: int, draws: int, n_held_out: int,
                 data_dir=None, progress: ProgressFn | None = None) -> pd.DataFrame:
    """Table 1a: one row per strategy with ``strategy, heads, n_masked, effect_size, abs_effect_size,
    ppl_kind, perplexity, n_held_out`` (random: means over the draws, ``heads`` lists the first draw)."""
    scores = scores_to_matrix(scores_frame)
    sentences = held_out_sentences(n_held_out, data_dir) if perplexity_kind(lm) != "n/a" else []
    embedder = SeatEmbedder(lm, test)
    home = mask_home(lm.model)
    strategies = masking_strategies(scores, k, draws)
    total = sum(len(sets) for _, sets in strategies)
    done, rows = 0, []
    for label, head_sets in strategies:
        es, ppl = [], []
        for heads in head_sets:
            mask = mask_from_heads(scores.shape, heads, **home)
            es.append(masked_effect_size(lm, embedder, mask))
            ppl.append(masked_perplexity(lm, sentences, mask) if sentences else float("nan"))
            done += 1
            if progress:
                progress(done, total)
        rows.append({"strategy": label, "heads": ", ".join(head_name(l, h) for l, h in head_sets[0]),
                     "n_masked": len(head_sets[0]), "effect_size": float(np.mean(es)),
                     "abs_effect_size": float(np.mean(np.abs(es))), "ppl_kind": perplexity_kind(lm),
                     "perplexity": float(np.mean(ppl)), "n_held_out": len(sentences)})
    return pd.DataFrame(rows)

