"""Time the head bias scores (one forward + one backward) for one model and SEAT test, cache bypassed.

    python bench/heads_timing.py --model all-minilm-l6-v2 --seat-test weat6b [--batch-size 256] [--repeat 2]

Prints wall-clock and process CPU seconds of ``head_score_matrix`` alone (model loading excluded). On a
shared machine, CPU seconds / wall seconds shows how much of the core time this process really got.
"""
from __future__ import annotations

import argparse
import time

import torch

from biascore.models.loading import load_model
from biascore.methods.heads.scorer import head_score_matrix, top_heads, scores_frame
from biascore.inputs.seat_tests import load_seat_test


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="all-minilm-l6-v2")
    p.add_argument("--seat-test", default="weat6b")
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    lm = load_model(args.model)
    test = load_seat_test(args.seat_test)
    print(f"{args.model} on {args.seat_test}; torch threads {torch.get_num_threads()}")
    for r in range(args.repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        b, es = head_score_matrix(lm, test, batch_size=args.batch_size)
        w1, c1 = time.perf_counter(), time.process_time()
        print(f"run {r + 1}: shape {b.shape}, ES {es:+.4f}, wall {w1 - w0:.2f} s, process CPU {c1 - c0:.2f} s")
    print(top_heads(scores_frame(b), 5)[["name", "score"]].to_string(index=False))


if __name__ == "__main__":
    main()
