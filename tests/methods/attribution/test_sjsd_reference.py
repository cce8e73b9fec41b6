"""The S_JSD paper's numbers (Steinborn et al., Findings of NAACL 2022) against ours under ``--jsd paper``, per pair,
on the paper's own multilingual files.

The reference below is written here from the paper's definitions and the procedure of its published ``main.py``
(github.com/VSteinborn/s_jsd-multilingual-bias, read for reference only, not copied; CI has no network, so it cannot
be fetched and run there): tokenise each sentence with the tokenizer's special tokens; the unmodified tokens are the
``equal`` blocks of ``difflib.SequenceMatcher`` over the two id sequences without their first and last entries
([CLS], [SEP]); mask each in turn; at the masked position take the softmax probability p of the gold token in float32
(the script's arithmetic) and its distance to the one-hot gold distribution
``calc_analytic_jsd`` = sqrt((p·log2 p − (p + 1)·log2(p + 1) + 2) / 2); per pair
S_JSD = mean over tokens of (distance in sent_more − distance in sent_less), B.S_JSD counts the pair when
Σ distance(more) < Σ distance(less), and CPS counts it when Σ log p(more) > Σ log p(less).

Ours, on every language (its first 12 pairs, the tiny trained MLM): S_JSD within 1e-4 (float32 against float64), B's
verdict equal on every pair that is not a tie (|S_JSD| ≤ 1e-6), our PLL verdict equal to CPS on every pair whose two
scores do not round to the same 3 decimals (our PLL score follows the CrowS script, which calls those pairs neutral;
the paper's CPS counts them by the unrounded sums), and a pair the tokenizer reads identically skipped by us where
the paper scores it 0 (docs/scores.md).
"""
from __future__ import annotations

import difflib

import numpy as np
import pytest
import torch

from biascore.inputs.datasets import load_benchmark
from biascore.methods import get
from biascore.runs import runner


def _paper_pair(model, tokenizer, more: str, less: str) -> tuple[float, int, int]:
    """(S_JSD, B.S_JSD 0/1, CPS 0/1) of one pair by the paper's procedure (module docstring)."""
    ids = [tokenizer.encode(s) for s in (more, less)]
    blocks = difflib.SequenceMatcher(None, [str(x) for x in ids[0]], [str(x) for x in ids[1]]).get_opcodes()
    t_more = [i for op, a0, a1, b0, b1 in blocks if op == "equal" for i in range(a0, a1)][1:-1]
    t_less = [i for op, a0, a1, b0, b1 in blocks if op == "equal" for i in range(b0, b1)][1:-1]
    dist, logp = [], []
    for seq, positions in ((ids[0], t_more), (ids[1], t_less)):
        batch = torch.tensor([seq] * len(positions))
        rows = torch.arange(len(positions))
        batch[rows, torch.tensor(positions)] = tokenizer.mask_token_id
        with torch.no_grad():  # BertForMaskedLM is cls(bert(x)) per position: its head applied at the masked one
            logits = model.cls(model.bert(input_ids=batch).last_hidden_state[rows, torch.tensor(positions)])
        gold = torch.tensor([seq[p] for p in positions])
        p = torch.softmax(logits, dim=1)[rows, gold]
        dist.append(torch.sqrt((p * torch.log2(p) - (p + 1) * torch.log2(p + 1) + 2) / 2.0))
        logp.append(torch.log_softmax(logits, dim=1)[rows, gold])
    s_jsd = float(torch.mean(dist[0] - dist[1]))
    return s_jsd, int(float(dist[0].sum()) < float(dist[1].sum())), int(float(logp[0].sum()) > float(logp[1].sum()))


@pytest.mark.parametrize("language", ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"])
def test_sjsd_b_and_cps_equal_the_papers_per_pair(tiny_mlm, data_dir, language):
    """The first 12 pairs of every language (the Indonesian identical pair, ID 29, among them), each pair whose
    sentences fit the tiny MLM's 128 positions (the paper's code does not truncate; ours marks such a pair)."""
    bm = load_benchmark(f"sjsd-gender-{language}", data_dir).first(12)
    ours = runner.run(get("attribution"), tiny_mlm, bm, jsd="paper").frame.set_index("pair_id")
    skipped = bm.frame[bm.frame.load_issue != ""]
    assert list(skipped.source_id) == (["29"] if language == "id" else [])  # skipped with its reason, never a tie
    assert (ours.loc[skipped.pair_id, "verdict"] == "not scored").all()
    fits = [max(len(tiny_mlm.tokenizer.encode(s)) for s in pair) <= tiny_mlm.model.config.max_position_embeddings
            for pair in zip(bm.frame.sent_more, bm.frame.sent_less)]
    scored = bm.frame[(bm.frame.load_issue == "").to_numpy() & np.array(fits)]
    ref = np.array([_paper_pair(tiny_mlm.model, tiny_mlm.tokenizer, m, l)
                    for m, l in zip(scored.sent_more, scored.sent_less)])
    mine = ours.loc[scored.pair_id]
    # a pair the model's tokenizer reads identically (Thai or Chinese as [UNK]s here): the paper's code scores it
    # S_JSD = 0, counted by neither B.S_JSD nor CPS but in N; ours skips it with that reason (docs/scores.md)
    same = mine.skipped_reason.str.startswith("no modified tokens").to_numpy()
    assert (ref[same] == 0).all() and (mine.skipped_reason[~same] == "").all()
    mine, ref = mine[~same], ref[~same]
    np.testing.assert_allclose(mine.sjsd.to_numpy(float), ref[:, 0], atol=1e-4, rtol=0)
    # B = B.S_JSD pair by pair; a tie (|S_JSD| ≤ 1e-6: float32 noise in their sums, e.g. Chinese [UNK]s here) may
    # take either sign in either implementation, and our verdict says "tie"
    tie = mine.verdict.to_numpy() == "tie"
    assert (mine.biased.to_numpy() == ref[:, 1].astype(bool))[~tie].all()  # Chinese: all ties on this English MLM
    decided = mine.pll_verdict.to_numpy() != "tie"
    assert ((mine.pll_verdict.to_numpy() == "biased") == ref[:, 2].astype(bool))[decided].all()  # PLL = CPS
