"""Time the result frame (b(u), words, S_JSD, PLL) and the tokenisation for a whole benchmark on the CPU.

    python bench/bench_attribution_frame.py [--benchmark winoqueer-tl] [--repeat 3]

The log-probabilities are random (the frame's cost does not depend on their values); tokens, offsets and
shared positions come from the tiny MLM's tokenizer on the real benchmark, as a scoring run would make them.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))


def main() -> None:
    import numpy as np
    import pandas as pd

    from biascore.inputs.datasets import load_benchmark
    from biascore.models.loading import load_model
    from biascore.methods.attribution.frame import attribution_frame
    from biascore.methods.attribution.scorer import LOGP_COLUMNS, _tokenize_rows

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--benchmark", default="winoqueer-tl")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    lm = load_model(str(SHARED / "models" / "tiny-trained-bert-mlm"), device="cpu")
    bm = load_benchmark(args.benchmark, SHARED / "data")
    t = time.perf_counter()
    _, recs = _tokenize_rows(lm, bm.frame)[:2]
    print(f"tokenise {len(bm.frame)} pairs: {time.perf_counter() - t:.2f} s")
    rng = np.random.default_rng(0)
    for rec in recs:
        n = len(rec["tokens"])
        rec["logp_more"], rec["logp_less"] = (-rng.exponential(2, n)).tolist(), (-rng.exponential(2, n)).tolist()
    logp = pd.DataFrame.from_records(recs, columns=LOGP_COLUMNS)
    for _ in range(args.repeat):
        t = time.perf_counter()
        attribution_frame(bm, logp)
        print(f"result frame for {len(logp)} pairs: {time.perf_counter() - t:.2f} s")


if __name__ == "__main__":
    main()
