"""Time the association tests' scoring (model loading excluded): SEAT on all-MiniLM-L6-v2 and the
log-probability bias on the tiny MLM. Uses a throw-away cache so nothing is read from earlier runs.

    BIASCORE_DATA_DIR=/path/to/data TINY_MLM=/path/to/tiny-trained-bert-mlm python bench/association_timing.py [logprob tests]
"""
from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from biascore.store.cache import ResultCache  # noqa: E402
from biascore.methods.association.logprob_bias import effect_sizes, load_logprob_test  # noqa: E402
from biascore.models.loading import load_model  # noqa: E402
from biascore.runs import runner  # noqa: E402
from biascore.methods import get  # noqa: E402

TINY = os.environ.get("TINY_MLM", str(Path(__file__).resolve().parents[2] / "shared/models/tiny-trained-bert-mlm"))


def main() -> None:
    cache = ResultCache(tempfile.mkdtemp(prefix="assoc-bench-"))
    minilm = load_model("all-minilm-l6-v2")
    for test in ("sent-weat6", "sent-weat7", "sent-weat8"):
        t0 = time.perf_counter()
        row = runner.run(get("seat"), minilm, test, cache=cache).frame.iloc[0]
        print(f"SEAT {test}: ES={row.effect_size:.4f} p={row.p_value:.5f} "
              f"(n={row.n_x}/{row.n_y}/{row.n_a}/{row.n_b}) {time.perf_counter() - t0:.1f} s")
    tiny = load_model(TINY)
    for test in sys.argv[1:] or ["en-gender-career", "en-gender-science"]:
        t0 = time.perf_counter()
        scores = runner.run(get("logprob"), tiny, test, cache=cache).stored
        table = effect_sizes(scores, load_logprob_test(test))
        took = time.perf_counter() - t0
        for r in table.itertuples():
            print(f"logprob {test} {r.structure}: ES={r.effect_size:.4f} p={r.p_value:.4f}")
        print(f"logprob {test}: {len(scores)} scores in {took:.1f} s")


if __name__ == "__main__":
    main()
