"""Review store under concurrent reviewers, migration of a large version-0 database, agreement on a full benchmark.

1. N separate Python processes (N = 1, 2, 4, 8) each save M reviews into one new database at the same time
   (the first saves race to create it): total saves per second, per-save latency p50/p95, and reviews lost
   (expected − stored; must be 0).
2. A version-0 database (one verdict per review, the schema up to commit 4004f54) with R reviews: time to read it
   as it is, time of the first save (which migrates it), rows kept.
3. Agreement (Fleiss, 3 reviewers) and the corrected benchmark for crows-tl-sized input (204 pairs).

Not a test: numbers depend on the machine and its load.

    python bench/bench_review_store.py [--saves 200] [--legacy-rows 50000]   # writes bench/results/review_store.json
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from biascore.review.agreement import agreement  # noqa: E402
from biascore.review.corrections import corrected_frame, final_decisions  # noqa: E402
from biascore.review.store import ADJUDICATION_COLUMNS, LEGACY_VERDICTS, STATUSES, V0_COLUMNS, ReviewStore  # noqa: E402

WRITER = """
import json, sys, time
from biascore.review.store import ReviewStore, STATUSES
db, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s, took = ReviewStore(db), []
for i in range(n):
    t0 = time.perf_counter()
    s.save('crows-tl', i, name, STATUSES[i % 3], comment=f'{name} {i}')
    took.append(time.perf_counter() - t0)
print(json.dumps(took))
"""


def concurrent_saves(n_procs: int, saves: int, folder: Path) -> dict:
    db = folder / f"writers{n_procs}.sqlite"
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), f"R{i}", str(saves)], cwd=REPO,
                              stdout=subprocess.PIPE, text=True) for i in range(n_procs)]
    latencies = []
    for p in procs:
        out, _ = p.communicate(timeout=600)
        assert p.returncode == 0
        latencies += json.loads(out)
    wall = time.perf_counter() - t0
    stored = len(ReviewStore(db).reviews())
    lat = np.array(latencies) * 1000
    return {"processes": n_procs, "saves_each": saves, "stored": stored, "lost": n_procs * saves - stored,
            "wall_s": round(wall, 2), "saves_per_s": round(n_procs * saves / wall, 1),
            "save_ms_p50": round(float(np.percentile(lat, 50)), 2),
            "save_ms_p95": round(float(np.percentile(lat, 95)), 2)}


def legacy_migration(rows: int, folder: Path) -> dict:
    db = folder / "legacy.sqlite"
    verdicts = list(LEGACY_VERDICTS)
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE reviews (benchmark TEXT NOT NULL, pair_id INTEGER NOT NULL, reviewer TEXT NOT NULL, "
                    "verdict TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', updated_at TEXT NOT NULL, "
                    "PRIMARY KEY (benchmark, pair_id, reviewer))")
        con.executemany(f"INSERT INTO reviews ({', '.join(V0_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
                        [("crows-tl", i % 204, f"R{i // 204}", verdicts[i % len(verdicts)], f"note {i}",
                          "2025-01-01T00:00:00+00:00") for i in range(rows)])
    con.close()
    store = ReviewStore(db)
    t0 = time.perf_counter()
    store.reviews()  # read as it is (mapped on the fly)
    t1 = time.perf_counter()
    store.save("crows-tl", 0, "new reviewer", "accept")  # the first save migrates
    t2 = time.perf_counter()
    kept = len(store.reviews()) - 1
    return {"legacy_rows": rows, "kept": kept, "read_legacy_s": round(t1 - t0, 3),
            "first_save_with_migration_s": round(t2 - t1, 3)}


def agreement_timing() -> dict:
    rng = np.random.default_rng(0)
    pairs = pd.DataFrame({"pair_id": range(204), "bias_type": ["gender"] * 131 + ["sexual-orientation"] * 73,
                          "sent_more": "m", "sent_less": "l", "sent_more_en": "", "sent_less_en": ""})
    reviews = pd.DataFrame([(p, r, STATUSES[rng.integers(3)], "", "") for p in range(204) for r in ("A", "B", "C")],
                           columns=["pair_id", "reviewer", "status", "corrected_more", "corrected_less"])
    adj = pd.DataFrame(columns=ADJUDICATION_COLUMNS)
    t0 = time.perf_counter()
    agreement(reviews, pairs)  # first call: imports scikit-learn and statsmodels
    cold = time.perf_counter() - t0
    warm, fix = [], []
    for _ in range(5):
        t0 = time.perf_counter()
        table = agreement(reviews, pairs)
        t1 = time.perf_counter()
        corrected_frame(pairs, final_decisions(pairs.pair_id, reviews, adj))
        warm.append(t1 - t0)
        fix.append(time.perf_counter() - t1)
    return {"pairs": 204, "reviewers": 3, "agreement_first_call_ms": round(cold * 1000, 1),
            "agreement_ms_best_of_5": round(min(warm) * 1000, 1),
            "kappa_random_statuses": round(float(table.kappa.iloc[0]), 4),
            "decisions_and_corrected_ms_best_of_5": round(min(fix) * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--saves", type=int, default=200)
    parser.add_argument("--legacy-rows", type=int, default=50_000)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="review-bench-"))
    result = {"concurrent_saves": [concurrent_saves(n, args.saves, folder) for n in (1, 2, 4, 8)],
              "migration": legacy_migration(args.legacy_rows, folder), "agreement": agreement_timing()}
    out = REPO / "bench" / "results" / "review_store.json"
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
