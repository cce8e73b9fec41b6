"""Quantized and split models against float32: agreement, time and peak memory per variant.

    python bench/quantization_agreement.py [--models smollm2-135m gemma3-270m] [--benchmarks crows-en-gso demo]
                                           [--variants float32 int8 int4 split] [--split-memory cpu=300MiB]
                                           [--limit N] [--out bench/results/quantization]

Each model × variant runs in its own fresh process (so its peak resident memory is its own, ``ru_maxrss``) with an
empty result cache: it loads the model (``float32``; ``int8`` / ``int4`` = ``--quantize``; ``split`` =
``--device-map auto --max-memory <split-memory>``: the layers past the CPU budget are offloaded to disk) and scores
every benchmark with the attribution method, timing the load and each benchmark. The parent compares every
variant's frame with the float32 frame of the same model and benchmark, pair by pair:

* max |Δ b(u)| over all shared tokens, and max |Δ log P(u)|;
* S_JSD verdict flips (pairs whose ``S_JSD < 0`` verdict differs) and PLL verdict flips;
* ΔB = B_variant − B_float32 (percentage points) on the same pairs, with its paired 95 % interval: with ``c``
  pairs biased only in the variant and ``b`` only in float32, ΔB = 100·(c − b)/n and the Wald interval of a
  paired difference of proportions, 100·1.96·√((b + c) − (c − b)²/n)/n (0 ± 0 when nothing flips);
* whether the variant is within the reproducibility contract (docs/reproducibility.md) — a float32 split must be.

Writes <out>.json (every number) and <out>.md (the table quoted in docs/performance.md). A model that is not
available offline (gemma3-270m needs its PyPI packages) is recorded as skipped with the reason.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

VARIANTS = {"float32": {}, "int8": {"quantize": "int8"}, "int4": {"quantize": "int4"}, "split": {"split": True}}


def worker(model: str, variant: str, benchmarks: list[str], limit: int | None, split_memory: str,
           out: Path) -> None:
    """One model × variant in this (fresh) process: load, score each benchmark, write frames and timings."""
    import torch

    from biascore.store.cache import ResultCache
    from biascore.models.handle import ModelHandle
    from biascore.models.placement import Placement
    from biascore.runs import runner
    from biascore.methods import get

    opts = VARIANTS[variant]
    placement = Placement.make("auto", split_memory) if opts.get("split") else None
    handle = ModelHandle(model, placement=placement, quantize=opts.get("quantize"))
    t0 = time.perf_counter()
    lm = handle.load()
    info = {"model": model, "variant": variant, "load_s": time.perf_counter() - t0, "threads": torch.get_num_threads(),
            "identity": lm.identity().__dict__ | {"specials": None}, "placement": lm.extra.get("placement"),
            "benchmarks": {}}
    cache = ResultCache(out / "cache")
    for name in benchmarks:
        t0 = time.perf_counter()
        frame = runner.run(get("attribution"), handle, name, limit=limit, cache=cache).frame
        info["benchmarks"][name] = {"score_s": time.perf_counter() - t0, "pairs": len(frame)}
        frame.to_parquet(out / f"{name}.parquet")
    info["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (out / "info.json").write_text(json.dumps(info, default=str))


def paired_delta_b(ref, var) -> dict:
    """ΔB (percentage points) of two verdict vectors on the same pairs and its paired 95 % Wald interval."""
    import numpy as np

    a, v = np.asarray(ref, bool), np.asarray(var, bool)
    n = len(a)
    b, c = int((a & ~v).sum()), int((~a & v).sum())
    delta = 100.0 * (c - b) / n
    half = 100.0 * 1.96 * np.sqrt(max((b + c) - (c - b) ** 2 / n, 0.0)) / n
    return {"B_ref": 100.0 * a.mean(), "B": 100.0 * v.mean(), "delta_B": delta, "ci": [delta - half, delta + half],
            "only_ref_biased": b, "only_variant_biased": c}


def compare(ref_frame, frame) -> dict:
    import numpy as np

    from tests.reproducibility_contract import compare_frames

    agreement = compare_frames(ref_frame, frame)
    scored = ref_frame.sjsd.notna() & frame.sjsd.notna()
    dlp = [np.abs(np.asarray(x, float) - np.asarray(y, float)).max() for col in ("logp_more", "logp_less")
           for x, y in zip(ref_frame[col][scored], frame[col][scored]) if len(x)]
    out = {"pairs": int(scored.sum()), "max_dbu": agreement.max_dbu, "max_dlogp": float(max(dlp or [0.0])),
           "median_pair_max_dlogp": float(np.median(dlp)) if dlp else 0.0,
           "flips": agreement.flips, "pll_flips": agreement.pll_flips,
           "within_contract": agreement.within_contract, "identical": agreement.identical}
    return out | paired_delta_b(ref_frame.biased[scored], frame.biased[scored])


def available(model: str) -> str:
    """"" when ``model`` can be loaded offline here, else why not."""
    from biascore.models.loading import ModelLoadError, resolve_source

    try:
        resolve_source(model)
    except ModelLoadError as exc:
        return str(exc).split(". Tried")[0]
    return ""


def markdown(report: dict) -> str:
    lines = [f"Measured {report['date']} on {report['machine']} (torch {report['torch']}, "
             f"{report['threads']} threads; a shared 2-core VM, so times are indicative).", "",
             "| model | benchmark | variant | pairs | max abs Δb(u) | max abs Δlog P | S_JSD flips | PLL flips | "
             "B | ΔB [95 % CI] | within contract | load s | score s | peak RSS MiB |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in report["rows"]:
        ci = row["ci"]
        lines.append(f"| {row['model']} | {row['benchmark']} | {row['variant']} | {row['pairs']} | "
                     f"{row['max_dbu']:.2e} | {row['max_dlogp']:.2e} | {row['flips']} | {row['pll_flips']} | "
                     f"{row['B']:.1f} | {row['delta_B']:+.1f} [{ci[0]:+.1f}, {ci[1]:+.1f}] | "
                     f"{'yes' if row['within_contract'] else 'no'} | {row['load_s']:.1f} | {row['score_s']:.1f} | "
                     f"{row['peak_rss_mib']:.0f} |")
    for model, why in report["skipped"].items():
        lines.append(f"\n{model}: not measured — {why}")
    for model, over in report["split_overhead"].items():
        lines.append(f"\nSplit-model overhead, {model} ({over['placement']}): scoring time ×{over['score_ratio']:.2f} "
                     f"vs float32 on one device, peak RSS {over['rss_split']:.0f} vs {over['rss_float32']:.0f} MiB.")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", default=["smollm2-135m", "gemma3-270m"])
    p.add_argument("--benchmarks", nargs="+", default=["crows-en-gso", "demo"])
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    p.add_argument("--split-memory", default="cpu=300MiB")
    p.add_argument("--limit", type=int, default=None)
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "quantization"))
    p.add_argument("--worker", nargs=2, metavar=("MODEL", "VARIANT"), help=argparse.SUPPRESS)
    p.add_argument("--dir", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(*args.worker, args.benchmarks, args.limit, args.split_memory, Path(args.dir))
        return
    import pandas as pd
    import torch

    report = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()} {os.cpu_count()} cores",
              "torch": torch.__version__, "threads": torch.get_num_threads(), "rows": [], "skipped": {},
              "split_overhead": {}, "split_memory": args.split_memory}
    variants = ["float32"] + [v for v in args.variants if v != "float32"]
    with tempfile.TemporaryDirectory() as tmp:
        for model in args.models:
            why = available(model)
            if why:
                report["skipped"][model] = why
                print(f"{model}: skipped ({why})", flush=True)
                continue
            infos = {}
            for variant in variants:
                d = Path(tmp) / f"{model}-{variant}"
                d.mkdir()
                env = {**os.environ, "BIASCORE_CACHE_DIR": str(d / "engine-cache")}
                models = REPO / "cache" / "models"  # the converted GGUF copies, shared (conversion is slow)
                (d / "engine-cache").mkdir()
                (d / "engine-cache" / "models").symlink_to(models, target_is_directory=True)
                cmd = [sys.executable, __file__, "--worker", model, variant, "--dir", str(d), "--split-memory",
                       args.split_memory, "--benchmarks", *args.benchmarks]
                if args.limit:
                    cmd += ["--limit", str(args.limit)]
                subprocess.run(cmd, check=True, env=env)
                infos[variant] = json.loads((d / "info.json").read_text())
                print(f"{model} {variant}: {infos[variant]['benchmarks']}", flush=True)
            for bench in args.benchmarks:
                ref = pd.read_parquet(Path(tmp) / f"{model}-float32" / f"{bench}.parquet")
                for variant in variants:
                    frame = pd.read_parquet(Path(tmp) / f"{model}-{variant}" / f"{bench}.parquet")
                    info = infos[variant]
                    report["rows"].append({"model": model, "benchmark": bench, "variant": variant,
                                           **compare(ref, frame), "load_s": info["load_s"],
                                           "score_s": info["benchmarks"][bench]["score_s"],
                                           "peak_rss_mib": info["peak_rss_mib"], "placement": info["placement"]})
            if "split" in infos:
                f32, split = infos["float32"], infos["split"]
                total = lambda i: sum(b["score_s"] for b in i["benchmarks"].values())  # noqa: E731
                report["split_overhead"][model] = {
                    "placement": json.dumps((split["placement"] or {}).get("modules_per_device")),
                    "score_ratio": total(split) / total(f32), "rss_split": split["peak_rss_mib"],
                    "rss_float32": f32["peak_rss_mib"]}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))


if __name__ == "__main__":
    main()
