"""Words view speed from the result cache (biascore.methods.words.table).

Usage (score the benchmark first, e.g.
``python -m biascore score --benchmark crows-en --model /path/to/tiny-trained-bert-mlm``)::

    BIASCORE_DATA_DIR=/path/to/data python bench/bench_words.py --model M [--benchmark crows-en] [--repeats 7]
        [--out bench/results/words.json]

What is timed (median of ``--repeats`` unless said otherwise; a private copy of nothing — it uses the
default cache, and removes only the words entries it times cold):

* ``attribution_frame_ms``: the cached attribution frame (``results.load_run``, warm: one parquet read);
* ``occurrences_from_frame_ms``: :func:`word_occurrences` on that frame (explode + NFKC/case-fold);
* ``occurrences_cold_ms``: :func:`occurrences_for_run` with its words cache entry removed (once);
* ``occurrences_cached_ms``: the same, read back from the words cache (what the page and CLI do);
* ``table_ms`` / ``table_filtered_ms``: :func:`word_table` over all occurrences / one bias type + min count 5;
* ``pairs_ms``: :func:`word_pairs` for the most frequent word; ``compare_ms``: :func:`compare_words`
  of the run with itself relabelled (same size as two real models);
* ``replicated_*``: with ``--replicate K``, :func:`word_table` and :func:`word_occurrences` on the run copied
  K times with fresh pair ids (K = 8 on crows-en ≈ winoqueer-tl's 12,089 pairs) — a size check, not a
  real benchmark;
* ``loop_table_ms``: a per-occurrence Python loop computing the same table (dicts + statistics + scipy
  per word), for the ratio to the vectorised :func:`word_table` (checked to give the same numbers).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def median_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1000)
    return round(statistics.median(times), 1)


def loop_table(occ):
    """The same numbers by a plain per-occurrence loop (the baseline the vectorised version replaces)."""
    import math

    from scipy import stats

    groups: dict[str, list] = {}
    for pair_id, word_type, b in zip(occ["pair_id"].tolist(), occ["word_type"].tolist(), occ["b"].tolist()):
        groups.setdefault(word_type, []).append((pair_id, b))
    rows = {}
    for word, items in groups.items():
        b = [v for _, v in items]
        n = len(b)
        mean = sum(b) / n
        half = float("nan")
        if n >= 2:
            half = stats.t.ppf(0.975, n - 1) * statistics.stdev(b) / math.sqrt(n)
        rows[word] = (len({p for p, _ in items}), n, mean, mean - half, mean + half, sum(v < 0 for v in b) / n)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--benchmark", default="crows-en")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--replicate", type=int, default=0, help="also time K stacked copies of the run (size check)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    import numpy as np

    from biascore.store.cache import ResultCache
    from biascore.methods.attribution.results import best_runs, cached_runs, load_run
    from biascore.runs import runner
    from biascore.methods import get
    from biascore.methods.words.table import compare_words, word_occurrences, word_pairs, word_table

    def occurrences_for_run(entry, cache):
        return runner.run_on_stored(get("words"), entry, cache=cache).frame

    cache = ResultCache()
    runs = best_runs(cached_runs(cache))
    hit = runs[(runs.model == args.model) & (runs.benchmark == args.benchmark) & runs.complete]
    if hit.empty:
        print(f"error: no complete cached run of {args.model} on {args.benchmark}; score it first", file=sys.stderr)
        return 2
    entry = hit.iloc[0].entry
    frame = load_run(entry, cache=cache)  # make sure the derived frame is cached
    res: dict = {"benchmark": args.benchmark, "model": args.model, "pairs": len(frame),
                 "load_average_1min_at_start": round(os.getloadavg()[0], 2), "cpu_count": os.cpu_count()}
    res["attribution_frame_ms"] = median_ms(lambda: load_run(entry, cache=cache), args.repeats)
    res["occurrences_from_frame_ms"] = median_ms(lambda: word_occurrences(frame), args.repeats)
    for stored in runner.stored(get("words"), model=entry.model, input=entry.input, cache=cache):
        stored.path.unlink(missing_ok=True)  # cold: the words of this run not stored yet
    t0 = time.perf_counter()
    occ = occurrences_for_run(entry, cache)
    res["occurrences_cold_ms"] = round((time.perf_counter() - t0) * 1000, 1)
    res["occurrences_cached_ms"] = median_ms(lambda: occurrences_for_run(entry, cache),
                                             args.repeats)
    res["occurrences"] = len(occ)
    table = word_table(occ)
    res["word_types"] = len(table)
    res["table_ms"] = median_ms(lambda: word_table(occ), args.repeats)
    bias_type = occ["bias_type"].value_counts().index[0]
    res["table_filtered_ms"] = median_ms(lambda: word_table(occ, [bias_type], 5), args.repeats)
    res["pairs_ms"] = median_ms(lambda: word_pairs(occ, frame, table.word_type.iloc[0]), args.repeats)
    res["compare_ms"] = median_ms(lambda: compare_words({"a": occ, "b": occ}, min_count=5), args.repeats)
    if args.replicate > 1:
        import pandas as pd

        big = pd.concat([frame.assign(pair_id=frame.pair_id + k * (int(frame.pair_id.max()) + 1))
                         for k in range(args.replicate)], ignore_index=True)
        res["replicated_pairs"] = len(big)
        res["replicated_occurrences_from_frame_ms"] = median_ms(lambda: word_occurrences(big), 3)
        big_occ = word_occurrences(big)
        res["replicated_occurrences"] = len(big_occ)
        res["replicated_table_ms"] = median_ms(lambda: word_table(big_occ), 3)
        res["replicated_table_filtered_ms"] = median_ms(lambda: word_table(big_occ, [bias_type], 5), 3)
    res["loop_table_ms"] = median_ms(lambda: loop_table(occ), max(1, args.repeats // 2))
    loop = loop_table(occ)
    got = table.set_index("word_type")
    want = np.array([loop[w] for w in got.index], dtype=float)
    have = got[["n_pairs", "n_occurrences", "mean_b", "ci_low", "ci_high", "share_biased"]].to_numpy(float)
    assert np.allclose(want, have, equal_nan=True, rtol=1e-9, atol=1e-12), "loop and vectorised tables differ"
    res["table_speedup_vs_loop"] = round(res["loop_table_ms"] / max(res["table_ms"], 1e-9), 1)
    res["load_average_1min_at_end"] = round(os.getloadavg()[0], 2)
    print(json.dumps(res, indent=2))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
