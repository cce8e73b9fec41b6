"""Ray's overhead against the local executor on the same small sweep (not a test; results in bench/results/).

The sweep: the tiny test MLM and a seeded random 2-layer GPT-2 × demo (38 pairs) and crows-en-gso (231 pairs)
× attribution + pll = 4 tasks. Each configuration runs ``python -m biascore sweep`` in a fresh process, timed
from outside (interpreter start, imports, Ray start-up and shut-down included), first on an empty cache
(every task computes) and then again on the same cache (every task answered from the cache). Also timed: a
bare ``ray.init(num_cpus=N, include_dashboard=False)`` + ``ray.shutdown()``, and the sum of the tasks' own
seconds from the sweep's status files (the work itself, without start-up).

    OMP_NUM_THREADS=1 python bench/sweep_overhead.py [--repeats 2] [--ray-cpus 2]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.tiny_models import save_random_causal_lm  # noqa: E402

BENCHMARKS = ["demo", "crows-en-gso"]


def timed(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return elapsed


def task_seconds(cache: Path) -> float:
    """Sum of the tasks' own seconds in the newest sweep's status files."""
    folder = sorted((cache / "sweeps").iterdir())[-1]
    return sum(json.loads(p.read_text()).get("seconds", 0.0) for p in (folder / "tasks").glob("*.json"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--ray-cpus", type=int, default=2)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "sweep_overhead.json"))
    args = ap.parse_args()

    data_dir = os.environ.get("BIASCORE_DATA_DIR") or str(REPO.parent / "shared" / "data")
    env = {**os.environ, "BIASCORE_DATA_DIR": data_dir, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    tiny = str(Path(data_dir).parent / "models" / "tiny-trained-bert-mlm")
    work = Path(tempfile.mkdtemp(prefix="sweep-bench-"))
    causal = save_random_causal_lm(work / "causal", tiny)
    base = [sys.executable, "-m", "biascore", "sweep", "--models", tiny, causal, "--benchmarks", *BENCHMARKS,
            "--metrics", "attribution", "pll"]
    executors = {"local": [], "ray": ["--ray", "--ray-cpus", str(args.ray_cpus)]}
    runs: dict[str, list[float]] = {f"{ex} {phase}": [] for ex in executors for phase in ("cold", "cached")}
    work_s: dict[str, list[float]] = {ex: [] for ex in executors}
    ray_bare = []
    init = [sys.executable, "-c", f"import ray; ray.init(num_cpus={args.ray_cpus}, include_dashboard=False); "
                                  "ray.shutdown()"]
    for r in range(args.repeats):
        for ex, extra in executors.items():  # alternate the executors so machine load hits both alike
            cache = work / f"cache-{ex}-{r}"
            runs[f"{ex} cold"].append(timed(base + extra + ["--cache-dir", str(cache)], env))
            work_s[ex].append(task_seconds(cache))
            runs[f"{ex} cached"].append(timed(base + extra + ["--cache-dir", str(cache)], env))
        ray_bare.append(timed(init, env))

    med = {k: statistics.median(v) for k, v in runs.items()}
    result = {
        "sweep": "tiny MLM + random 2-layer GPT-2 × demo, crows-en-gso × attribution, pll (4 tasks)",
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at the end",
        "ray_cpus": args.ray_cpus, "repeats": args.repeats,
        "wall_s": runs, "median_wall_s": med,
        "task_seconds_sum_median": {k: statistics.median(v) for k, v in work_s.items()},
        "bare_ray_init_shutdown_s": ray_bare,
        "ray_over_local_cold": med["ray cold"] / med["local cold"],
        "ray_over_local_cached": med["ray cached"] / med["local cached"],
        "ray_extra_s_cold": med["ray cold"] - med["local cold"],
        "ray_extra_s_cached": med["ray cached"] - med["local cached"],
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
