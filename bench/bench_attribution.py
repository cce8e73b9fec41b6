"""Benchmark: naive published-style b(u) vs the biascore engine, same inputs, one run.

    python bench/bench_attribution.py [--workloads tiny smollm bertbase] [--pairs N] [--out bench/results/attribution.md]

Each (workload, implementation) runs in its own subprocess so that peak memory (ru_maxrss) is its own.
The matrix-multiply rate of this machine is measured in the same run (fp32 2048×2048, torch threads as
configured), and FLOPs are counted from the work each implementation actually performs (padding
included): 2·(linear weights of the encoder/decoder)·tokens + 4·d_model·layers·Σ B·T² (attention
scores and values) + 2·(LM-head weights)·rows-through-the-head.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))
TINY = SHARED / "models" / "tiny-trained-bert-mlm"


def matmul_gflops(n: int = 2048, reps: int = 8) -> float:
    import torch

    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    t = time.perf_counter()
    for _ in range(reps):
        a @ b
    return 2 * n ** 3 * reps / (time.perf_counter() - t) / 1e9


def _linear_params(module) -> int:
    import torch
    from transformers.pytorch_utils import Conv1D

    return sum(m.weight.numel() for m in module.modules() if isinstance(m, (torch.nn.Linear, Conv1D)))


def model_for(workload: str, tmp: Path):
    from biascore.models.loading import load_model

    if workload == "tiny":
        return load_model(str(TINY))
    if workload == "smollm":
        return load_model("smollm2-135m")
    if workload == "bertbase":  # bert-base shape, random weights (cost the same as real ones)
        import torch
        from transformers import AutoTokenizer, BertConfig, BertForMaskedLM

        folder = tmp / "bertbase"
        if not (folder / "config.json").exists():
            torch.manual_seed(0)
            BertForMaskedLM(BertConfig()).save_pretrained(folder)
            AutoTokenizer.from_pretrained(TINY).save_pretrained(folder)
        return load_model(str(folder))
    raise ValueError(workload)


def flops(lm, tokens: int, attention_tt: int, head_rows: int) -> float:
    cfg = lm.config
    d = getattr(cfg, "hidden_size", None) or cfg.n_embd
    layers = getattr(cfg, "num_hidden_layers", None) or cfg.n_layer
    base = lm.model.base_model
    body = _linear_params(base)
    head = _linear_params(lm.model) - body
    return 2 * body * tokens + 4 * d * layers * attention_tt + 2 * head * head_rows


def run_one(workload: str, impl: str, pairs: int, tmp: Path) -> dict:
    """Runs inside the subprocess: time one implementation on the first ``pairs`` pairs of crows-en-gso."""
    import numpy as np
    import torch

    from biascore.inputs.datasets import load_benchmark
    from biascore.methods.attribution.scorer import attribution_frame, compute_logprobs

    sys.path.insert(0, str(REPO / "bench"))
    from naive_reference import naive_forward_shapes, naive_pair_bu
    from work_stats import counted

    lm = model_for(workload, tmp)
    bm = load_benchmark("crows-en-gso", SHARED / "data")
    frame = bm.frame.head(pairs)
    t0 = time.perf_counter()
    if impl == "naive":
        bus = [naive_pair_bu(lm, r.sent_more, r.sent_less) for r in frame.itertuples()]
        elapsed = time.perf_counter() - t0
        lengths = [n for r in frame.itertuples() for n in naive_forward_shapes(lm, r.sent_more, r.sent_less)]
        work = flops(lm, sum(lengths), sum(n * n for n in lengths), sum(lengths))
    else:
        with counted() as s:
            logp = compute_logprobs(lm, frame)
        elapsed = time.perf_counter() - t0
        bus = [list(b) for b in attribution_frame(bm.__class__(bm.name, frame, bm.language, bm.description, bm.path),
                                                  logp)["bu"]]
        work = flops(lm, s["tokens"], s["attention_tt"], s["head_rows"])
    return {"workload": workload, "impl": impl, "pairs": len(frame), "seconds": elapsed, "flops": work,
            "gflops_per_s": work / elapsed / 1e9, "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "bu": bus, "threads": torch.get_num_threads()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workloads", nargs="+", default=["tiny", "smollm", "bertbase"])
    ap.add_argument("--pairs", type=int, default=231)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "attribution.md"))
    ap.add_argument("--child", nargs=3, metavar=("WORKLOAD", "IMPL", "TMP"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        res = run_one(args.child[0], args.child[1], args.pairs, Path(args.child[2]))
        print("RESULT " + json.dumps(res))
        return
    import numpy as np

    rate_before = matmul_gflops()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for w in args.workloads:
            res = {}
            for impl in ("naive", "biascore"):
                out = subprocess.run([sys.executable, __file__, "--pairs", str(args.pairs), "--child", w, impl, tmp],
                                     capture_output=True, text=True, check=True)
                line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
                res[impl] = json.loads(line[7:])
                print(f"{w:9s} {impl:9s} {res[impl]['seconds']:8.1f} s  {res[impl]['gflops_per_s']:7.1f} GFLOP/s  "
                      f"peak RSS {res[impl]['peak_rss_mib']:.0f} MiB", flush=True)
            diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) if len(a) else 0.0
                       for a, b in zip(res["naive"]["bu"], res["biascore"]["bu"]))
            rows.append((w, res, diff))
    rate_after = matmul_gflops()
    rate = (rate_before + rate_after) / 2
    lines = [f"# b(u) benchmark: naive published-style code vs biascore ({args.pairs} pairs of crows-en-gso)", "",
             f"fp32 matmul rate measured in the same run: {rate_before:.0f} GFLOP/s before, {rate_after:.0f} after "
             f"(mean {rate:.0f}); torch threads {rows[0][1]['biascore']['threads'] if rows else '?'}", "",
             "| workload | naive s | biascore s | speed-up | biascore TFLOP | biascore GFLOP/s | % of matmul rate | "
             "peak RSS naive / biascore MiB | max abs Δb(u) |", "|---|---|---|---|---|---|---|---|---|"]
    for w, res, diff in rows:
        n, b = res["naive"], res["biascore"]
        lines.append(f"| {w} | {n['seconds']:.1f} | {b['seconds']:.1f} | {n['seconds'] / b['seconds']:.1f}× | "
                     f"{b['flops'] / 1e12:.2f} | {b['gflops_per_s']:.0f} | {100 * b['gflops_per_s'] / rate:.0f}% | "
                     f"{n['peak_rss_mib']:.0f} / {b['peak_rss_mib']:.0f} | {diff:.1e} |")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
