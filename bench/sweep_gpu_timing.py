"""Sweep task times on one GPU: random weights of real shapes × the four public pair benchmarks (not a test).

Three models (bert-base-shaped MLM, gpt2-shaped and Llama-3.2-1B-shaped causal LMs, the bert-base-uncased
vocabulary for all three) are built on the GPU from configs, saved, and swept with the local executor over
crows-en (1,508 pairs), crows-en-gso (231), crows-tl (204) and winoqueer-tl (12,089) × attribution + pll,
first on an empty cache, then again on the same cache. Per-task seconds (model load included in the first
task of each model) go to ``OUT/sweep_gpu.json``; they are the basis of the cluster cost estimate in docs/sweeps.md.
Random weights cost the same as trained ones; no hub download is included.

    python bench/sweep_gpu_timing.py --data-dir ../shared/data --tokenizer ../shared/models/tiny-trained-bert-mlm \
        --out bench/results/sweep_gpu_h100.json fp32
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BENCHMARKS = ["crows-en", "crows-en-gso", "crows-tl", "winoqueer-tl"]


def build_models(tokenizer_dir: str, work: Path) -> list[str]:
    import torch
    from transformers import (AutoTokenizer, BertConfig, BertForMaskedLM, GPT2Config, GPT2LMHeadModel, LlamaConfig,
                              LlamaForCausalLM)

    tok = AutoTokenizer.from_pretrained(tokenizer_dir)
    tok.bos_token, tok.eos_token = "[CLS]", "[SEP]"
    v, bos, eos = len(tok), tok.bos_token_id, tok.eos_token_id
    shapes = {
        "bert-base-shape": lambda: BertForMaskedLM(BertConfig(vocab_size=v)),
        "gpt2-shape": lambda: GPT2LMHeadModel(GPT2Config(vocab_size=v, bos_token_id=bos, eos_token_id=eos)),
        "llama-1b-shape": lambda: LlamaForCausalLM(LlamaConfig(
            vocab_size=v, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
            num_key_value_heads=8, bos_token_id=bos, eos_token_id=eos, pad_token_id=0)),
    }
    folders = []
    for name, build in shapes.items():
        torch.manual_seed(0)
        with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
            model = build()
        model.save_pretrained(work / name)
        tok.save_pretrained(work / name)
        del model
        folders.append(str(work / name))
    return folders


def main() -> None:
    import torch

    from biascore.sweep.local import run_local
    from biascore.sweep.spec import build_spec

    ap = argparse.ArgumentParser()
    ap.add_argument("dtypes", nargs="+", help="dtypes to sweep with (fp32, bf16, ...)")
    ap.add_argument("--data-dir", required=True)
    ap.add_argument("--tokenizer", required=True, help="a folder with the bert-base-uncased WordPiece tokenizer")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="sweep-gpu-"))
    models = build_models(args.tokenizer, work)
    res = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
           "torch": torch.__version__, "benchmarks": BENCHMARKS, "runs": {}}
    for dtype in args.dtypes:
        spec = build_spec(None, models=models, benchmarks=BENCHMARKS, metrics=["attribution", "pll"], dtype=dtype)
        cache = str(work / f"cache-{dtype}")
        for phase in ("cold", "cached"):
            t0 = time.perf_counter()
            results = run_local(spec.tasks(), cache_dir=cache, data_dir=args.data_dir, show_progress=False)
            res["runs"][f"{dtype} {phase}"] = {
                "wall_s": time.perf_counter() - t0,
                "tasks": [{"task": f"{Path(r.spec.name).name} × {r.input}", "ok": r.ok, "error": r.error,
                           "seconds": r.seconds, "model_loaded": r.model_loaded} for r in results]}
            Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
            print(dtype, phase, round(res["runs"][f"{dtype} {phase}"]["wall_s"], 1), flush=True)


if __name__ == "__main__":
    main()
