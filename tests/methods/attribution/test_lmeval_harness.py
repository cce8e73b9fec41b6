"""Our lm-eval-compatible CrowS score against lm-evaluation-harness itself (pinned in requirements.txt), run with
its own ``hf`` model class on causal models on disk; and lm-eval's standard error against ours.

* a seeded random Llama with SmolLM2's tokenizer (BOS <|im_start|> ≠ EOS <|im_end|>, no BOS added: lm-eval's
  prefix differs from the published code's), float32;
* a seeded random GPT-2 with the tiny MLM's WordPiece tokenizer (which adds [CLS] = BOS itself: both conventions
  give [CLS], so the default run already holds the lm-eval score), float32;
* SmolLM2-135M (the converted GGUF folder), float32 on all 231 pairs of crows-en-gso, and float64 on a few.

Tolerances. Per pair |Δll| ≤ 1e-4 (the issue's bound) on the random models in float32 and on SmolLM2 in float64
(measured: 4e-6). In float32 a 30-layer model's summed log-likelihood is reproducible only to a few 1e-4 nats
between any two implementations (measured on SmolLM2 / crows-en-gso: ours vs lm-eval at most 3.3e-4, each vs
float64 up to 6.6e-4), so SmolLM2 float32 is held to 1e-3 per pair — and to the same verdicts, identical
pct_stereotype and likelihood_diff within half the reported precision (5e-5), overall and per bias type.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.inputs.datasets import load_benchmark
from biascore.models.loading import load_model, resolve_source
from biascore.models.handle import ModelHandle
from biascore.methods import get
from biascore.methods.attribution.scorer import summarize
from biascore.stats.standard_error import mean_stderr
from tests.conftest import TINY_MLM
from tests.lmeval_harness import TYPE_TASKS, run_lmeval_crows
from tests.tiny_models import save_random_causal_lm, save_random_llama



@pytest.fixture(scope="module")
def smollm_folder(smollm) -> str:
    folder = resolve_source("smollm2-135m").converted_folder
    assert (folder / "config.json").exists()
    return str(folder)


def _compare(ours: pd.DataFrame, theirs: pd.DataFrame, results: dict, atol: float) -> None:
    """Per pair within ``atol``; the same verdicts; pct_stereotype identical and likelihood_diff within half the
    reported precision (lm-eval prints 4 decimals), overall and per bias type."""
    np.testing.assert_allclose(ours["ll_more"], theirs["ll_more"], atol=atol, rtol=0)
    np.testing.assert_allclose(ours["ll_less"], theirs["ll_less"], atol=atol, rtol=0)
    assert ((ours["ll_more"] > ours["ll_less"]).to_numpy() == (theirs["ll_more"] > theirs["ll_less"]).to_numpy()).all()
    table = summarize(ours, "lmeval").set_index("bias_type")
    for group, task in [("all", "local_all")] + [(t, f"local_{t}") for t in TYPE_TASKS]:
        if task not in results:
            continue
        row, ref = table.loc[group], results[task]
        assert row["pct_stereotype"] == pytest.approx(100 * ref["pct_stereotype"], abs=1e-9)
        assert row["pct_stereotype_stderr"] == pytest.approx(100 * ref["pct_stereotype_stderr"], abs=1e-9)
        assert abs(row["likelihood_diff"] - ref["likelihood_diff"]) < 5e-5
        assert abs(row["likelihood_diff_stderr"] - ref["likelihood_diff_stderr"]) < 5e-5
        assert round(row["pct_stereotype"] / 100, 4) == round(ref["pct_stereotype"], 4)


@pytest.mark.parametrize("arch", ["llama", "gpt2"])
def test_random_causal_models_match_lm_evaluation_harness(arch, smollm_folder, data_dir, tmp_path, processes):
    folder = (save_random_llama(tmp_path / "model", smollm_folder) if arch == "llama"
              else save_random_causal_lm(tmp_path / "model", TINY_MLM, seed=3))
    lm = load_model(folder, device="cpu")
    bm = load_benchmark("crows-en-gso", data_dir)
    if arch == "llama":  # a sentence that begins with the prefix token itself: lm-eval makes it the context
        pairs = pd.concat([bm.frame[["sent_more", "sent_less", "bias_type"]], pd.DataFrame(
            {"sent_more": ["<|im_start|>Women cook."], "sent_less": ["<|im_start|>Men cook."], "bias_type": ["gender"]})])
        pairs.to_csv(tmp_path / "pairs.csv", index=False)
        bm = load_benchmark(str(tmp_path / "pairs.csv"))
    cache, attribution = ResultCache(tmp_path / "cache"), get("attribution")
    ours = runner.run(attribution, lm, bm, prefix="lmeval", cache=cache).frame
    theirs, results = run_lmeval_crows(folder, bm.frame, tmp_path / "lmeval")
    assert int(ours["prefix_token_id"].iloc[0]) == results["prefix_token_id"] == lm.tokenizer.bos_token_id
    _compare(ours, theirs, results, atol=1e-4)
    published = lm.prefix_token("published")
    if arch == "llama":  # SmolLM2's tokenizer: EOS for the published code, BOS for lm-eval — two cache entries
        assert published.text == "<|im_end|>" and ours["prefix_token"].iloc[0] == "<|im_start|>"
        assert runner.selection(attribution, lm, bm).key != runner.selection(attribution, lm, bm, prefix="lmeval").key
    else:  # the WordPiece tokenizer adds [CLS] itself: one token, one cache entry, one set of forward passes
        assert published.text == "[CLS]"
        assert runner.selection(attribution, lm, bm).key == runner.selection(attribution, lm, bm, prefix="lmeval").key
        standin = ModelHandle.standin(lm.name, lm.identity(), "must be answered from the cache")
        default = runner.run(attribution, standin, bm, cache=cache).frame
        pd.testing.assert_series_equal(default["ll_more"], ours["ll_more"])


def test_french_pairs_match_lm_evals_crows_pairs_french(smollm_folder, data_dir, tmp_path, processes):
    """``--metric lmeval`` on the French pairs of Dutch CrowS-Pairs' aligned set equals lm-eval's own
    ``crows_pairs_french`` task logic per pair (a random Llama with SmolLM2's tokenizer; accented text)."""
    folder = save_random_llama(tmp_path / "model", smollm_folder)
    bm = load_benchmark("crows-nl-fr", data_dir).first(40)
    assert (bm.frame.load_issue == "").all() and bm.frame.sent_more.str.contains("[éèàç]").any()
    ours = runner.run(get("attribution"), load_model(folder, device="cpu"), bm, prefix="lmeval",
                      cache=ResultCache(tmp_path / "cache")).frame
    theirs, results = run_lmeval_crows(folder, bm.frame, tmp_path / "lmeval", per_type=False, task="crows_pairs_french")
    _compare(ours, theirs, results, atol=1e-4)


def test_smollm2_matches_lm_evaluation_harness_in_float32(smollm, smollm_folder, data_dir, tmp_path, processes):
    bm = load_benchmark("crows-en-gso", data_dir)
    ours = runner.run(get("attribution"), smollm, bm, prefix="lmeval", cache=ResultCache(tmp_path / "cache")).frame
    theirs, results = run_lmeval_crows(smollm_folder, bm.frame, tmp_path / "lmeval", batch_size=16)
    assert results["prefix_token_id"] == 1 and ours["prefix_token"].iloc[0] == "<|im_start|>"
    _compare(ours, theirs, results, atol=1e-3)
    assert round(100 * results["local_all"]["pct_stereotype"], 2) == 62.34  # the figure of issue 18


def test_smollm2_matches_lm_evaluation_harness_in_float64(smollm_folder, data_dir, tmp_path, processes):
    """Without float32 noise the two definitions agree to our float32 softmax (measured 4e-6)."""
    lm = load_model("smollm2-135m", device="cpu", dtype="fp64")
    bm = load_benchmark("crows-en-gso", data_dir).first(8)
    ours = runner.run(get("attribution"), lm, bm, prefix="lmeval", cache=ResultCache(tmp_path / "cache")).frame
    theirs, results = run_lmeval_crows(smollm_folder, bm.frame, tmp_path / "lmeval", dtype="float64",
                                       per_type=False)
    _compare(ours, theirs, results, atol=1e-4)


def test_mean_stderr_is_lm_evals(tmp_path):
    from lm_eval.api.metrics import mean_stderr as lm_eval_mean_stderr

    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 2, 231).astype(float), rng.exponential(5.0, 72), np.array([1.0, 0.0])):
        assert mean_stderr(values) == pytest.approx(lm_eval_mean_stderr(list(values)), rel=1e-12)
    assert np.isnan(mean_stderr([1.0]))
