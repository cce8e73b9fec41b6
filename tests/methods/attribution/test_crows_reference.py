"""The CrowS-Pairs paper's masked-LM metric, re-implemented here independently of the engine, against our PLL.

Written from the paper (Nangia et al. 2020, §3: "we mask one unmodified token at a time … and sum the log
probabilities of the unmodified tokens") and the procedure of its published metric script (nyu-mll/crows-pairs
``metric.py``, read for reference only): lower-case for an uncased model; tokenise each sentence *with* the
tokenizer's special tokens; the unmodified tokens are the ``equal`` blocks of ``difflib.SequenceMatcher`` over the
two id sequences, without the first and last of them ([CLS] and [SEP]); mask each in turn, one full forward,
a log-softmax over the vocabulary, sum. The script calls a pair neutral when both sums rounded to 3 decimals are
equal and counts it in N but not as stereotyped: its metric score = 100·#(more > less, not neutral)/N.

Nothing of the engine is used for the reference numbers: no tokenisation, batching or log1p trick of ours; the
model's own MLM head (``cls``) is applied at the masked position of each variant (the model's forward applies it
at every position; reading one row keeps the test quick).
"""
from __future__ import annotations

import difflib

import numpy as np
import pytest
import torch

from biascore.core.datasets import load_benchmark
from biascore.methods.attribution.scorer import score_benchmark, summarize


def _crows_sentence_scores(model, tokenizer, uncased: bool, sent1: str, sent2: str) -> tuple[float, float]:
    if uncased:
        sent1, sent2 = sent1.lower(), sent2.lower()
    ids1, ids2 = tokenizer.encode(sent1), tokenizer.encode(sent2)
    matcher = difflib.SequenceMatcher(None, [str(x) for x in ids1], [str(x) for x in ids2])
    template1, template2 = [], []
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            template1 += range(a0, a1)
            template2 += range(b0, b1)
    assert ids1[template1[0]] == tokenizer.cls_token_id and ids1[template1[-1]] == tokenizer.sep_token_id
    inner1, inner2 = template1[1:-1], template2[1:-1]
    scores = []
    for ids, positions in ((ids1, inner1), (ids2, inner2)):
        batch = torch.tensor([ids] * len(positions))
        for row, p in enumerate(positions):
            batch[row, p] = tokenizer.mask_token_id
        rows = torch.arange(len(positions))
        with torch.no_grad():  # BertForMaskedLM.forward is cls(bert(x)) per position: apply cls at the masked one
            hidden = model.bert(input_ids=batch).last_hidden_state[rows, torch.tensor(positions)]
            logits = model.cls(hidden).double()
        logp = torch.log_softmax(logits, dim=-1)
        scores.append(float(sum(logp[row, ids[p]] for row, p in enumerate(positions))))
    return scores[0], scores[1]


def test_pll_equals_an_independent_crows_implementation(tiny_mlm, data_dir):
    bm = load_benchmark("crows-en-gso", data_dir)
    ours = score_benchmark(tiny_mlm, bm)
    assert (ours["skipped_reason"] == "").all()
    ref = np.array([_crows_sentence_scores(tiny_mlm.model, tiny_mlm.tokenizer, tiny_mlm.uncased, m, l)
                    for m, l in zip(bm.frame["sent_more"], bm.frame["sent_less"])])
    np.testing.assert_allclose(ours["pll_more"], ref[:, 0], atol=1e-5, rtol=0)
    np.testing.assert_allclose(ours["pll_less"], ref[:, 1], atol=1e-5, rtol=0)
    # the script's metric score (neutral = equal at 3 decimals, in N, not stereotyped) is our PLL score here:
    # no pair of this model is within the 1e-3 tie tolerance (so none is neutral either)
    more, less = np.round(ref[:, 0], 3), np.round(ref[:, 1], 3)
    neutral = more == less
    script_score = 100 * np.sum((more > less) & ~neutral) / len(ref)
    table = summarize(ours, "pll").set_index("bias_type")
    assert table.loc["all", "ties"] == neutral.sum() == 0
    assert table.loc["all", "score"] == pytest.approx(script_score, abs=1e-12)
