"""The vectorised attribution frame equals a plain per-pair computation (b(u) from jsd.distance, words from
word_groups below, np.mean / np.sum per pair) bit for bit, on real tokenisations with random
log-probabilities, including skipped pairs, non-ASCII text and tokens without characters of their own. The same
process computes both, from the same values, so the contract promises the same bits (docs/reproducibility.md);
tests/test_kernel_paths.py re-runs this under numpy's other code paths."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biascore.inputs.datasets import Benchmark, load_benchmark
from biascore.models.pair_tokens import word_spans
from biascore.methods.attribution.frame import attribution_frame
from biascore.methods.attribution.jsd import distance
from biascore.methods.attribution.scorer import LOGP_COLUMNS, _tokenize_rows

pytestmark = pytest.mark.exactness


def word_groups(text: str, spans: list[tuple[int, int]], shared: list[bool]) -> list[tuple[tuple[int, int], list, bool]]:
    """Each word of ``text`` (its character span) with the indices of the shared tokens whose ``spans`` overlap it and
    whether it is modified (a token that is not shared overlaps it). A token with an empty span (a byte piece without
    characters of its own) overlaps nothing."""
    out = []
    for ws, we in word_spans(text):
        inside = [i for i, (s, e) in enumerate(spans) if s < e and s < we and e > ws]
        out.append(((ws, we), [i for i in inside if shared[i]], not all(shared[i] for i in inside)))
    return out


def _reference_frame(benchmark: Benchmark, logp: pd.DataFrame, jsd: str) -> pd.DataFrame:
    """One pair at a time, the obvious way."""
    pairs = benchmark.frame.drop(columns=["load_issue"]).set_index("pair_id")
    rows = []
    for rec in logp.to_dict("records"):
        pair = pairs.loc[rec["pair_id"]]
        more, less = np.asarray(rec["logp_more"], float), np.asarray(rec["logp_less"], float)
        bu = distance(more, jsd) - distance(less, jsd)
        scored = not rec["skipped_reason"] and len(bu) > 0
        words, word_spans, word_bu = [], [], []
        if scored:
            text, flat, u = pair["sent_more"], list(rec["more_spans"]), list(rec["more_u"])
            spans = list(zip(flat[0::2], flat[1::2]))
            for (start, end), group, modified in word_groups(text, spans, [x >= 0 for x in u]):
                idx = [u[t] for t in group]
                if idx and not modified:
                    words.append(text[start:end])
                    word_spans += [int(start), int(end)]
                    word_bu.append(float(np.mean(bu[idx])))
        sjsd = float(bu.mean()) if scored else float("nan")
        rows.append({"pair_id": rec["pair_id"], "bu": bu.tolist(), "words": words, "word_spans": word_spans,
                     "word_bu": word_bu, "sjsd": sjsd, "biased": bool(scored and sjsd < 0),
                     "pll_more": float(more.sum()) if scored else float("nan"),
                     "pll_less": float(less.sum()) if scored else float("nan"), "bias_type": pair["bias_type"]})
    return pd.DataFrame.from_records(rows)


def _random_logp(lm, bm: Benchmark, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    _, recs = _tokenize_rows(lm, bm.frame)[:2]
    for rec in recs:
        n = len(rec["tokens"])
        # a spread from P ≈ 1 (where d = JSD^¼ is steep) to P ≈ 1e-9
        rec["logp_more"] = (-rng.exponential(2.0, n) * rng.choice([1e-6, 1e-2, 1.0, 5.0], n)).tolist()
        rec["logp_less"] = (-rng.exponential(2.0, n) * rng.choice([1e-6, 1e-2, 1.0, 5.0], n)).tolist()
    return pd.DataFrame.from_records(recs, columns=LOGP_COLUMNS)


@pytest.mark.parametrize("benchmark", [pytest.param("crows-en-gso", marks=pytest.mark.shared("data")),
                                       pytest.param("crows-tl", marks=pytest.mark.shared("data")), "demo"])
@pytest.mark.parametrize("jsd", ["reference", "paper"])
def test_vectorised_frame_equals_per_pair_computation(random_mlm, benchmark, jsd):
    bm = load_benchmark(benchmark)
    bm = bm.first(400)
    logp = _random_logp(random_mlm, bm, seed=len(benchmark))
    # a token with no characters of its own (as byte-level pieces have) and a touching punctuation token
    k = int(np.flatnonzero(logp["skipped_reason"] == "")[0])
    spans = list(logp.at[k, "more_spans"])
    spans[2:4] = [spans[2], spans[2]]
    logp.at[k, "more_spans"] = spans
    logp.at[k + 1, "skipped_reason"] = "skipped for the test"  # a skipped pair keeps its tokens, gets no words
    ours, ref = attribution_frame(bm, logp, jsd), _reference_frame(bm, logp, jsd)
    assert ours.loc[k + 1, "words"] == [] and np.isnan(ours.loc[k + 1, "sjsd"])
    for col in ["pair_id", "bias_type", "bu", "words", "word_spans", "word_bu", "biased"]:
        assert ours[col].tolist() == ref[col].tolist(), col
    for col in ["sjsd", "pll_more", "pll_less"]:
        np.testing.assert_array_equal(ours[col].to_numpy(), ref[col].to_numpy())


def test_frame_of_no_pairs_and_of_an_unknown_variant():
    bm = load_benchmark("demo")
    empty = pd.DataFrame(columns=LOGP_COLUMNS)
    assert len(attribution_frame(bm, empty)) == 0
    with pytest.raises(ValueError, match="unknown --jsd"):
        attribution_frame(bm, empty, "bogus")
