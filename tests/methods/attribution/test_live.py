"""The live queue (biascore.methods.attribution.live): pairs sent by many threads at once share forward passes,
and each caller gets the numbers of a lone score_pair call (within the stated float32 tolerance; tokens,
skipped reasons and verdicts exactly)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from biascore.inputs.datasets import load_benchmark
from biascore.methods.attribution.live import (BU_TOLERANCE, LOGP_TOLERANCE, SJSD_TOLERANCE, LiveQueue,
                                               live_queue, score_live)
from biascore.methods.attribution.scorer import score_pair, score_pairs
from tests.conftest import MASKED_LMS

#: typed input the page must survive in a shared round: identical, empty, not a minimal pair, punctuation only
ODD = [("Women are bad at math.", "Women are bad at math."), ("Women are bad at math.", ""),
       ("Cheryl was bad at saving money", "John was always careful with money"), ("Poor people!", "Rich people?")]


def _together(n: int, work) -> list:
    """``work(i)`` in n threads released at once; the results in order (an exception is re-raised)."""
    barrier, out, errors = threading.Barrier(n), [None] * n, []

    def run(i):
        barrier.wait()
        try:
            out[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - collected, re-raised below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    if errors:
        raise errors[0]
    return out


def assert_same_as_lone(lone: dict, shared: dict) -> None:
    """The contract of a pair scored in a shared round against the same pair alone."""
    for key in ("tokens", "more_tokens", "less_tokens", "more_u", "less_u"):
        assert list(shared[key]) == list(lone[key]), key
    assert shared["skipped_reason"] == lone["skipped_reason"] and bool(shared["truncated"]) == bool(lone["truncated"])
    for key in ("logp_more", "logp_less"):
        a, b = np.asarray(lone[key], float), np.asarray(shared[key], float)
        assert np.all(np.abs(a - b) <= LOGP_TOLERANCE * np.maximum(1.0, np.abs(a))), key
    np.testing.assert_allclose(shared["bu"], lone["bu"], rtol=0, atol=BU_TOLERANCE)
    if np.isnan(lone["sjsd"]):
        assert np.isnan(shared["sjsd"])
        return
    assert abs(shared["sjsd"] - lone["sjsd"]) <= SJSD_TOLERANCE
    if abs(lone["sjsd"]) > SJSD_TOLERANCE:
        assert bool(shared["biased"]) == bool(lone["biased"])


@pytest.mark.parametrize("which", ["smollm", *MASKED_LMS])
def test_concurrent_live_pairs_equal_lone_calls(which, request):
    """Every demo pair (and odd input) from its own thread at the same moment: shared rounds, lone numbers."""
    lm = request.getfixturevalue(which)
    torch.set_num_threads(1)
    demo = load_benchmark("demo").frame
    pairs = list(zip(demo.sent_more, demo.sent_less))[: 16 if which == "smollm" else None] + ODD
    lone = [score_pair(lm, more, less) for more, less in pairs]
    queue = LiveQueue(lm)
    shared = _together(len(pairs), lambda i: queue.score(*pairs[i]))
    assert queue.stats["pairs"] == len(pairs) and queue.stats["largest"] > 1  # rounds were shared
    assert queue.stats["rounds"] < len(pairs)
    for a, b in zip(lone, shared):
        assert_same_as_lone(a, b)
    assert [r["skipped_reason"] for r in shared[-len(ODD):]][:2] == ["identical sentences", "empty sentence"]


@pytest.mark.parametrize("which", MASKED_LMS)
def test_score_pairs_is_score_pair_for_each_pair(which, request):
    tiny_mlm = request.getfixturevalue(which)
    pairs = [("The nurse said she was tired.", "The nurse said he was tired."), *ODD]
    for a, b in zip([score_pair(tiny_mlm, *p) for p in pairs], score_pairs(tiny_mlm, pairs)):
        assert_same_as_lone(a, b)


class _Recorder:
    """A stand-in scorer: records each round's pairs and answers with a row naming the pair."""

    def __init__(self, fail: bool = False):
        self.rounds: list[list[tuple[str, str]]] = []
        self.fail = fail

    def __call__(self, lm, pairs, jsd="reference"):
        self.rounds.append(list(pairs))
        if self.fail:
            raise ValueError("the model refused")
        return [{"pair": p, "jsd": jsd} for p in pairs]


def test_pairs_of_one_moment_share_one_round_and_are_remembered():
    scorer = _Recorder()
    queue = LiveQueue(object(), window=0.5, max_gather=10, scorer=scorer)  # generous: a loaded CI machine
    pairs = [(f"more {i}", f"less {i}") for i in range(12)] + [("more 0", "less 0")]  # one pair twice
    rows = _together(len(pairs), lambda i: queue.score(*pairs[i]))
    assert [r["pair"] for r in rows] == pairs
    assert len(scorer.rounds) == 1 and sorted(scorer.rounds[0]) == sorted(set(pairs))  # the duplicate once
    assert rows[0] is rows[-1]  # one row, shared (read-only)
    assert queue.score("more 3", "less 3") is rows[3] and len(scorer.rounds) == 1  # remembered: no new round
    assert queue.score("more 3", "less 3", "sqrt")["jsd"] == "sqrt" and len(scorer.rounds) == 2  # other variant


def test_a_full_round_is_scored_in_parts_and_each_caller_hears_the_state():
    scorer = _Recorder()
    queue = LiveQueue(object(), window=0.3, max_gather=10, max_pairs=4, scorer=scorer)
    heard: list[list[str]] = [[] for _ in range(10)]
    rows = _together(10, lambda i: queue.score(f"m{i}", f"l{i}", waiting=heard[i].append, poll=0.01))
    assert [r["pair"] for r in rows] == [(f"m{i}", f"l{i}") for i in range(10)]
    assert max(len(r) for r in scorer.rounds) <= 4 and sum(len(r) for r in scorer.rounds) == 10
    assert all(h and all(isinstance(s, str) and s for s in h) for h in heard)  # everyone heard something
    assert any(s.startswith("queued") for h in heard for s in h)


def test_an_error_reaches_every_caller_of_its_round_and_the_queue_goes_on():
    scorer = _Recorder(fail=True)
    queue = LiveQueue(object(), window=0.3, max_gather=10, scorer=scorer)
    outcomes = _together(5, lambda i: _outcome(lambda: queue.score(f"m{i}", f"l{i}")))
    assert outcomes == ["ValueError: the model refused"] * 5
    scorer.fail = False
    assert queue.score("m0", "l0")["pair"] == ("m0", "l0")  # not remembered as failed: scored again


def _outcome(call) -> str:
    try:
        call()
    except ValueError as exc:
        return f"ValueError: {exc}"
    return "ok"


def test_one_queue_per_loaded_model(random_mlm):
    tiny_mlm = random_mlm
    assert live_queue(tiny_mlm) is live_queue(tiny_mlm)
    row = score_live(tiny_mlm, "The nurse said she was tired.", "The nurse said he was tired.")
    assert_same_as_lone(score_pair(tiny_mlm, "The nurse said she was tired.", "The nurse said he was tired."), row)


def test_busy_while_a_queue_has_scored_a_pair_in_the_last_minute(monkeypatch):
    """(The dashboard scores a whole benchmark on every core only while no queue is busy.)"""
    from biascore.methods.attribution import live
    monkeypatch.setattr(live, "_queues", {})
    assert not live.busy()
    live_queue(object(), window=0.01, scorer=lambda lm, pairs, jsd: [{"pair": p} for p in pairs])
    assert not live.busy()  # a queue, no pair yet
    assert score_live(next(iter(live._queues.values())).lm, "a", "b") == {"pair": ("a", "b")}
    assert live.busy()  # its worker waits a minute for the next round
