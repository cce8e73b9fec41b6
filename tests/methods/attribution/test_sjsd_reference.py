"""The S_JSD paper's numbers (Steinborn et al., Findings of NAACL 2022) against ours under ``--jsd paper``, per pair,
on the paper's own multilingual files.

The reference is the output of the paper's published ``main.py`` itself (github.com/VSteinborn/s_jsd-multilingual-bias,
commit b1030204, run unchanged with only its model name pointed at the tiny trained MLM; CI has no network, so the
numbers are a fixture: tests/fixtures/data/sjsd_paper/, how it was made in tests/fixtures/README.md): per pair its
``sentence_s_jsd_score`` (S_JSD), ``jsd_binary_score`` (B.S_JSD) and ``cps_score`` (CPS), on the first 12 pairs of
every language. Their code is not in the repository.

Ours, with the same model on the same pairs: S_JSD within 1e-4 (their float32 against our float64), B's verdict equal
on every pair that is not a tie (|S_JSD| ≤ 1e-6: there their float32 sums may take either sign, even the sign opposite
to their own S_JSD), our PLL verdict equal to CPS on every pair whose two scores do not round to the same 3 decimals
(our PLL score follows the CrowS script, which calls those pairs neutral; the paper's CPS counts them by the unrounded
sums), and a pair the tokenizer reads identically skipped by us where the paper scores it 0 (docs/scores.md).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biascore.inputs.datasets import load_benchmark
from biascore.methods import get
from biascore.runs import runner
from tests.conftest import FIXTURE_DATA

_FIXTURES = FIXTURE_DATA / "sjsd_paper"
PAPER = {"sjsd-gender": pd.read_csv(_FIXTURES / "tiny_trained_bert_mlm_first12.csv", dtype={"ID": str}),
         "crows-nl": pd.read_csv(_FIXTURES / "tiny_trained_bert_mlm_crows_nl_first12.csv", dtype={"ID": str})}
SETS = [("sjsd-gender", lang) for lang in ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]] + [
    ("crows-nl", lang) for lang in ["nl", "en", "fr"]]


@pytest.mark.parametrize("aligned, language", SETS)
def test_sjsd_b_and_cps_equal_the_papers_per_pair(tiny_mlm, data_dir, aligned, language):
    """The first 12 pairs of every language of both aligned sets (the Indonesian identical pair, ID 29, among them;
    Dutch CrowS-Pairs' nl/en/fr given to the paper's script in its own columns, as tests/fixtures/README.md says)."""
    bm = load_benchmark(f"{aligned}-{language}", data_dir).first(12)
    ref = PAPER[aligned][PAPER[aligned].language == language]
    assert list(ref.ID) == list(bm.frame.source_id)  # the fixture holds exactly these pairs, in this order
    ours = runner.run(get("attribution"), tiny_mlm, bm, jsd="paper").frame.set_index("pair_id").loc[bm.frame.pair_id]
    skipped = (bm.frame.load_issue != "").to_numpy()
    assert list(bm.frame.source_id[skipped]) == (["29"] if (aligned, language) == ("sjsd-gender", "id") else [])  # skipped with its reason
    assert (ours.verdict[skipped] == "not scored").all()
    # a pair with no modified token (identical sentences, or Thai and Chinese read as [UNK]s here): the paper's code
    # scores it S_JSD = 0, counted by neither B.S_JSD nor CPS but in N; ours skips it with that reason
    same = skipped | ours.skipped_reason.str.startswith("no modified tokens").to_numpy()
    zero = ref[["sentence_s_jsd_score", "jsd_binary_score", "cps_score"]].to_numpy()[same]
    assert (zero == 0).all() and (ours.skipped_reason[~same] == "").all()
    mine, ref = ours[~same], ref[~same]
    assert len(mine) >= (0 if language == "th" else 10)  # Thai: every pair is [UNK]s for this English vocabulary
    np.testing.assert_allclose(mine.sjsd.to_numpy(float), ref.sentence_s_jsd_score, atol=1e-4, rtol=0)
    tie = mine.verdict.to_numpy() == "tie"  # Chinese: all ties on this English MLM
    assert (mine.biased.to_numpy(bool) == ref.jsd_binary_score.to_numpy(bool))[~tie].all()
    decided = mine.pll_verdict.to_numpy() != "tie"
    assert ((mine.pll_verdict.to_numpy() == "biased") == ref.cps_score.to_numpy(bool))[decided].all()  # PLL = CPS
