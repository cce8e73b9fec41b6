"""CEAT — Contextualized Embedding Association Test with a random-effects combination.

Guo & Caliskan (2021); as applied to Bangla with segment lengths in the Bangla context-length paper (appendix D). For
every word of X, Y, A, B take N contextual embeddings from N segments of a corpus that contain it (sampled with
replacement when the word occurs fewer than N times). Draw i picks one of the N embeddings per word at random and gives

    ES_i = WEAT effect size of the drawn embeddings,  V_i = sample variance of s(w, A, B) over X ∪ Y

(the in-sample variance as the paper defines it: the square of the denominator of ES_i). The draws are combined with a
random-effects model (Hedges 1983; DerSimonian-Laird), in :func:`biascore.stats.meta_analysis.random_effects`:

    W_i = 1 / V_i,  Q = Σ W_i ES_i² − (Σ W_i ES_i)² / Σ W_i,  σ²_between = max(0, (Q − (N_draws − 1)) / c)
    v_i = 1 / (V_i + σ²_between),  CES = Σ v_i ES_i / Σ v_i,  SE = √(1 / Σ v_i),  p = 2 (1 − Φ(|CES / SE|))
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Sequence

import numpy as np

from biascore.progress import ProgressFn
from biascore.inputs.seat_tests import SeatTest
from biascore.methods.association.corpus_contexts import Context, Corpus
from biascore.stats.effect_size import association, effect_size_from_associations
from biascore.stats.meta_analysis import random_effects
from biascore.models.loading import LanguageModel
from biascore.models.embeddings import embed_spans


def draw_effect_sizes(embeddings: dict[str, np.ndarray], test: SeatTest, n_draws: int,
                      seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """ES_i and V_i for ``n_draws`` random draws of one contextual embedding per word. ``embeddings[word]`` is that
    word's (N, dim) matrix; words without one are left out of the test."""
    rng = np.random.default_rng(seed)
    groups = [[w for w in g if w in embeddings] for g in (test.X, test.Y, test.A, test.B)]
    for name, g, least in zip("XYAB", groups, (2, 2, 1, 1)):
        if len(g) < least:
            raise ValueError(f"CEAT {test.name}: set {name} has {len(g)} word(s) found in the corpus; need {least}")
    mats = [[embeddings[w] for w in g] for g in groups]
    is_x = np.arange(len(groups[0]) + len(groups[1])) < len(groups[0])
    es, var = np.empty(n_draws), np.empty(n_draws)
    for i in range(n_draws):
        X, Y, A, B = (np.stack([m[rng.integers(len(m))] for m in g]) for g in mats)
        s = association(np.concatenate([X, Y]), A, B).numpy()
        es[i] = effect_size_from_associations(s, is_x)
        var[i] = s.var(ddof=1)
    return es, var


def sample_contexts(corpus: Corpus, words: Sequence[str], n: int, segment_length: int | None, language: str,
                    rng: np.random.Generator) -> dict[str, list[Context]]:
    """N segments per word (without replacement when it occurs ≥ N times, with replacement otherwise)."""
    out: dict[str, list[Context]] = {}
    for w in words:
        found = corpus.contexts(w, segment_length, language)
        if not found:
            continue
        idx = rng.choice(len(found), size=n, replace=len(found) < n)
        out[w] = [found[i] for i in idx]
    return out


def ceat(lm: LanguageModel, test: SeatTest, corpus: Corpus, *, segment_length: int | None = 25, n_contexts: int = 50,
         n_draws: int = 1000, seed: int = 0, batch_size: int = 32, progress: ProgressFn | None = None) -> dict:
    """Run CEAT for one test and one segment length; a flat dict (CES, SE, p, counts, missing words)."""
    if test.kind != "words":
        raise ValueError(f"CEAT needs a word-list test, and {test.name} holds sentences")
    rng = np.random.default_rng(seed)
    words = list(dict.fromkeys(test.X + test.Y + test.A + test.B))
    sampled = sample_contexts(corpus, words, n_contexts, segment_length, test.language, rng)
    unique = list(dict.fromkeys(c for cs in sampled.values() for c in cs))
    if not unique:
        raise ValueError(f"CEAT {test.name}: no word of the test occurs in the corpus")
    vectors = embed_spans(lm, [c.text for c in unique], [(c.start, c.end) for c in unique],
                          batch_size=batch_size, progress=progress)
    row_of = {c: i for i, c in enumerate(unique)}
    embeddings = {w: vectors[[row_of[c] for c in cs]] for w, cs in sampled.items()}
    es, var = draw_effect_sizes(embeddings, test, n_draws, seed=seed)
    combined = random_effects(es, var)
    counts = {k: sum(w in sampled for w in g) for k, g in zip(("n_x", "n_y", "n_a", "n_b"),
                                                             (test.X, test.Y, test.A, test.B))}
    return {**asdict(combined), **counts, "n_contexts": n_contexts, "n_draws": n_draws,
            "n_segments": len(unique), "missing_words": " ".join(w for w in words if w not in sampled),
            "es_mean": float(es.mean()), "es_sd": float(es.std(ddof=1))}
