"""Review agreement, assignment and export on benchmark-sized input.

1. Krippendorff's α with its bootstrap interval (1000 resamples) on crows-tl-sized reviews (204 pairs, 3
   reviewers, each pair to 2): the vectorised bootstrap of biascore/stats/reliability.py against calling
   ``krippendorff.alpha`` once per resample (what the module's docstring cites as the reason for the
   vectorised path), and the whole agreement table (overall + per bias type) as the page draws it.
2. Assignment: the plan for crows-tl (204 pairs, 3 reviewers, overlap 2) and for winoqueer-tl's size
   (12,089 pairs, 10 reviewers, overlap 3); storing it in SQLite, and rebalancing after a reviewer is added.
3. The dataset export of crows-tl (parquet tables, CSV, card).

Not a test: numbers depend on the machine and its load.

    python bench/bench_review_agreement.py      # writes bench/results/review_agreement.json
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from biascore.inputs.datasets import load_benchmark  # noqa: E402
from biascore.review.agreement import agreement, status_counts  # noqa: E402
from biascore.review.assignment import plan  # noqa: E402
from biascore.review.corrections import reviewable_pairs  # noqa: E402
from biascore.review.export import export_dataset  # noqa: E402
from biascore.review.store import STATUSES, ReviewStore  # noqa: E402
from biascore.stats.reliability import alpha_interval  # noqa: E402


def timed(fn, repeat: int = 3) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return best, out


def synthetic_reviews(pairs: pd.DataFrame, names: list[str], overlap: int, seed: int = 0) -> pd.DataFrame:
    """Each pair to ``overlap`` reviewers (the planner's assignment); a reviewer keeps the pair's "true" status
    with probability 0.8, else picks one at random."""
    rng = np.random.default_rng(seed)
    truth = dict(zip(pairs.pair_id, rng.choice(STATUSES, size=len(pairs), p=[0.7, 0.2, 0.1])))
    assigned = plan(pairs.pair_id, names, overlap, seed=seed)
    status = [truth[p] if rng.random() < 0.8 else rng.choice(STATUSES) for p in assigned.pair_id]
    return assigned.assign(status=status)


def main() -> None:
    results: dict = {"load_average_before": os.getloadavg()}
    bm = load_benchmark("crows-tl")
    pairs = reviewable_pairs(bm)
    reviews = synthetic_reviews(pairs, ["Ana", "Ben", "Cy"], 2)
    counts = status_counts(reviews).to_numpy()

    import krippendorff

    def package_bootstrap():
        rng = np.random.default_rng(0)
        return [krippendorff.alpha(value_counts=counts[rng.integers(0, len(counts), len(counts))],
                                   level_of_measurement="nominal") for _ in range(1000)]

    fast, est = timed(lambda: alpha_interval(counts, resamples=1000))
    slow, _ = timed(package_bootstrap, repeat=1)
    table_s, table = timed(lambda: agreement(reviews, pairs))
    results["alpha_bootstrap_crows_tl"] = {
        "pairs": int(est.n_units), "alpha": est.alpha, "interval": [est.low, est.high],
        "vectorised_1000_resamples_s": fast, "package_per_resample_1000_s": slow,
        "agreement_table_s": table_s, "agreement_table_rows": len(table)}

    crows_s, _ = timed(lambda: plan(pairs.pair_id, ["Ana", "Ben", "Cy"], 2))
    big_s, big = timed(lambda: plan(range(12089), [f"R{i}" for i in range(10)], 3), repeat=1)
    loads = big.groupby("reviewer").size()
    results["plan"] = {"crows_tl_3_reviewers_overlap_2_s": crows_s,
                       "12089_pairs_10_reviewers_overlap_3_s": big_s,
                       "12089_loads_min_max": [int(loads.min()), int(loads.max())]}

    with tempfile.TemporaryDirectory() as tmp:
        store = ReviewStore(Path(tmp) / "r.sqlite")
        t = time.perf_counter()
        store.assign("crows-tl", pairs.pair_id, ["Ana", "Ben", "Cy"], 2)
        first = time.perf_counter() - t
        for p, r, s in reviews.head(100).itertuples(index=False):
            store.save("crows-tl", int(p), r, s)
        t = time.perf_counter()
        change = store.assign("crows-tl", pairs.pair_id, ["Ana", "Ben", "Cy", "Dan"], 2)
        rebalance = time.perf_counter() - t
        results["store_assign_crows_tl"] = {"first_s": first, "rebalance_after_100_reviews_s": rebalance,
                                            "moved": change.added, "loads": change.loads}
        t = time.perf_counter()
        done = export_dataset(Path(tmp) / "out", bm, store.reviews("crows-tl"), store.adjudications("crows-tl"))
        results["export_dataset_crows_tl"] = {"s": time.perf_counter() - t, "rows": done.rows}
    results["load_average_after"] = os.getloadavg()
    out = REPO / "bench" / "results" / "review_agreement.json"
    out.write_text(json.dumps(results, indent=1, default=float) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=1, default=float))


if __name__ == "__main__":
    main()
