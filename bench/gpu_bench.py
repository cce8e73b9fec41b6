"""GPU benchmark: device rates, exactness per dtype, end-to-end times, FLOP/s against the measured rates.

    python bench/gpu_bench.py --sections rates exactness timing naive big --out-dir $OUT

Needs a CUDA GPU (run through the device tool; results are committed under bench/results/). Models of real
shapes get random weights built on the GPU from configs (cost is the same as real weights): a bert-base MLM,
a SmolLM2-135M-shaped and a Qwen2-7B-shaped decoder, all with the tiny MLM's word-piece tokenizer. Exactness
uses the tiny *trained* MLM (a realistic spread of P(u), up to P ≈ 1) against the published reference.

Sections (each writes its part of gpu_bench.json and continues if another fails):

* ``rates``: 8192³ matmul TFLOP/s in fp32 (TF32 off), TF32, bf16 (CUDA events, median of 10 after warm-up).
* ``exactness``: max |Δb(u)| and verdict flips vs the published reference (tiny MLM) and vs CPU fp32 (random
  SmolLM2-shaped causal LM) for CUDA fp32, TF32, bf16 weights and bf16 autocast; per-token fast-vs-fp32
  log-probability errors saved to errors.npz. (The fast-exact mode it also measured was removed: slower than
  fp32 on the GPU, docs/performance.md.)
* ``timing``: Filipino CrowS-Pairs + WinoQueer (12,089 pairs) with the bert-base shape, end to end
  (tokenise, forward, result frame) through the runner (``runner.run`` of the attribution method) with a fresh
  cache, in each mode.
* ``naive``: the published-style loop (bench/naive_reference.py) vs the engine on crows-en-gso, same GPU.
* ``big``: the Qwen2-7B shape in bf16 on the same Filipino workload.

FLOPs are counted from the work done (padding included), as bench/bench_attribution.py does.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))
TINY = SHARED / "models" / "tiny-trained-bert-mlm"
DATA = Path(os.environ.get("BIASCORE_DATA_DIR", SHARED / "data"))
FILIPINO = ["crows-tl", "winoqueer-tl"]

import numpy as np  # noqa: E402
import torch  # noqa: E402

RESULTS: dict = {}


def sync() -> None:
    torch.cuda.synchronize()


def timed(fn):
    sync()
    t = time.perf_counter()
    out = fn()
    sync()
    return out, time.perf_counter() - t


# ----------------------------------------------------------------------------- rates
def matmul_rate(dtype: torch.dtype, tf32: bool, n: int = 8192, reps: int = 10) -> float:
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        a = [torch.randn(n, n, device="cuda", dtype=dtype) for _ in range(3)]
        b = torch.randn(n, n, device="cuda", dtype=dtype)
        for x in a:
            x @ b
        times = []
        for k in range(reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            a[k % 3] @ b
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e) / 1e3)
        return 2 * n ** 3 / float(np.median(times)) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def section_rates() -> dict:
    from biascore.models.precision import exact_matmuls

    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
           "fp32_tflops": matmul_rate(torch.float32, False), "tf32_tflops": matmul_rate(torch.float32, True),
           "bf16_tflops": matmul_rate(torch.bfloat16, False)}
    exact_matmuls()
    return out


# ----------------------------------------------------------------------------- models
def tokenizer():
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(TINY)
    tok.eos_token = "[SEP]"  # a start token for causal scoring
    return tok


def wrap(model, tok, name: str, kind: str, dtype: torch.dtype):
    from biascore.models.loading import LanguageModel, tokenizer_is_uncased
    from biascore.models.precision import dtype_name

    model.eval()
    dev = next(model.parameters()).device
    return LanguageModel(name=name, model=model, tokenizer=tok, kind=kind, uncased=tokenizer_is_uncased(tok),
                         fingerprint=f"random-{name}", device=dev, source="random weights",
                         extra={"dtype": dtype_name(dtype)})


def build(cls, cfg, dtype: torch.dtype, device: str, seed: int = 0):
    torch.manual_seed(seed)
    prev = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            return cls(cfg).eval()
    finally:
        torch.set_default_dtype(prev)


def bert_base(dtype=torch.float32, device="cuda"):
    from transformers import BertConfig, BertForMaskedLM
    return wrap(build(BertForMaskedLM, BertConfig(), dtype, device), tokenizer(), "bert-base-shape", "masked", dtype)


def smollm_shape(dtype=torch.float32, device="cuda"):
    from transformers import LlamaConfig, LlamaForCausalLM
    tok = tokenizer()
    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                      num_attention_heads=9, num_key_value_heads=3, max_position_embeddings=8192,
                      tie_word_embeddings=True, rope_theta=100000.0, eos_token_id=tok.eos_token_id)
    return wrap(build(LlamaForCausalLM, cfg, dtype, device), tok, "smollm2-135m-shape", "causal", dtype)


def qwen2_7b_shape(dtype=torch.bfloat16, device="cuda"):
    from transformers import Qwen2Config, Qwen2ForCausalLM
    tok = tokenizer()
    cfg = Qwen2Config(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28,
                      num_attention_heads=28, num_key_value_heads=4, max_position_embeddings=32768,
                      rope_theta=1000000.0, tie_word_embeddings=False, eos_token_id=tok.eos_token_id)
    return wrap(build(Qwen2ForCausalLM, cfg, dtype, device), tok, "qwen2-7b-shape", "causal", dtype)


def flops(lm, stats: dict) -> float:
    from bench_attribution import flops as count
    return count(lm, stats["tokens"], stats["attention_tt"], stats["head_rows"])


# ----------------------------------------------------------------------------- exactness
def _bu_error(a, b) -> tuple[float, int, int]:
    """max |Δb(u)|, S_JSD verdict flips and PLL verdict flips between two result frames (same pairs)."""
    worst = max((float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a["bu"], b["bu"]) if len(x)),
                default=0.0)
    flips = int((a["biased"] != b["biased"]).sum())
    pll = int(((a["pll_more"] > a["pll_less"]) != (b["pll_more"] > b["pll_less"])).sum())
    return worst, flips, pll


def run_frame(lm, bench: str, cache_root: Path, mode_ctx=None, **kw):
    from biascore.store.cache import ResultCache
    from biascore.runs import runner
    from biascore.methods import get
    ctx = mode_ctx() if mode_ctx else _null()
    with ctx:
        return runner.run(get("attribution"), lm, bench, cache=ResultCache(cache_root / f"{lm.name}-{time.time_ns()}"),
                          data_dir=DATA, **kw).frame


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


class tf32_on:
    def __enter__(self):
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    def __exit__(self, *a):
        from biascore.models.precision import exact_matmuls
        exact_matmuls()


def autocast_bf16():
    return torch.autocast("cuda", dtype=torch.bfloat16)


def autocast_fp16():
    return torch.autocast("cuda", dtype=torch.float16)


def _flat_logp(frame) -> np.ndarray:
    return np.concatenate([np.concatenate([np.asarray(m, float), np.asarray(l, float)])
                           for m, l in zip(frame["logp_more"], frame["logp_less"])])


def section_exactness(tmp: Path, out_dir: Path) -> dict:
    import pandas as pd

    from biascore.models.loading import load_model
    from tests.methods.attribution.test_attribution import _parse_scores

    ref = pd.read_csv(DATA / "reference" / "tiny_mlm_scores.csv", index_col=0)
    keep = [i for i in range(len(ref)) if i != 199]  # pair 199: the reference garbled its text
    ref_bu = [np.asarray(_parse_scores(ref.iloc[i]["bias_attr_sc"])) for i in keep]
    ref_biased = ref["biased"].astype(bool).to_numpy()[keep]
    out, errors = {}, {}
    cpu = load_model(str(TINY), device="cpu")
    base = run_frame(cpu, "crows-en-gso", tmp)
    errors["tiny_fp32_cpu"] = _flat_logp(base)
    variants = {"cuda fp32": (torch.float32, None, "exact"), "cuda fp32 + TF32": (torch.float32, tf32_on, "exact"),
                "cuda bf16 weights": (torch.bfloat16, None, "exact"),
                "cuda bf16 autocast": (torch.float32, autocast_bf16, "exact"),
                "cuda fp16 autocast": (torch.float32, autocast_fp16)}
    for label, (dtype, ctx) in variants.items():
        lm = load_model(str(TINY), device="cuda", dtype="bf16" if dtype == torch.bfloat16 else "fp32")
        frame = run_frame(lm, "crows-en-gso", tmp, ctx)
        sub = frame.iloc[keep]
        d_ref = max(float(np.max(np.abs(np.asarray(o) - r))) for o, r in zip(sub["bu"], ref_bu))
        flips_ref = int((sub["biased"].to_numpy() != ref_biased).sum())
        d_cpu, flips_cpu, pll_cpu = _bu_error(frame, base)
        out[f"tiny MLM, crows-en-gso, {label}"] = {
            "vs": "published reference (230 pairs)", "max_abs_dbu": d_ref, "flips": flips_ref, "n": len(keep),
            "max_abs_dbu_vs_cpu": d_cpu, "flips_vs_cpu": flips_cpu, "pll_flips_vs_cpu": pll_cpu}
        errors[f"tiny_{label.replace(' ', '_').replace('+', '')}"] = _flat_logp(frame)
        print(label, out[f"tiny MLM, crows-en-gso, {label}"], flush=True)
    # seeded random SmolLM2-shaped causal model: CUDA variants vs the same weights on the CPU
    cpu_lm = smollm_shape(torch.float32, "cpu")
    gpu_lm = wrap(copy.deepcopy(cpu_lm.model).cuda(), cpu_lm.tokenizer, cpu_lm.name, "causal", torch.float32)
    base = run_frame(cpu_lm, "crows-en-gso", tmp)
    errors["smollm_fp32_cpu"] = _flat_logp(base)
    gpu_bf16 = wrap(copy.deepcopy(cpu_lm.model).to("cuda", torch.bfloat16), cpu_lm.tokenizer, cpu_lm.name, "causal",
                    torch.bfloat16)
    for label, lm, ctx in [("cuda fp32", gpu_lm, None), ("cuda fp32 + TF32", gpu_lm, tf32_on),
                           ("cuda bf16 weights", gpu_bf16, None), ("cuda bf16 autocast", gpu_lm, autocast_bf16),
                           ("cuda fp16 autocast", gpu_lm, autocast_fp16)]:
        frame = run_frame(lm, "crows-en-gso", tmp, ctx)
        d, flips, pll = _bu_error(frame, base)
        out[f"random SmolLM2-135M shape, crows-en-gso, {label}"] = {
            "vs": "same weights on CPU fp32", "max_abs_dbu": d, "flips": flips, "pll_flips": pll, "n": len(frame)}
        errors[f"smollm_{label.replace(' ', '_').replace('+', '')}"] = _flat_logp(frame)
        print(label, out[f"random SmolLM2-135M shape, crows-en-gso, {label}"], flush=True)
    np.savez_compressed(out_dir / "errors.npz", **errors)
    return out


# ----------------------------------------------------------------------------- timing
def end_to_end(lm, tmp: Path, benches=FILIPINO, mode_ctx=None, **kw) -> dict:
    """The attribution method through the runner on each benchmark with a fresh cache: wall time, and its parts
    measured separately."""
    from biascore.inputs.datasets import load_benchmark
    from biascore.methods.attribution.frame import attribution_frame
    from biascore.methods.attribution.scorer import _tokenize_rows
    from work_stats import counted

    total, frames = 0.0, {}
    with counted() as stats:
        for bench in benches:
            frame, secs = timed(lambda: run_frame(lm, bench, tmp, mode_ctx, **kw))
            frames[bench], total = frame, total + secs
    parts = {}
    for bench in benches:  # the CPU parts, timed again on their own
        bm = load_benchmark(bench, DATA)
        _, parts[f"tokenize {bench}"] = timed(lambda: _tokenize_rows(lm, bm.frame)[:2])
        logp = frames[bench][["pair_id", "tokens", "more_tokens", "less_tokens", "more_spans", "less_spans",
                              "more_u", "less_u", "logp_more", "logp_less", "truncated", "skipped_reason"]]
        _, parts[f"frame {bench}"] = timed(lambda: attribution_frame(bm, logp))
    work = flops(lm, stats)
    res = {"seconds": total, "pairs": int(sum(len(f) for f in frames.values())), "tflop": work / 1e12,
           "tflops_per_s": work / total / 1e12, "parts": parts, "stats": stats, "_frames": frames}
    return res


def section_timing(tmp: Path, rates: dict) -> dict:
    out = {}
    lm = bert_base(torch.float32)
    run_frame(lm, "crows-en-gso", tmp, limit=64)  # warm-up: kernels, allocator
    exact = end_to_end(lm, tmp)
    out["bert-base shape, fp32 exact (default)"] = exact
    exact["forward_only_winoqueer"] = forward_only(lm, "winoqueer-tl")
    exact["forward_only_winoqueer"]["share_of_fp32_rate"] = (exact["forward_only_winoqueer"]["tflops_per_s"]
                                                             / rates.get("fp32_tflops", float("nan")))
    del lm
    torch.cuda.empty_cache()
    lm16 = bert_base(torch.bfloat16)
    out["bert-base shape, bf16 weights (approximate)"] = end_to_end(lm16, tmp)
    ref = exact.pop("_frames")
    for label, res in out.items():
        frames = res.pop("_frames", None)
        if frames is not None:
            res["vs_fp32"] = {b: dict(zip(["max_abs_dbu", "flips", "pll_flips"], _bu_error(frames[b], ref[b])))
                              for b in FILIPINO}
        res["share_of_fp32_rate"] = res["tflops_per_s"] / rates.get("fp32_tflops", float("nan"))
        print(label, {k: v for k, v in res.items() if k != "stats"}, flush=True)
    return out


def section_naive(tmp: Path) -> dict:
    from biascore.inputs.datasets import load_benchmark
    from naive_reference import naive_pair_bu

    lm = bert_base(torch.float32)
    bm = load_benchmark("crows-en-gso", DATA)
    run_frame(lm, "crows-en-gso", tmp, limit=64)
    engine, t_engine = timed(lambda: run_frame(lm, "crows-en-gso", tmp))
    with torch.no_grad():
        naive_pair_bu(lm, bm.frame.iloc[0].sent_more, bm.frame.iloc[0].sent_less)  # warm-up
        rows = list(bm.frame.itertuples())
        naive, t_naive = timed(lambda: [naive_pair_bu(lm, r.sent_more, r.sent_less) for r in rows])
    diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(naive, engine["bu"]) if len(a))
    return {"pairs": len(rows), "naive_seconds": t_naive, "engine_seconds": t_engine, "speedup": t_naive / t_engine,
            "max_abs_dbu_naive_vs_engine": diff}


def forward_only(lm, bench: str) -> dict:
    """The forward passes alone (tokenised beforehand, no cache, no result frame): seconds and TFLOP/s. The
    engine's own passes: a causal LM's whole sentences (b(u), PLL and lm-eval's ll at once), a masked LM's masks."""
    from biascore.models import lm_scoring
    from biascore.inputs.datasets import load_benchmark
    from biascore.methods.attribution.scorer import _causal_whole_sentences, _masked_logprobs, _tokenize_rows

    from work_stats import counted

    pts, _, rows = _tokenize_rows(lm, load_benchmark(bench, DATA).frame)
    plan = lm_scoring.BatchPlan.for_model(lm)
    budget = plan.max_tokens
    with counted() as stats:
        if lm.kind == "causal":
            start = lm.prefix_token().id
            _, secs = timed(lambda: _causal_whole_sentences(lm, pts, rows, plan, None, start))
        else:
            _, secs = timed(lambda: _masked_logprobs(lm, pts, plan, None))
    work = flops(lm, dict(stats))
    return {"seconds": secs, "tflop": work / 1e12, "tflops_per_s": work / secs / 1e12, "token_budget": budget,
            "stats": dict(stats)}


def profile_top(lm, bench: str, out_dir: Path, pairs: int = 512) -> None:
    from torch.profiler import ProfilerActivity, profile

    from biascore.inputs.datasets import load_benchmark
    from biascore.methods.attribution.scorer import compute_logprobs

    frame = load_benchmark(bench, DATA).frame.head(pairs)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        compute_logprobs(lm, frame)
        sync()
    table = prof.key_averages().table(sort_by="cuda_time_total", row_limit=18, max_name_column_width=60)
    (out_dir / f"profile_{lm.name}.txt").write_text(table)
    print(table[:3000], flush=True)


def section_big(tmp: Path, rates: dict, out_dir: Path) -> dict:
    lm, t_build = timed(lambda: qwen2_7b_shape(torch.bfloat16))
    run_frame(lm, "crows-en-gso", tmp, limit=32)
    res = end_to_end(lm, tmp)
    res.pop("_frames")
    res["build_seconds"] = t_build
    res["share_of_bf16_rate"] = res["tflops_per_s"] / rates.get("bf16_tflops", float("nan"))
    res["forward_only_winoqueer"] = forward_only(lm, "winoqueer-tl")
    res["forward_only_winoqueer"]["share_of_bf16_rate"] = (res["forward_only_winoqueer"]["tflops_per_s"]
                                                           / rates.get("bf16_tflops", float("nan")))
    torch.backends.cuda.enable_cudnn_sdp(False)  # the cuDNN attention kernel plans every new shape on the CPU
    try:
        res["forward_only_winoqueer_cudnn_sdpa_off"] = forward_only(lm, "winoqueer-tl")
    finally:
        torch.backends.cuda.enable_cudnn_sdp(True)
    print("7B", {k: v for k, v in res.items() if k != "stats"}, flush=True)
    profile_top(lm, "winoqueer-tl", out_dir)
    return {"qwen2-7b shape, bf16 weights (approximate)": res}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sections", nargs="+", default=["rates", "exactness", "timing", "naive", "big"])
    ap.add_argument("--out-dir", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("BIASCORE_DATA_DIR", str(DATA))
    from biascore.models.precision import exact_matmuls
    exact_matmuls()
    rates: dict = {}
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        for name in args.sections:
            t0 = time.perf_counter()
            try:
                if name == "rates":
                    rates = RESULTS["rates"] = section_rates()
                elif name == "exactness":
                    RESULTS["exactness"] = section_exactness(tmp, out_dir)
                elif name == "timing":
                    RESULTS["timing"] = section_timing(tmp, rates)
                elif name == "naive":
                    RESULTS["naive"] = section_naive(tmp)
                elif name == "big":
                    RESULTS["big"] = section_big(tmp, rates, out_dir)
            except Exception:  # noqa: BLE001 - report and go on with the next section
                RESULTS[f"{name}_error"] = traceback.format_exc()
                print(traceback.format_exc(), flush=True)
            print(f"== {name}: {time.perf_counter() - t0:.1f} s", flush=True)
            (out_dir / "gpu_bench.json").write_text(json.dumps(RESULTS, indent=1, default=float))
    print(json.dumps(RESULTS, indent=1, default=float)[-6000:])


if __name__ == "__main__":
    main()
