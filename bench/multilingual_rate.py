"""Benchmark: the engine's rate per token on the S_JSD paper's 10 languages against English (issue 42, item 3).

    python bench/multilingual_rate.py [--model smollm2-135m] [--pairs 212] [--out bench/results/multilingual_rate.json]

One process, one model load. For each language of ``sjsd-gender`` (English first and again last), the engine's own
scoring (:func:`biascore.methods.attribution.scorer.compute_logprobs`, no cache) scores the language's pairs, the
work counted by bench/work_stats.py: input tokens including padding (``tokens``) and the sentences' own tokens
(``real_tokens``). A 2048² float32 GEMM is timed right before each language in the same process, so each rate is
also given per GEMM GFLOP/s (``tokens_per_s / gemm_gflops``): the machine's speed at that moment divided out, which
a busy machine moves for both. The verdict compares each language's normalised rate per real token with English's
(mean of its two runs): within 10 %, or not.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

LANGS = ["en", "ar", "de", "fi", "fr", "id", "ko", "th", "vi", "zh", "en"]


def main() -> int:
    from bench_attribution import matmul_gflops
    from work_stats import counted

    from biascore.inputs.datasets import load_benchmark
    from biascore.methods.attribution.scorer import compute_logprobs
    from biascore.models.loading import load_model

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--pairs", type=int, default=212, help="pairs per language (default all 212)")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "multilingual_rate.json"))
    args = p.parse_args()
    lm = load_model(args.model)
    compute_logprobs(lm, load_benchmark("sjsd-gender-en").first(8).frame)  # warm-up
    rows = []
    for lang in LANGS:
        frame = load_benchmark(f"sjsd-gender-{lang}").first(args.pairs).frame
        gemm = matmul_gflops()
        with counted() as work:
            start = time.perf_counter()
            out = compute_logprobs(lm, frame)
            seconds = time.perf_counter() - start
        real = int(sum(len(t) for col in ("more_tokens", "less_tokens") for t in out[col] if t is not None))
        rows.append({"language": lang, "pairs": len(frame), "seconds": round(seconds, 3), "tokens": work["tokens"],
                     "real_tokens": real, "gemm_gflops": round(gemm, 2),
                     "real_tokens_per_s": round(real / seconds, 1),
                     "per_gemm_gflop": round(real / seconds / gemm, 4)})
        print(json.dumps(rows[-1]), flush=True)
    english = sum(r["per_gemm_gflop"] for r in rows if r["language"] == "en") / 2
    for r in rows:
        r["ratio_to_english"] = round(r["per_gemm_gflop"] / english, 3)
        r["within_10_percent"] = r["ratio_to_english"] >= 0.9
    report = {"model": args.model, "pairs_per_language": args.pairs, "torch_threads": __import__("torch").get_num_threads(),
              "rows": rows, "all_within_10_percent": all(r["within_10_percent"] for r in rows)}
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(f"slowest ratio to English: {min(r['ratio_to_english'] for r in rows):.3f}; wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
