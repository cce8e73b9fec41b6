"""Every scorer on CUDA equals CPU float32 (and the published reference), with the default numerics.

Run on a machine with a CUDA GPU: ``python -m pytest -m gpu tests/test_gpu.py``. Skipped where torch sees no
CUDA device, so CI on CPU stays green. The default dtype on CUDA is float32 with TF32 off
(biascore.models.precision); these tests fail if either changes:

* b(u) and the PLL sums of the tiny trained MLM on crows-en-gso within 1e-5 of the published reference and of
  CPU float32, and no verdict flipped; the same for a seeded random causal (Llama-shaped) model against CPU;
* attention-head scores, LABDet sentence features and SEAT effect sizes within 1e-4 of CPU float32.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from biascore.models.loading import load_model

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run with -m gpu there)")]


@pytest.fixture(scope="module")
def tiny_pair():
    from tests.conftest import TINY_MLM
    return load_model(str(TINY_MLM), device="cpu"), load_model(str(TINY_MLM), device="cuda")


@pytest.fixture(scope="module")
def causal_pair(tmp_path_factory):
    """A seeded random Llama-shaped causal LM (4 layers, GQA) with the tiny MLM's word-piece vocabulary."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from tests.conftest import TINY_MLM

    folder = tmp_path_factory.mktemp("random-causal")
    tok = AutoTokenizer.from_pretrained(TINY_MLM)
    tok.eos_token = "[SEP]"
    torch.manual_seed(11)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=256, intermediate_size=688, num_hidden_layers=4,
                      num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=256,
                      eos_token_id=tok.eos_token_id, bos_token_id=tok.cls_token_id, pad_token_id=tok.pad_token_id,
                      initializer_range=0.2)  # wide logits: tokens with P near 1 as well as near 0
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return load_model(str(folder), device="cpu"), load_model(str(folder), device="cuda")


def test_cuda_default_is_exact_float32(tiny_pair):
    _, gpu = tiny_pair
    assert next(gpu.model.parameters()).dtype == torch.float32 and gpu.identity().dtype == "float32"
    assert not gpu.identity().approximate
    assert torch.backends.cuda.matmul.allow_tf32 is False and torch.backends.cudnn.allow_tf32 is False
    assert torch.get_float32_matmul_precision() == "highest"
    assert not torch.backends.cuda.cudnn_sdp_enabled()  # see precision.cuda_attention_without_cudnn


def _scores(lm, benchmark, data_dir, tmp_path, limit=None):
    from biascore.store.cache import ResultCache
    from biascore.runs import runner
    from biascore.methods import get

    return runner.run(get("attribution"), lm, benchmark, cache=ResultCache(tmp_path / lm.device.type),
                      data_dir=data_dir, limit=limit).frame


def _compare_runs(a: pd.DataFrame, b: pd.DataFrame, tol: float) -> None:
    assert a["pair_id"].tolist() == b["pair_id"].tolist()
    assert [list(t) for t in a["tokens"]] == [list(t) for t in b["tokens"]]
    diff = max((float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a["bu"], b["bu"]) if len(x)),
               default=0.0)
    assert diff <= tol, f"max |Δb(u)| = {diff:.2e}"
    np.testing.assert_allclose(a["pll_more"], b["pll_more"], atol=tol * 10, rtol=1e-6)
    np.testing.assert_allclose(a["pll_less"], b["pll_less"], atol=tol * 10, rtol=1e-6)
    assert (a["biased"] == b["biased"]).all(), "verdict flipped"
    assert ((a["pll_more"] > a["pll_less"]) == (b["pll_more"] > b["pll_less"])).all(), "PLL verdict flipped"


def test_tiny_mlm_on_cuda_matches_published_reference_and_cpu(tiny_pair, data_dir, tmp_path):
    from tests.methods.attribution.test_attribution import _parse_scores

    cpu, gpu = tiny_pair
    ours = _scores(gpu, "crows-en-gso", data_dir, tmp_path)
    ref = pd.read_csv(data_dir / "reference" / "tiny_mlm_scores.csv", index_col=0)
    worst, flips, compared = 0.0, 0, 0
    for i, r in ref.iterrows():
        o = ours.iloc[i]
        if not o["sent_more"].isascii():  # the reference read this file with unicode_escape (pair 199)
            continue
        worst = max(worst, float(np.max(np.abs(np.asarray(o["bu"]) - _parse_scores(r["bias_attr_sc"])))))
        flips += abs(r["sjsd"]) > 1e-6 and bool(o["biased"]) != bool(r["biased"])
        compared += 1
    assert compared == 230 and worst <= 1e-5 and flips == 0, (worst, flips)
    _compare_runs(ours, _scores(cpu, "crows-en-gso", data_dir, tmp_path), 1e-5)


def test_random_causal_model_on_cuda_matches_cpu(causal_pair, data_dir, tmp_path):
    cpu, gpu = causal_pair
    for bench in ("crows-en-gso", "crows-tl"):
        _compare_runs(_scores(gpu, bench, data_dir, tmp_path, limit=300),
                      _scores(cpu, bench, data_dir, tmp_path, limit=300), 1e-5)


def test_head_scores_on_cuda_match_cpu(tiny_pair, data_dir):
    from biascore.inputs.kinds import SEAT
    from biascore.methods.heads.scorer import head_score_matrix

    test = SEAT.load(SEAT.default, data_dir)  # the heads method's default SEAT test
    (b_cpu, es_cpu), (b_gpu, es_gpu) = (head_score_matrix(lm, test) for lm in tiny_pair)
    assert np.abs(b_cpu).max() > 0
    np.testing.assert_allclose(b_gpu, b_cpu, atol=1e-4, rtol=0)
    assert es_gpu == pytest.approx(es_cpu, abs=1e-4)


def test_labdet_features_on_cuda_match_cpu(tiny_pair, data_dir):
    from biascore.models.embeddings import embed_sentences
    from biascore.methods.labdet.scorer import load_labdet

    sentences = load_labdet("en", data_dir).train["sentence"].tolist()[:400]
    cpu, gpu = (np.asarray(embed_sentences(lm, sentences), dtype=np.float64) for lm in tiny_pair)
    np.testing.assert_allclose(gpu, cpu, atol=1e-4, rtol=0)


@pytest.mark.parametrize("test_name", ["sent-weat6", "weat6b"])
def test_seat_effect_sizes_on_cuda_match_cpu(tiny_pair, test_name, tmp_path):
    from biascore.store.cache import ResultCache
    from biascore.runs import runner
    from biascore.methods import get

    rows = [runner.run(get("seat"), lm, test_name, n_samples=2000,
                       cache=ResultCache(tmp_path / lm.device.type)).frame.iloc[0] for lm in tiny_pair]
    assert rows[1]["effect_size"] == pytest.approx(rows[0]["effect_size"], abs=1e-4)


def test_reduced_precision_is_labelled_approximate(tiny_pair):
    _, gpu = tiny_pair
    fast = dataclasses.replace(gpu, extra={**gpu.extra, "dtype": "bfloat16"})
    assert fast.identity().approximate
