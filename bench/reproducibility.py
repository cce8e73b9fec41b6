"""Reproducibility of the attribution scores, measured: what is bit-identical and how far the rest moves.

    python bench/reproducibility.py [--models tiny smollm random-mlm random-gpt2 random-llama]
                                    [--benchmarks demo crows-en-gso] [--limit N] [--out bench/results/reproducibility]

For each model × benchmark, the attribution frame (log P(u), b(u), S_JSD and its verdict, the PLL sums and their
verdict) is computed in a reference run — a fresh process with this machine's defaults (its best ATen kernels,
MKL's own choice, torch's default thread count) and the engine's default token budget — and again under
each variant, every variant compared with the reference by
:func:`tests.reproducibility_contract.compare_frames`:

* ``same process, same batches`` — the reference recomputed in its own process (the contract: bit-identical);
* ``cache read-back`` — the frame stored by the runner and read back vs the fresh computation (bit-identical);
* ``another process`` — the reference's environment in a second process;
* batch composition: token budget 1024 and 256 instead of 4096; one pair at a time (as Try a pair scores);
* threads: ``OMP_NUM_THREADS=1`` (the reference has torch's default, one per core; torch caps the variable at the
  number of cores, so more threads than cores are not measured);
* kernels: ``ATEN_CPU_CAPABILITY`` avx2 / default (and avx512 where the CPU has it), ``MKL_ENABLE_INSTRUCTIONS``
  AVX2, numpy without its AVX-512 code paths, and the combinations the test suite re-runs its exactness tests
  under (tests/test_kernel_paths.py).

Each environment is its own subprocess (the variables are read at start-up). Writes <out>.json (every number)
and <out>.md (the tables of docs/reproducibility.md). The random models are the hermetic test models
(tests/tiny_models.py); ``tiny`` needs ../shared (or BIASCORE_SHARED) and crows-en-gso the downloaded data.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))
TINY = SHARED / "models" / "tiny-trained-bert-mlm"

PLANS = {"budget 4096 (default)": 4096, "budget 1024": 1024, "budget 256": 256, "one pair at a time": 0}
REFERENCE_PLAN = "budget 4096 (default)"
#: name -> environment overrides (None: remove the variable). The reference process has none of them.
ENVIRONMENTS: dict[str, dict[str, str | None]] = {
    "reference": {},
    "another process": {},
    "OMP_NUM_THREADS=1": {"OMP_NUM_THREADS": "1"},
    "ATEN_CPU_CAPABILITY=avx512": {"ATEN_CPU_CAPABILITY": "avx512"},
    "ATEN_CPU_CAPABILITY=avx2": {"ATEN_CPU_CAPABILITY": "avx2"},
    "ATEN_CPU_CAPABILITY=default": {"ATEN_CPU_CAPABILITY": "default"},
    "MKL_ENABLE_INSTRUCTIONS=AVX2": {"MKL_ENABLE_INSTRUCTIONS": "AVX2"},
    "NPY_DISABLE_CPU_FEATURES=AVX512*": {"NPY_DISABLE_CPU_FEATURES": "AVX512F AVX512CD AVX512_SKX AVX512_CLX "
                                                                     "AVX512_CNL AVX512_ICL AVX512_SPR"},
}


def _suite_variants() -> dict[str, dict[str, str]]:
    """The environments tests/test_kernel_paths.py re-runs the exactness tests under."""
    from tests.test_kernel_paths import VARIANTS

    return {f"suite run: {name}": env for name, env in VARIANTS.items()}


ENVIRONMENTS.update(_suite_variants())
MODELS = ["tiny", "smollm", "random-mlm", "random-gpt2", "random-llama"]
REUSED: list[str] = []  # worker runs answered from --frames-dir


# ------------------------------------------------------------------------------------------------ worker
def _frame(lm, bm, plan_tokens: int):
    import pandas as pd

    from biascore.models.lm_scoring import BatchPlan
    from biascore.methods.attribution.scorer import attribution_frame, compute_logprobs

    if plan_tokens:
        return attribution_frame(bm, compute_logprobs(lm, bm.frame, plan=BatchPlan(max_tokens=plan_tokens)))
    rows = [attribution_frame(bm, compute_logprobs(lm, bm.frame.iloc[[k]])) for k in range(len(bm.frame))]
    return pd.concat(rows, ignore_index=True)


def worker(model: str, benchmark: str, limit: int | None, out: Path, plans: list[str], checks: bool) -> None:
    """Compute the frame under each plan in this process; with ``checks`` also the same-process repeat and the
    cache read-back of the reference plan. Writes a pickle {label: frame} and the process's kernel facts."""
    import pandas as pd
    import torch

    from biascore.runs import runner
    from biascore.store.cache import ResultCache
    from biascore.inputs.datasets import load_benchmark
    from biascore.models.handle import ModelHandle
    from biascore.models.loading import load_model
    from biascore.methods import get

    lm = load_model(model, device="cpu")
    bm = load_benchmark(benchmark)
    if limit:
        bm = bm.first(limit)
    frames = {}
    t0 = time.perf_counter()
    for label in plans:
        frames[label] = _frame(lm, bm, PLANS[label])
    if checks:
        frames["same process, same batches"] = _frame(lm, bm, PLANS[REFERENCE_PLAN])
        with tempfile.TemporaryDirectory() as tmp:
            cache = ResultCache(tmp)
            fresh = runner.run(get("attribution"), lm, bm, cache=cache).frame
            standin = ModelHandle.standin(lm.name, lm.identity(), "recomputed instead of read back")
            again = runner.run(get("attribution"), standin, bm, cache=cache).frame
        frames["cache: fresh"], frames["cache: read back"] = fresh, again
    facts = {"capability": torch.backends.cpu.get_cpu_capability(), "threads": torch.get_num_threads(),
             "seconds": round(time.perf_counter() - t0, 1)}
    pd.to_pickle({"frames": frames, "facts": facts}, out)


# ------------------------------------------------------------------------------------------------ driver
def _models(names: list[str], folder: Path) -> dict[str, str]:
    from tests.tiny_models import save_random_causal_lm, save_random_llama, save_random_masked_lm

    out = {}
    for name in names:
        if name == "tiny":
            if TINY.exists():
                out[name] = str(TINY)
            else:
                print(f"skipping tiny: {TINY} not found", file=sys.stderr)
        elif name == "smollm":
            out[name] = "smollm2-135m"
        elif name in ("random-mlm", "random-gpt2", "random-llama"):
            make = {"random-mlm": save_random_masked_lm, "random-gpt2": save_random_causal_lm,
                    "random-llama": save_random_llama}[name]
            out[name] = make(folder / name)
        else:  # any model load_model accepts: measure it before relying on the contract's bound for it
            out[name.replace("/", "_")] = name
    return out


def _run_worker(model: str, benchmark: str, limit: int | None, env_over: dict, plans: list[str], checks: bool,
                tmp: Path, tag: str) -> dict:
    import pandas as pd

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    for k, v in env_over.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out = tmp / f"{tag}.pkl"
    if out.exists():  # --frames-dir of an earlier run: compare again without recomputing
        REUSED.append(tag)
        return pd.read_pickle(out)
    cmd = [sys.executable, __file__, "--worker", "--model", model, "--benchmarks", benchmark, "--out", str(out),
           "--plans", *plans] + (["--limit", str(limit)] if limit else []) + (["--checks"] if checks else [])
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {tag} failed:\n{proc.stderr[-3000:]}")
    return pd.read_pickle(out)


def _fmt(x: float) -> str:
    return "0" if x == 0 else f"{x:.1e}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    ap.add_argument("--plans", nargs="*", default=[REFERENCE_PLAN], help=argparse.SUPPRESS)
    ap.add_argument("--checks", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--models", nargs="*", default=MODELS,
                    help="tiny, smollm, random-mlm, random-gpt2, random-llama, or any name load_model accepts")
    ap.add_argument("--benchmarks", nargs="*", default=["demo", "crows-en-gso"])
    ap.add_argument("--limit", type=int, default=None, help="first N pairs of each benchmark")
    ap.add_argument("--environments", nargs="*", default=list(ENVIRONMENTS))
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "reproducibility"))
    ap.add_argument("--frames-dir", help="keep each run's frames here (and reuse those already there)")
    args = ap.parse_args()
    if args.worker:
        worker(args.model, args.benchmarks[0], args.limit, Path(args.out), args.plans, args.checks)
        return

    from tests.reproducibility_contract import LOGP_FLOOR, LOGP_RTOL, compare_frames

    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(args.frames_dir or tmp_s)
        tmp.mkdir(parents=True, exist_ok=True)
        for mname, model in _models(args.models, tmp).items():
            for bench in args.benchmarks:
                ref_run = _run_worker(model, bench, args.limit, {}, list(PLANS), True, tmp, f"{mname}-{bench}-ref")
                ref = ref_run["frames"][REFERENCE_PLAN]
                facts = ref_run["facts"]
                print(f"{mname} × {bench}: {len(ref)} pairs, reference {facts}", flush=True)
                variants = {label: ref_run["frames"][label] for label in PLANS if label != REFERENCE_PLAN}
                variants["same process, same batches"] = ref_run["frames"]["same process, same batches"]
                cache_cmp = compare_frames(ref_run["frames"]["cache: fresh"], ref_run["frames"]["cache: read back"])
                rows.append({"model": mname, "benchmark": bench, "variant": "cache read-back vs fresh",
                             "environment": "reference", **cache_cmp.as_dict()})
                for env_name in args.environments:
                    if env_name == "reference":
                        continue
                    run = _run_worker(model, bench, args.limit, ENVIRONMENTS[env_name], [REFERENCE_PLAN], False,
                                      tmp, f"{mname}-{bench}-{env_name}".replace("/", "_").replace(" ", "_"))
                    variants[env_name] = run["frames"][REFERENCE_PLAN]
                    variants[env_name].attrs["facts"] = run["facts"]
                for label, frame in variants.items():
                    agreement = compare_frames(ref, frame)
                    facts_v = frame.attrs.get("facts", facts)
                    rows.append({"model": mname, "benchmark": bench, "variant": label,
                                 "environment": f"{facts_v['capability']}, {facts_v['threads']} thread(s)",
                                 **agreement.as_dict()})
                    print(f"  {label:45s} identical={agreement.identical} max|Δlogp|={agreement.max_dlogp:.2e} "
                          f"rel={agreement.max_rel_dlogp:.2e} max|Δb|={agreement.max_dbu:.2e} "
                          f"flips={agreement.flips} ok={agreement.within_contract}", flush=True)
    meta = {"machine": platform.processor() or platform.machine(), "cpu": _cpu_name(), "python": sys.version.split()[0],
            "torch": __import__("torch").__version__, "logp_rtol": LOGP_RTOL, "logp_floor": LOGP_FLOOR,
            "seconds": round(time.perf_counter() - started, 1), "worker_runs_reused": len(REUSED),
            "command": "python bench/reproducibility.py " + " ".join(sys.argv[1:])}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    out.with_suffix(".md").write_text(_markdown(meta, rows))
    print(f"wrote {out.with_suffix('.md')} ({meta['seconds']} s)")


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _markdown(meta: dict, rows: list[dict]) -> str:
    lines = [f"# Reproducibility of the attribution scores ({meta['cpu']}, torch {meta['torch']})", "",
             f"`{meta['command']}` — {meta['seconds']} s"
             + (f" ({meta['worker_runs_reused']} worker runs read from the frames of an earlier run)"
                if meta["worker_runs_reused"] else "") + ". Each variant against the reference run "
             "(a fresh process, this machine's defaults, token budget 4096). "
             f"Bound: |Δ log P| ≤ {meta['logp_rtol']:g}·max(|log P|, {meta['logp_floor']:g}); the b(u), S_JSD and "
             "PLL bounds derive from it (tests/reproducibility_contract.py). *rel* = the largest "
             "|Δ log P| / max(|log P|, floor); *ratio* = largest observed deviation / its bound (≤ 1 inside the "
             "contract).", "",
             "| model | benchmark | variant | kernels, threads | pairs | bit-identical | max abs Δlog P | "
             "max rel Δlog P | max abs Δb(u) | max abs ΔS_JSD | ratio log P / b(u) / S_JSD | "
             "S_JSD flips (max abs S_JSD) | PLL flips | within contract |", "|" + "---|" * 14]
    for r in rows:
        flips = f"{r['flips']} ({_fmt(r['max_abs_sjsd_flipped'])})" if r["flips"] else "0"
        ratios = "/".join(f"{r[k]:.2f}" for k in ("logp_ratio", "bu_ratio", "sjsd_ratio"))
        lines.append(f"| {r['model']} | {r['benchmark']} | {r['variant']} | {r['environment']} | {r['pairs']} | "
                     f"{'yes' if r['identical'] else 'no'} | {_fmt(r['max_dlogp'])} | {_fmt(r['max_rel_dlogp'])} | "
                     f"{_fmt(r['max_dbu'])} | {_fmt(r['max_dsjsd'])} | {ratios} | {flips} | {r['pll_flips']} | "
                     f"{'yes' if r['within_contract'] else 'NO'} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
