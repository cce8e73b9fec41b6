"""Prefix-token conventions, ties and the lm-eval-compatible summary: definitions, keys, CLI and bad input."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biascore.cli.main import main
from biascore.runs import runner
from biascore.store.cache import CacheKey
from biascore.inputs.datasets import load_benchmark
from biascore.store.keys import model_parts
from biascore.models.prefix import PrefixError, SpecialTokens, conventions_giving, prefix_token
from biascore.methods.attribution.lmeval import summarize_lmeval
from biascore.methods import get
from biascore.methods.attribution.scorer import score_pair, summarize
from biascore.methods.attribution.ties import LOGLIK_TIE, SJSD_TIE, ties
from tests.tiny_models import save_random_llama

SMOL = SpecialTokens(1, "<|im_start|>", 2, "<|im_end|>", adds_bos=False)
GEMMA = SpecialTokens(2, "<bos>", 1, "<eos>", adds_bos=True)
GPT2 = SpecialTokens(50256, "<|endoftext|>", 50256, "<|endoftext|>", adds_bos=False)
QWEN = SpecialTokens(None, None, 151643, "<|endoftext|>", adds_bos=False)


@pytest.mark.parametrize("specials, published, lmeval", [
    (SMOL, 2, 1), (GEMMA, 2, 2), (GPT2, 50256, 50256), (QWEN, 151643, 151643),
    (SpecialTokens(5, "<s>", None, None, adds_bos=False), 5, 5)])
def test_conventions(specials, published, lmeval):
    assert prefix_token(specials, "published").id == published
    assert prefix_token(specials, "lmeval").id == lmeval
    assert set(conventions_giving(specials, published)) >= {"published"}


def test_conventions_refuse_missing_tokens_in_one_line():
    none = SpecialTokens(None, None, None, None, adds_bos=False)
    for convention in ("published", "lmeval"):
        with pytest.raises(PrefixError, match="neither a BOS nor an EOS") as err:
            prefix_token(none, convention, "m")
        assert "\n" not in str(err.value)
    with pytest.raises(PrefixError, match="no BOS token"):
        prefix_token(QWEN, "bos")
    with pytest.raises(PrefixError, match="unknown prefix convention"):
        prefix_token(SMOL, "first")
    assert prefix_token(SMOL, "eos").text == "<|im_end|>" and prefix_token(SMOL, "bos").text == "<|im_start|>"


def test_masked_keys_carry_no_prefix_and_stay_as_they_were(tiny_mlm, data_dir):
    bm = load_benchmark("demo", data_dir)
    key = runner.selection(get("attribution"), tiny_mlm, bm).key
    before = CacheKey.make("attribution", **model_parts(tiny_mlm), input_kind="pairs", input=bm.name,
                           input_hash=bm.content_hash, n_pairs=len(bm.frame), method_version=1)
    assert key == before and "prefix_token_id" not in key.meta


def test_causal_keys_carry_the_prefix_token(smollm, data_dir):
    bm = load_benchmark("demo", data_dir)
    attribution = get("attribution")
    published, lmeval = (runner.selection(attribution, smollm, bm, prefix=p).key.meta for p in ("published", "lmeval"))
    assert (published["prefix_token_id"], published["prefix_token"]) == (2, "<|im_end|>")
    assert (lmeval["prefix_token_id"], lmeval["prefix_token"]) == (1, "<|im_start|>")
    assert list(published["prefix_conventions"]) == ["published", "eos"]
    assert list(lmeval["prefix_conventions"]) == ["lmeval", "bos"]
    assert runner.selection(attribution, smollm, bm, prefix="eos").key == runner.selection(attribution, smollm, bm).key


def test_whole_sentence_loglikelihood_is_one_plain_forward(smollm):
    """ll = Σ over every token of log P(t | prefix, tokens before t), from one plain forward in float64 softmax."""
    import torch

    more, less = "Women don't know how to drive.", "Men don't know how to drive."
    row = score_pair(smollm, more, less)
    tok = smollm.tokenizer
    for sent, ll in ((more, row["ll_more"]), (less, row["ll_less"])):
        ids = tok(sent, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            lp = torch.log_softmax(smollm.model(input_ids=torch.tensor([[2] + ids])).logits[0].double(), -1)
        assert ll == pytest.approx(sum(float(lp[p, t]) for p, t in enumerate(ids)), abs=1e-4)
    # the shared tokens' log P are a subset of the same passes: PLL ≤ ll (the modified tokens add log P < 0)
    assert row["pll_more"] > row["ll_more"] and row["prefix_token"] == "<|im_end|>"


# --------------------------------------------------------------------------- ties and the lm-eval summary
def test_ties_use_each_scores_tolerance():
    frame = pd.DataFrame({"sjsd": [0.0, SJSD_TIE / 2, -SJSD_TIE / 2, 2 * SJSD_TIE, np.nan],
                          "pll_more": [-5.0, -5.0, -5.0, -5.0, np.nan],
                          "pll_less": [-5.0, -5.0 + LOGLIK_TIE / 2, -5.0 - 2 * LOGLIK_TIE, -4.0, np.nan],
                          "ll_more": [-9.0, -9.0, -8.0, -9.0, np.nan], "ll_less": [-9.0, -9.0005, -9.0, -9.1, np.nan]})
    assert ties(frame, "attribution").tolist() == [True, True, True, False, False]
    assert ties(frame, "pll").tolist() == [True, True, False, False, False]
    assert ties(frame, "lmeval").tolist() == [True, True, False, False, False]


def test_lmeval_summary_by_hand():
    ll_more = np.array([-10.0, -12.0, -8.0, -9.0, -7.0, -20.0])
    ll_less = np.array([-11.0, -11.0, -8.0, -9.5, -6.0, np.nan])  # a tie (counts 0) and a pair without ll
    frame = pd.DataFrame({"ll_more": ll_more, "ll_less": ll_less, "bias_type": ["a", "a", "a", "b", "b", "b"]})
    table = summarize_lmeval(frame).set_index("bias_type")
    acc, diff = np.array([1, 0, 0, 1, 0.0]), np.array([1.0, 1.0, 0.0, 0.5, 1.0])
    assert table.loc["all", "n"] == 5 and table.loc["all", "n_skipped"] == 1 and table.loc["all", "ties"] == 1
    assert table.loc["all", "pct_stereotype"] == pytest.approx(40.0)
    assert table.loc["all", "pct_stereotype_stderr"] == pytest.approx(100 * math.sqrt(0.4 * 0.6 / 4))
    assert table.loc["all", "likelihood_diff"] == pytest.approx(diff.mean())
    assert table.loc["all", "likelihood_diff_stderr"] == pytest.approx(diff.std(ddof=1) / math.sqrt(5))
    assert table.loc["a", "pct_stereotype"] == pytest.approx(100 / 3) and table.loc["b", "n"] == 2
    assert acc.mean() == pytest.approx(0.4)


# --------------------------------------------------------------------------- CLI
def _cli(capsys, *argv) -> tuple[int, str, str]:
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_cli_prints_the_prefix_token_and_every_tie(smollm, tmp_path, capsys):
    """A benchmark where every pair is a tie for B and PLL: the modified word comes last, so the shared tokens
    before it have the same context in both sentences (a random Llama with SmolLM2's tokenizer: quick to load)."""
    from biascore.models.loading import resolve_source

    model = save_random_llama(tmp_path / "llama", resolve_source("smollm2-135m").converted_folder)
    path = tmp_path / "ties.csv"
    pd.DataFrame({"sent_more": ["I like cats", "We saw the women", "They met my mother"],
                  "sent_less": ["I like dogs", "We saw the men", "They met my father"],
                  "bias_type": ["x", "x", "y"]}).to_csv(path, index=False)
    cache = str(tmp_path / "cache")
    rc, out, _ = _cli(capsys, "score", "--model", model, "--benchmark", str(path), "--metric", "pll",
                      "--cache-dir", cache)
    assert rc == 0
    assert "prefix token: '<|im_end|>' (id 2; --prefix published" in out
    table = out[out.index("bias_type"):].splitlines()
    header, row = table[0].split(), table[1].split()
    assert row[:3] == ["all", "3", "0.00"] and row[header.index("ties")] == "3"  # score 0, 3 ties
    assert "ties: 3 pair(s) (the CrowS script's neutral" in out and "Num. neutral: 3 100.0" in out
    rc, out, _ = _cli(capsys, "score", "--model", model, "--benchmark", str(path), "--cache-dir", cache)
    assert "ties: 3 pair(s) (|S_JSD| ≤ 1e-6; B counts only S_JSD < 0" in out
    rc, out, _ = _cli(capsys, "score", "--model", model, "--benchmark", str(path), "--metric", "lmeval",
                      "--cache-dir", cache, "--out", str(tmp_path / "ll.csv"))
    assert rc == 0 and "prefix token: '<|im_start|>' (id 1; --prefix lmeval" in out
    assert "NOT the CrowS paper's PLL" in out and "pct_stereotype" in out
    written = pd.read_csv(tmp_path / "ll.csv")
    assert {"ll_more", "ll_less", "prefix_token_id", "prefix_token"} <= set(written.columns)
    assert (written["prefix_token"] == "<|im_start|>").all()


def test_cli_lmeval_on_a_masked_model_is_one_line_and_computes_nothing(tmp_path, capsys, monkeypatch, hermetic_models):
    from biascore.methods.attribution import scorer

    monkeypatch.setattr(scorer, "compute_logprobs", lambda *a, **k: pytest.fail("no forward pass"))
    cache = tmp_path / "cache"
    rc, out, err = _cli(capsys, "score", "--model", str(hermetic_models / "random-mlm"), "--benchmark", "demo", "--metric", "lmeval",
                        "--cache-dir", str(cache))
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "masked LM: lm-evaluation-harness has no CrowS-Pairs task" in err
    assert not (cache / "attribution").exists()


def test_cli_refuses_a_causal_model_without_bos_and_eos(tmp_path, capsys):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {"<pad>": 0, "<unk>": 1, "the": 2, "man": 3, "woman": 4, "cooks": 5, ".": 6}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token="<pad>", unk_token="<unk>")
    torch.manual_seed(0)
    GPT2LMHeadModel(GPT2Config(vocab_size=7, n_positions=16, n_embd=8, n_layer=1, n_head=2, bos_token_id=None,
                               eos_token_id=None)).save_pretrained(tmp_path / "m")
    tok.save_pretrained(tmp_path / "m")
    capsys.readouterr()  # the saving progress bar
    for metric in ("attribution", "lmeval"):
        rc, out, err = _cli(capsys, "score", "--model", str(tmp_path / "m"), "--benchmark", "demo", "--metric",
                            metric, "--cache-dir", str(tmp_path / "cache"))
        assert rc == 2 and err.count("\n") == 1 and "neither a BOS nor an EOS token" in err, err
    assert not (tmp_path / "cache" / "attribution").exists()


def test_summarize_reports_ties_beside_b_and_pll(smollm):
    row = score_pair(smollm, "I like cats", "I like dogs")
    frame = pd.DataFrame([row])
    assert row["sjsd"] == 0.0 and row["pll_more"] == row["pll_less"] and not row["biased"]
    for metric in ("attribution", "pll"):
        table = summarize(frame, metric).set_index("bias_type")
        assert table.loc["all", "ties"] == 1 and table.loc["all", "score"] == 0.0
    assert summarize(frame, "lmeval").loc[0, "ties"] == 0  # the whole sentences differ
