"""Our CLI against lm-evaluation-harness itself on SmolLM2-135M (float32, CPU): the figures of docs/scores.md.

Runs, each in a fresh cache:

* ``python -m biascore score --model smollm2-135m --benchmark crows-en-gso --metric M --prefix P --out …`` for
  (M, P) in (pll, published), (pll, lmeval), (lmeval, lmeval), (lmeval, published) — the CLI exactly as a user
  runs it (the two metrics of one prefix come from one cached run);
* lm-eval 0.4.13's own ``crows_pairs_english`` settings through its ``hf`` model class on the converted SmolLM2
  folder (tests/lmeval_harness.py), overall and per bias type;

and writes bench/results/lmeval_compare.md: per-pair agreement of ll with lm-eval, pct_stereotype beside the PLL
score, verdicts that differ, what the prefix alone moves, the Spearman correlation of the two pair differences.

    BIASCORE_DATA_DIR=../shared/data python bench/lmeval_compare.py
"""
from __future__ import annotations

import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tests.lmeval_harness import run_lmeval_crows  # noqa: E402

BENCH = "crows-en-gso"


def cli(work: Path, metric: str, prefix: str) -> tuple[pd.DataFrame, str, float]:
    out = work / f"{metric}-{prefix}.csv"
    cmd = [sys.executable, "-m", "biascore", "score", "--model", "smollm2-135m", "--benchmark", BENCH,
           "--metric", metric, "--prefix", prefix, "--device", "cpu", "--cache-dir", str(work / "cache"),
           "--out", str(out)]
    t0 = time.perf_counter()
    run = subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=REPO)
    return pd.read_csv(out), " ".join(["python"] + cmd[1:-2]) + "\n" + run.stdout, time.perf_counter() - t0


def main() -> None:
    from biascore.inputs.datasets import load_benchmark
    from biascore.models.loading import load_model, resolve_source

    load_model("smollm2-135m", device="cpu")  # converts the GGUF once, if it is not yet
    folder = resolve_source("smollm2-135m").converted_folder
    lines = ["# Our CLI vs lm-evaluation-harness on SmolLM2-135M (float32, CPU), crows-en-gso", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs; load average at start "
             f"{os.getloadavg()[0]:.2f}. Command: `python bench/lmeval_compare.py`.", ""]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs, outputs = {}, []
        for metric, prefix in [("pll", "published"), ("pll", "lmeval"), ("lmeval", "lmeval"),
                               ("lmeval", "published")]:
            runs[metric, prefix], text, secs = cli(work, metric, prefix)
            outputs.append(f"$ {text.strip()}\n({secs:.1f} s wall, model load and interpreter start included)")
        bm = load_benchmark(BENCH)
        t0 = time.perf_counter()
        theirs, results = run_lmeval_crows(folder, bm.frame, work / "lmeval", batch_size=16)
        lm_secs = time.perf_counter() - t0
    ours = runs["lmeval", "lmeval"]
    dll = np.abs(np.concatenate([ours.ll_more - theirs.ll_more, ours.ll_less - theirs.ll_less]))
    v_lmeval = (theirs.ll_more > theirs.ll_less).to_numpy()
    v_ours = (ours.ll_more > ours.ll_less).to_numpy()
    pll = runs["pll", "published"]
    v_pll = (pll.pll_more > pll.pll_less).to_numpy()
    v_pll_bos = (runs["pll", "lmeval"].pll_more > runs["pll", "lmeval"].pll_less).to_numpy()
    ll_eos = runs["lmeval", "published"]
    v_ll_eos = (ll_eos.ll_more > ll_eos.ll_less).to_numpy()
    rho = pd.Series(pll.pll_more - pll.pll_less).rank().corr(pd.Series(theirs.ll_more - theirs.ll_less).rank())
    exact_ties = int(((pll.pll_more - pll.pll_less) == 0).sum())
    lm_all = results["local_all"]
    lines += ["## Figures", "",
              "| what | value |", "|---|---|",
              f"| lm-eval pct_stereotype (lm-eval itself), all / gender / sexual orientation | "
              f"{100 * lm_all['pct_stereotype']:.2f} / {100 * results['local_gender']['pct_stereotype']:.2f} / "
              f"{100 * results['local_sexual-orientation']['pct_stereotype']:.2f} % |",
              f"| lm-eval likelihood_diff (lm-eval itself) | {lm_all['likelihood_diff']:.4f} ± "
              f"{lm_all['likelihood_diff_stderr']:.4f} |",
              f"| ours `--metric lmeval`: pct_stereotype | {100 * v_ours.mean():.2f} % |",
              f"| ours vs lm-eval per sentence: max / median |Δll| | {dll.max():.2e} / {np.median(dll):.2e} nats |",
              f"| ours vs lm-eval: verdicts that differ | {int((v_ours != v_lmeval).sum())} of {len(v_ours)} |",
              f"| ours `--metric pll` (published prefix <\\|im_end\\|>) | {100 * v_pll.mean():.2f} % |",
              f"| PLL verdicts vs lm-eval verdicts that differ | {int((v_pll != v_lmeval).sum())} of {len(v_pll)} |",
              f"| prefix alone, whole-sentence score (EOS vs BOS): verdicts moved | {int((v_ll_eos != v_ours).sum())} |",
              f"| prefix alone, PLL score (EOS vs BOS): verdicts moved | {int((v_pll != v_pll_bos).sum())} |",
              f"| PLL pairs exactly tied (published prefix) | {exact_ties} |",
              f"| Spearman ρ of PLL(more)−PLL(less) with ll_more−ll_less | {rho:.2f} |",
              f"| lm-eval run (HFLM, batch 16) | {lm_secs:.1f} s |", "",
              "## CLI output", "", "```", *outputs, "```", ""]
    path = REPO / "bench" / "results" / "lmeval_compare.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
