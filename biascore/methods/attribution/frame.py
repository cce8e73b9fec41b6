"""The attribution result frame, derived from the cached log-probabilities with array operations.

For every pair (bias attribution score paper, Gamboa & Lee):

    b(u)   = d(P_u,more) − d(P_u,less)                       (d from jsd.py, on log P(u))
    S_JSD  = mean_u b(u);   biased = S_JSD < 0
    word b = mean of b(u) over the scored tokens of a word   (words from character offsets, pair_tokens.word_groups)
    PLL    = Σ_u log P(u) for each sentence (CrowS pseudo-log-likelihood)

All tokens of all pairs are processed at once: the distances in one vectorised call, the word grouping from
the flattened offsets (a running maximum of token ends per pair), word means with ``bincount``. Per-pair
means and sums are taken with numpy's own reduction on each pair's slice, so S_JSD and the PLL sums are
bit-identical to ``np.mean`` / ``np.sum`` per pair (the published code's arithmetic). 12,089 pairs take well
under a second (bench/bench_attribution_frame.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from biascore.core.datasets import Benchmark
from biascore.methods.attribution.jsd import JSD_VARIANTS, JsdVariant, distance

PASSTHROUGH = ["more_tokens", "less_tokens", "more_spans", "less_spans", "more_u", "less_u", "logp_more",
               "logp_less", "truncated"]


_ALNUM_BMP: np.ndarray | None = None


def _flat(col: pd.Series, dtype) -> tuple[np.ndarray, np.ndarray]:
    """Concatenate a column of sequences; returns (values, offsets) with offsets[i]:offsets[i+1] = row i."""
    seqs = col.to_list()
    offsets = np.zeros(len(seqs) + 1, dtype=np.int64)
    np.cumsum([len(v) for v in seqs], out=offsets[1:])
    if not offsets[-1]:
        return np.zeros(0, dtype), offsets
    return np.concatenate([np.asarray(v, dtype=dtype) for v in seqs if len(v)]), offsets


def _segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Σ of every slice with numpy's own (pairwise) reduction, so each equals ``np.sum`` of that slice."""
    add = np.add.reduce
    bounds = offsets.tolist()
    return np.array([add(values[a:b]) if b > a else np.nan for a, b in zip(bounds[:-1], bounds[1:])])


def _alnum(texts: list[str], text_of: np.ndarray, char_at: np.ndarray) -> np.ndarray:
    """``texts[text_of[k]][char_at[k]].isalnum()`` for every k, from a code-point table."""
    global _ALNUM_BMP
    if _ALNUM_BMP is None:
        _ALNUM_BMP = np.array([chr(c).isalnum() for c in range(0x10000)], dtype=bool)
    starts = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=starts[1:])
    points = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32)
    cp = points[starts[text_of] + char_at]
    out = _ALNUM_BMP[np.minimum(cp, 0xFFFF)]
    for k in np.flatnonzero(cp > 0xFFFF).tolist():
        out[k] = chr(int(cp[k])).isalnum()
    return out


def _words(texts: list[str], spans: np.ndarray, span_off: np.ndarray, u_index: np.ndarray, bu: np.ndarray,
           bu_off: np.ndarray, scored: np.ndarray) -> tuple[list, list, list]:
    """Per pair: the words holding scored tokens, their [start, end) spans (flattened) and mean b(u).

    Same grouping as :func:`biascore.core.pair_tokens.word_groups`: a token starts a new word when no
    earlier token of the pair has characters, when there is a gap before it, or when it touches the
    previous token across a non-alphanumeric character; an empty token stays in the current word.
    """
    n_pairs = len(texts)
    starts, ends = spans[0::2], spans[1::2]
    n_tok = len(starts)
    tok_off = span_off // 2
    pair_of = np.repeat(np.arange(n_pairs), np.diff(tok_off))
    first = np.zeros(n_tok, dtype=bool)
    first[tok_off[:-1][np.diff(tok_off) > 0]] = True
    nonempty = starts < ends
    # prev_end: the largest end among earlier non-empty tokens of the same pair (−1 when none). Ends are
    # shifted by a per-pair offset so that one running maximum over all pairs restarts at every pair.
    big = int(ends.max(initial=0)) + 2
    shift = pair_of.astype(np.int64) * big
    keyed = np.where(nonempty, ends + shift, shift - 1)
    run = np.maximum.accumulate(keyed) if n_tok else keyed
    prev = np.empty(n_tok, dtype=np.int64)
    if n_tok:
        prev[0] = -1
        prev[1:] = run[:-1]
    prev_end = prev - shift
    prev_end[first | (prev_end < 0)] = -1
    touching = nonempty & (prev_end >= 0) & (starts == prev_end)
    new = first | (nonempty & ((prev_end < 0) | (starts > prev_end)))
    touch = np.flatnonzero(touching)  # only adjacent tokens need the characters on both sides
    t_pair, t_start = pair_of[touch], starts[touch]
    new[touch] |= ~_alnum(texts, t_pair, t_start) | ~_alnum(texts, t_pair, t_start - 1)
    group = np.cumsum(new) - 1
    n_groups = int(group[-1]) + 1 if n_tok else 0
    # b(u) of each token (NaN for modified tokens, u = −1) and the word sums over the scored ones
    has_u = (u_index >= 0) & scored[pair_of]
    tok_bu = np.zeros(n_tok)
    tok_bu[has_u] = bu[bu_off[pair_of[has_u]] + u_index[has_u]]
    count = np.bincount(group[has_u], minlength=n_groups)
    total = np.bincount(group[has_u], weights=tok_bu[has_u], minlength=n_groups)
    g_start = starts[new]
    g_end = np.maximum.reduceat(ends, np.flatnonzero(new)) if n_tok else ends
    g_pair = pair_of[new]
    keep = np.flatnonzero(count > 0)
    means = total[keep] / count[keep]
    # words of 3+ scored tokens: numpy's own mean, so the value equals np.mean of the word's b(u) exactly
    scored_tok = np.flatnonzero(has_u)  # in token order, so each word's scored tokens are contiguous here
    first_of = np.searchsorted(group[scored_tok], keep)
    for j in np.flatnonzero(count[keep] >= 3).tolist():
        a = first_of[j]
        means[j] = np.mean(tok_bu[scored_tok[a:a + count[keep[j]]]])
    words_all = [texts[p][s:e] for p, s, e in zip(g_pair[keep].tolist(), g_start[keep].tolist(),
                                                  g_end[keep].tolist())]
    spans_all = np.column_stack([g_start[keep], g_end[keep]]).astype(int).tolist()
    bu_all = means.tolist()
    cut = np.searchsorted(g_pair[keep], np.arange(n_pairs + 1)).tolist()
    words = [words_all[a:b] for a, b in zip(cut[:-1], cut[1:])]
    word_spans = [[x for sp in spans_all[a:b] for x in sp] for a, b in zip(cut[:-1], cut[1:])]
    word_bu = [bu_all[a:b] for a, b in zip(cut[:-1], cut[1:])]
    return words, word_spans, word_bu


def attribution_frame(benchmark: Benchmark, logp: pd.DataFrame, jsd: JsdVariant = "reference") -> pd.DataFrame:
    """Join the benchmark's pairs with their log-probabilities and derive b(u), words, S_JSD, B flags, PLL."""
    if jsd not in JSD_VARIANTS:
        raise ValueError(f"unknown --jsd {jsd!r}; choose one of {', '.join(JSD_VARIANTS)}")
    pairs = benchmark.frame.drop(columns=["load_issue"]).set_index("pair_id")
    logp = logp.reset_index(drop=True)
    pair_ids = logp["pair_id"].astype(int).to_numpy()
    joined = pairs.loc[pair_ids].reset_index()
    more, off = _flat(logp["logp_more"], np.float64)
    less, off_less = _flat(logp["logp_less"], np.float64)
    if not np.array_equal(off, off_less):
        raise ValueError("logp_more and logp_less differ in length for some pair")
    bu = distance(more, jsd) - distance(less, jsd)
    reasons = logp["skipped_reason"].fillna("").astype(str)
    scored = (reasons == "").to_numpy() & (np.diff(off) > 0)
    n_tok = np.maximum(np.diff(off), 1)
    sjsd = np.where(scored, _segment_sums(bu, off) / n_tok, np.nan)  # = np.mean per pair, bit for bit
    pll_more = np.where(scored, _segment_sums(more, off), np.nan)
    pll_less = np.where(scored, _segment_sums(less, off), np.nan)
    spans, span_off = _flat(logp["more_spans"], np.int64)
    u_index, _ = _flat(logp["more_u"], np.int64)
    texts = joined["sent_more"].astype(str).tolist()
    words, word_spans, word_bu = _words(texts, spans, span_off, u_index, bu, off, scored)
    bu_list = bu.tolist()
    bounds = off.tolist()
    out = pd.DataFrame({"pair_id": pair_ids, "benchmark": benchmark.name})
    for col in joined.columns:
        if col != "pair_id":
            out[col] = joined[col].to_numpy()
    out["tokens"] = [list(t) for t in logp["tokens"].to_list()]
    out["bu"] = [bu_list[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    out["words"], out["word_spans"], out["word_bu"] = words, word_spans, word_bu
    out["sjsd"] = sjsd
    out["biased"] = scored & (np.nan_to_num(sjsd, nan=0.0) < 0)
    out["pll_more"], out["pll_less"] = pll_more, pll_less
    out["skipped_reason"] = reasons.to_numpy()
    for col in PASSTHROUGH:
        out[col] = logp[col].to_numpy()
    return out
