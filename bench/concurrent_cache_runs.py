"""The issue's cache-corruption scenario, end to end (a reproduction, not a timing benchmark).

    python bench/concurrent_cache_runs.py [--model PATH] [--benchmark crows-en] [--shard-pairs 64]
                                          [--kill-after 6] [--out bench/results/concurrent_cache_runs.json]

Two processes score one model × benchmark into one cache directory at once; both are SIGKILLed once
``--kill-after`` shards have been computed in all; then two processes resume it at once. Reported: shards
computed by each process in each phase, shards on disk after the kill, rows and distinct pairs in the stored
result, and B of the resumed result against a clean single run (same shard size). Before the file locks
and range-named shards this gave 2,276 rows for crows-en's 1,508 pairs and B 50.26 instead of 49.73.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))
TINY = SHARED / "models" / "tiny-trained-bert-mlm"


def worker(model: str, cache_dir: str, benchmark: str, shard_pairs: int) -> None:
    """One scoring process: prints SHARD after each shard it computes and DONE with the result's size."""
    from biascore.runs import runner
    from biascore.store.cache import ResultCache
    from biascore.models.loading import load_model
    from biascore.methods import get
    from biascore.methods.attribution import scorer

    lm = load_model(model)
    compute = scorer.compute_logprobs

    def counted(lm, chunk, **kw):
        out = compute(lm, chunk, **kw)
        print("SHARD", int(chunk.pair_id.iloc[0]), flush=True)
        return out

    scorer.compute_logprobs = counted
    frame = runner.run(get("attribution"), lm, benchmark, cache=ResultCache(cache_dir), shard_size=shard_pairs).frame
    print("DONE", len(frame), frame.pair_id.nunique(), flush=True)


def _start(args, cache_dir: Path, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, __file__, "--worker", "--model", args.model, "--cache-dir", str(cache_dir),
           "--benchmark", args.benchmark, "--shard-pairs", str(args.shard_pairs)]
    return subprocess.Popen(cmd, cwd=REPO, stdout=open(log, "w"), stderr=subprocess.STDOUT)


def _shards(log: Path) -> int:
    return sum(line.startswith("SHARD") for line in log.read_text().splitlines()) if log.exists() else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(TINY))
    ap.add_argument("--benchmark", default="crows-en")
    ap.add_argument("--shard-pairs", type=int, default=64)
    ap.add_argument("--kill-after", type=int, default=6)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "concurrent_cache_runs.json"))
    args = ap.parse_args()
    if args.worker:
        worker(args.model, args.cache_dir, args.benchmark, args.shard_pairs)
        return

    import pyarrow.parquet as pq

    from biascore.store.cache import ResultCache
    from biascore.models.loading import load_model
    from biascore.runs import runner
    from biascore.methods import get
    from biascore.methods.attribution.scorer import summarize

    work = Path(tempfile.mkdtemp(prefix="concurrent_cache_"))
    cache_dir = work / "cache"
    first = [_start(args, cache_dir, work / f"run{i}.log") for i in range(2)]
    while sum(_shards(work / f"run{i}.log") for i in range(2)) < args.kill_after:
        if all(p.poll() is not None for p in first):
            break
        time.sleep(0.2)
    for p in first:
        p.send_signal(signal.SIGKILL)
        p.wait()
    on_disk = len(list(cache_dir.glob("attribution/*.shards/*.parquet")))
    second = [_start(args, cache_dir, work / f"resume{i}.log") for i in range(2)]
    codes = [p.wait() for p in second]
    (stored,) = list(cache_dir.glob("attribution/*.parquet"))
    raw = pq.read_table(stored).to_pandas()
    lm = load_model(args.model)
    resumed = runner.run(get("attribution"), lm, args.benchmark, cache=ResultCache(cache_dir)).frame
    clean = runner.run(get("attribution"), lm, args.benchmark, cache=ResultCache(work / "clean"),
                       shard_size=args.shard_pairs).frame
    report = {
        "model": args.model, "benchmark": args.benchmark, "shard_pairs": args.shard_pairs,
        "killed_phase_shards_per_process": [_shards(work / f"run{i}.log") for i in range(2)],
        "shards_on_disk_after_kill": on_disk,
        "resume_phase_shards_per_process": [_shards(work / f"resume{i}.log") for i in range(2)],
        "resume_exit_codes": codes, "stored_rows": len(raw), "stored_distinct_pairs": int(raw.pair_id.nunique()),
        "B_resumed": float(summarize(resumed).score[0]), "B_clean": float(summarize(clean).score[0]),
    }
    print(json.dumps(report, indent=1))
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
