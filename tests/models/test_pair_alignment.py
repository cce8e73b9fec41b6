"""The shared tokens U of a pair: difflib's blocks without its autojunk heuristic, so long minimal pairs written
in a common vocabulary stay minimal pairs (the heuristic dropped every frequent token of a 200+ token sequence:
a 2,000-word pair differing in its first word was "not a minimal pair"); short pairs align exactly as the
published code's default SequenceMatcher does; long pairs stay fast."""
from __future__ import annotations

import difflib
import random
import time

import pytest

from biascore.models.pair_tokens import LONG_PAIR, pair_of, shared_positions, tokenize_sentences

BASE = "the people who live here work at home and they are happy with it".split()


def long_pair(n_words: int) -> tuple[str, str]:
    words = (BASE * (n_words // len(BASE) + 1))[:n_words - 1]
    return " ".join(["Women"] + words), " ".join(["Men"] + words)


def blocks(a, b, **kw) -> tuple[list[int], list[int]]:
    """Independent: the positions of SequenceMatcher's equal blocks."""
    m = difflib.SequenceMatcher(None, [str(x) for x in a], [str(x) for x in b], **kw)
    pa, pb = [], []
    for op, a0, a1, b0, b1 in m.get_opcodes():
        if op == "equal":
            pa += range(a0, a1)
            pb += range(b0, b1)
    return pa, pb


def edited(rng: random.Random, n: int, vocab: int) -> tuple[list[int], list[int]]:
    a = [rng.randrange(vocab) for _ in range(n)]
    b = list(a)
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(max(len(b), 1))
        b[i:i + rng.randint(0, 2)] = [rng.randrange(vocab + 5) for _ in range(rng.randint(0, 2))]
    return a, b


def test_short_pairs_align_as_the_published_default():
    rng = random.Random(7)
    for _ in range(1500):
        a, b = edited(rng, rng.randint(1, LONG_PAIR - 10), rng.choice([3, 8, 40]))
        assert shared_positions(a, b) == blocks(a, b)  # the published code's default settings


def test_long_pairs_share_their_frequent_tokens():
    rng = random.Random(11)
    for n in (LONG_PAIR, 2000, 5000):
        for vocab in (1, 14, 60):
            a, b = edited(rng, n, vocab)
            got = shared_positions(a, b)
            assert len(got[0]) >= min(len(a), len(b)) - 4  # at most a couple of edits
            assert all(a[i] == b[j] for i, j in zip(*got))
            assert got[0] == sorted(got[0]) and got[1] == sorted(got[1])
    a = [1] + [5] * 1999
    b = [2] + [5] * 1999
    assert blocks(a, b)[0] == []  # what the heuristic did: nothing shared
    assert shared_positions(a, b) == (list(range(1, 2000)), list(range(1, 2000)))


def test_a_2000_word_pair_aligns_quickly(smollm):
    more, less = long_pair(2000)
    pt = pair_of(*tokenize_sentences(smollm, [more, less]))
    start = time.perf_counter()
    shared = shared_positions(pt.more.ids, pt.less.ids)
    took = time.perf_counter() - start
    assert len(shared[0]) == len(pt.more.ids) - 1  # everything but the first word
    assert took < 30  # about a millisecond; the bound only catches a quadratic blow-up on a busy machine
    one_token = [1] + [5] * 4999
    start = time.perf_counter()
    assert len(shared_positions(one_token, [2] + one_token[1:])[0]) == 4999
    assert time.perf_counter() - start < 30  # 10 s without the prefix/suffix step, ~1 ms with it


def test_a_long_pair_is_scored_not_called_no_minimal_pair(smollm):
    import biascore

    more, less = long_pair(300)  # 300 tokens: every shared token is "popular" for the heuristic
    pair = biascore.score_pair(smollm, more, less).pair(0)
    assert pair.skipped_reason == ""
    assert len(pair.tokens) == 299 and pair.sjsd == pair.sjsd  # scored (not NaN)
