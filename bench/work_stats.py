"""Work actually performed by the engine's scoring loop (padding included), for FLOP accounting in bench/: input
tokens, Σ B·T² over batches (attention score work), rows sent through the LM head, batches run. Counted by wrapping
the loop's launch of each batch while the block runs; the engine keeps no counters of its own."""
from __future__ import annotations

import contextlib
from typing import Iterator

from biascore.models import lm_scoring


@contextlib.contextmanager
def counted() -> Iterator[dict[str, int]]:
    """The counters of the batches launched inside the block (a batch that runs out of memory is not counted)."""
    stats = {"tokens": 0, "attention_tt": 0, "head_rows": 0, "batches": 0}
    launch = lm_scoring._launch_gold_logprobs

    def counting(lm, ids, att, rows, cols, gold):
        launched = launch(lm, ids, att, rows, cols, gold)
        stats["tokens"] += ids.numel()
        stats["attention_tt"] += ids.shape[0] * ids.shape[1] ** 2
        stats["head_rows"] += len(rows)
        stats["batches"] += 1
        return launched

    lm_scoring._launch_gold_logprobs = counting
    try:
        yield stats
    finally:
        lm_scoring._launch_gold_logprobs = launch
