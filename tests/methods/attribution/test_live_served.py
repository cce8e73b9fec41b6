"""The live queue on a served model: the pairs of one round (many people pressing Score at once on Try a pair)
go to the completions server as one prompt per sentence, many prompts per request, the requests concurrent on
the served client's bounded pool — not one by one — and every caller gets the in-process engine's numbers
within the reproducibility contract.

The server is the reference server of tests/served_reference.py (a test double of vLLM's completions protocol,
SmolLM2 in float32 over real HTTP, in its own process); its own counters say how many completions requests were
in flight at once and how many prompts one forward pass of it batched.
"""
from __future__ import annotations

import pandas as pd
import pytest
import torch

from biascore.inputs.datasets import load_benchmark
from biascore.models.handle import open_model
from biascore.methods.attribution.live import LiveQueue
from reproducibility_contract import compare_frames
from biascore.methods.attribution.scorer import score_pairs

ROUND = 12  # pairs in one round: 24 sentences, more than the client's pool of 8


@pytest.fixture
def server(reference_server):
    """The session's reference server (tests/conftest.py)."""
    return reference_server


@pytest.mark.exactness
def test_a_round_goes_to_the_server_as_concurrent_requests(server, smollm):
    served = open_model("served:" + server.url)
    served.client.batch = 4  # 24 sentences in 8 requests (3 and the proof prompt each): several in flight at once
    frame = load_benchmark("demo").frame
    pairs = list(zip(frame.sent_more[:ROUND], frame.sent_less[:ROUND]))
    server.stats(reset=True)  # the connection's own requests (conformance probes, fingerprint) are not counted
    # a round closes once all its pairs are in (max_pairs) or a window passes without a new one
    queue = LiveQueue(served, window=1.0, max_gather=600, max_pairs=ROUND)
    futures = [queue.submit(more, less) for more, less in pairs]
    rows = [f.result(timeout=600) for f in futures]
    assert queue.stats["pairs"] == ROUND and queue.stats["largest"] > 1

    seen = server.stats()
    assert seen["completions"] == 2 * ROUND // 3, seen  # many prompts per request
    assert seen["prompts"] == 2 * ROUND + seen["completions"], seen  # one echo per sentence, one proof per request
    assert seen["max_in_flight"] > 1, seen  # concurrent, not one by one …
    assert seen["max_in_flight"] <= served.client.concurrency, seen  # … on the bounded pool
    assert seen["largest_batch"] > 1, seen  # and the server batched them into shared forward passes

    torch.set_num_threads(1)
    here = pd.DataFrame(score_pairs(smollm, pairs)).assign(pair_id=range(ROUND))
    there = pd.DataFrame(rows).assign(pair_id=range(ROUND))
    agreement = compare_frames(here, there)
    assert agreement.within_contract, agreement.problems
    assert agreement.tokens > 0 and there["skipped_reason"].tolist() == here["skipped_reason"].tolist()
