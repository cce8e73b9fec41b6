"""The attribution result frame, derived from the cached log-probabilities with array operations.

For every pair (bias attribution score paper, Gamboa & Lee):

    b(u)   = d(P_u,more) − d(P_u,less)                       (d from jsd.py, on log P(u))
    S_JSD  = mean_u b(u);   biased = S_JSD < 0
    verdict, pll_verdict, lmeval_verdict = biased / not biased / tie / not scored per score (ties.py)
    word b = mean of b(u) over the tokens of a word made of shared tokens only   (pair_tokens: words)
    PLL    = Σ_u log P(u) for each sentence (CrowS pseudo-log-likelihood)
    ll     = Σ_t log P(t | prefix, tokens before t) over every token (causal LMs; lm-eval-compatible, lmeval.py),
             passed through from the cached log-probabilities with the prefix token used

All tokens of all pairs are processed at once: the distances in one vectorised call, the words of each
sentence from the one word definition and the tokens overlapping them by ``searchsorted``, word means with
``reduceat``. Per-pair means and sums are taken with numpy's own reduction on each pair's slice, so S_JSD and the PLL sums are
bit-identical to ``np.mean`` / ``np.sum`` per pair (the published code's arithmetic). 12,089 pairs take well
under a second (bench/bench_attribution_frame.py).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from biascore.inputs.datasets import Benchmark
from biascore.models.pair_tokens import word_spans
from biascore.methods.attribution.jsd import JSD_VARIANTS, JsdVariant, bias_attribution
from biascore.methods.attribution.ties import VERDICT_COLUMNS, verdicts

PASSTHROUGH = ["more_tokens", "less_tokens", "more_spans", "less_spans", "more_u", "less_u", "logp_more",
               "logp_less", "truncated"]
#: whole-sentence log-likelihoods (lm-eval-compatible score, causal LMs) and the causal prefix token, with the
#: value a result computed before they were stored gets
OPTIONAL_PASSTHROUGH = {"ll_more": np.nan, "ll_less": np.nan, "prefix_token_id": -1, "prefix_token": ""}


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


def _words(texts: list[str], spans: np.ndarray, span_off: np.ndarray, u_index: np.ndarray, bu: np.ndarray,
           bu_off: np.ndarray, scored: np.ndarray) -> tuple[list, list, list]:
    """Per pair: the words made of shared tokens only, their [start, end) spans (flattened) and mean b(u).

    Words are the engine's one definition (:mod:`biascore.models.pair_tokens`; a word a modified token overlaps is
    left out); a word's b is the mean b(u) of the tokens whose spans overlap it, in token order, so each equals
    ``np.mean`` of those b(u) (the frame test's pair-by-pair reference). A token without characters overlaps nothing.
    Positions of all pairs are keyed by ``pair · big + offset``: one ``searchsorted`` finds the words of every token.
    """
    n_pairs = len(texts)
    starts, ends = spans[0::2], spans[1::2]
    tok_off = span_off // 2
    pair_of = np.repeat(np.arange(n_pairs), np.diff(tok_off))
    per_pair = [word_spans(t) if scored[p] else [] for p, t in enumerate(texts)]
    w_off = np.zeros(n_pairs + 1, dtype=np.int64)
    np.cumsum([len(w) for w in per_pair], out=w_off[1:])
    flat = np.array([x for w in per_pair for span in w for x in span], dtype=np.int64).reshape(-1, 2)
    w_pair = np.repeat(np.arange(n_pairs), np.diff(w_off))
    big = max((len(t) for t in texts), default=0) + 2
    w_start, w_end = flat[:, 0] + w_pair * big, flat[:, 1] + w_pair * big
    # the tokens with characters of scored pairs, the range of words each overlaps (start < word end, end > word start)
    tok = np.flatnonzero(scored[pair_of] & (starts < ends))
    lo = np.searchsorted(w_end, starts[tok] + pair_of[tok] * big, side="right")
    hi = np.searchsorted(w_start, ends[tok] + pair_of[tok] * big, side="left")
    n = np.maximum(hi - lo, 0)
    word = np.repeat(lo, n) + (np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n))
    src = np.repeat(tok, n)  # the token of each (token, word) overlap; a word a modified token overlaps drops out
    sel = ~np.isin(word, word[u_index[src] < 0])
    word, src = word[sel], src[sel]
    value = bu[bu_off[pair_of[src]] + u_index[src]]
    order = np.argsort(word, kind="stable")  # each word's tokens together, in token order
    word, value = word[order], value[order]
    keep, first = np.unique(word, return_index=True)
    count = np.diff(np.append(first, len(word)))
    means = np.add.reduceat(value, first) / count if len(first) else np.zeros(0)
    for j in np.flatnonzero(count >= 3).tolist():  # numpy's own mean, so the value equals np.mean exactly
        means[j] = np.mean(value[first[j]:first[j] + count[j]])
    k_pair = w_pair[keep]
    words_all = [texts[p][s:e] for p, s, e in zip(k_pair.tolist(), flat[keep, 0].tolist(), flat[keep, 1].tolist())]
    spans_all = flat[keep].tolist()
    bu_all = means.tolist()
    cut = np.searchsorted(k_pair, np.arange(n_pairs + 1)).tolist()
    words = [words_all[a:b] for a, b in zip(cut[:-1], cut[1:])]
    word_spans_out = [[x for sp in spans_all[a:b] for x in sp] for a, b in zip(cut[:-1], cut[1:])]
    word_bu = [bu_all[a:b] for a, b in zip(cut[:-1], cut[1:])]
    return words, word_spans_out, word_bu


class UnscoredPairs(ValueError):
    """Pairs not marked skipped whose log-probabilities are not all finite numbers: never stored, never summed."""


def check_scored(logp: pd.DataFrame) -> None:
    """Every pair without a ``skipped_reason`` has a finite log P(u) for each shared token in both sentences: a
    NaN/inf would make its S_JSD NaN and B would count it as "not biased" without saying so. One line, else."""
    reasons = logp["skipped_reason"].fillna("").astype(str).to_numpy()
    bad = [int(pid) for pid, why, a, b in zip(logp["pair_id"], reasons, logp["logp_more"], logp["logp_less"])
           if why == "" and not (np.isfinite(np.asarray(a, dtype=np.float64)).all()
                                 and np.isfinite(np.asarray(b, dtype=np.float64)).all())]
    if bad:
        raise UnscoredPairs(f"{len(bad)} pair(s) (pair_id {', '.join(map(str, bad[:5]))}{', …' if len(bad) > 5 else ''}) "
                            "have log-probabilities that are not finite numbers; no score is computed over them "
                            "and nothing of them is stored")


def attribution_frame(benchmark: Benchmark, logp: pd.DataFrame, jsd: JsdVariant = "reference") -> pd.DataFrame:
    """Join the benchmark's pairs with their log-probabilities and derive b(u), words, S_JSD, B flags, PLL.
    Pairs not skipped must all be scored (:func:`check_scored`)."""
    if jsd not in JSD_VARIANTS:
        raise ValueError(f"unknown --jsd {jsd!r}; choose one of {', '.join(JSD_VARIANTS)}")
    check_scored(logp)
    pairs = benchmark.frame.drop(columns=["load_issue"]).set_index("pair_id")
    logp = logp.reset_index(drop=True)
    pair_ids = logp["pair_id"].astype(int).to_numpy()
    joined = pairs.loc[pair_ids].reset_index()
    more, off = _flat(logp["logp_more"], np.float64)
    less, off_less = _flat(logp["logp_less"], np.float64)
    if not np.array_equal(off, off_less):
        raise ValueError("logp_more and logp_less differ in length for some pair")
    bu = bias_attribution(more, less, jsd)
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
    for col, missing in OPTIONAL_PASSTHROUGH.items():  # absent from results cached before they existed
        out[col] = logp[col].to_numpy() if col in logp.columns else missing
    for metric, col in VERDICT_COLUMNS.items():  # every score's per-pair verdict, ties said as ties
        out[col] = verdicts(out, metric).to_numpy()
    return out
