"""The runner remembers its reads by stored version (biascore/runs/memo.py): a read asked again is not read again,
one read however many threads ask at once, a replaced result is read again, a damaged or removed one raises every
time it is asked, and the memo is bounded."""
from __future__ import annotations

import os
import shutil
import threading

import pytest

from biascore.methods import get
from biascore.runs import memo, runner
from biascore.store import cache as cache_module
from biascore.store.cache import ResultCache

ATTRIBUTION = get("attribution")


@pytest.fixture
def reads(monkeypatch) -> list:
    """Every parquet file the cache reads (paths, in order): the real reader, counted."""
    seen, real = [], cache_module._read_table

    def counted(path):
        seen.append(path)
        return real(path)

    monkeypatch.setattr(cache_module, "_read_table", counted)
    return seen


@pytest.fixture
def stored_run(random_mlm, tmp_path):
    """A stored attribution run of the demo benchmark in a cache of its own: (cache, its listed entry)."""
    cache = ResultCache(tmp_path / "cache")
    runner.run(ATTRIBUTION, random_mlm, "demo", cache=cache)
    (entry,) = runner.stored(ATTRIBUTION, cache=cache)
    return cache, entry


def _together(n: int, fn) -> list:
    """``fn()`` in ``n`` real threads released at once by a barrier; their answers (an exception re-raised)."""
    barrier, answers = threading.Barrier(n), [None] * n

    def work(i):
        barrier.wait()
        try:
            answers[i] = fn()
        except Exception as exc:  # noqa: BLE001 - returned to the test
            answers[i] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    return answers


# ------------------------------------------------------------------------------------------------ the memo itself
def _key(name: str) -> tuple:
    """A key no other test asks for (the memo is the process's)."""
    return ("test", name, object())


def test_a_key_asked_twice_is_read_once():
    key, calls = _key("twice"), []
    assert memo.remember(key, lambda: calls.append(1) or "answer") == "answer"
    assert memo.remember(key, lambda: calls.append(1) or "other") == "answer"
    assert calls == [1]


def test_threads_asking_one_key_at_once_read_once():
    key, calls, arrived, everyone = _key("threads"), [], [], threading.Event()

    def slow_read():
        calls.append(1)
        everyone.wait(timeout=60)  # the read stays under way until every thread has asked
        return object()

    def ask():
        arrived.append(1)
        if len(arrived) == 8:
            everyone.set()
        return memo.remember(key, slow_read)

    answers = _together(8, ask)
    assert len(calls) == 1
    assert all(a is answers[0] for a in answers)


def test_a_failed_or_empty_read_is_not_remembered():
    failing_key, empty_key, calls = _key("failing"), _key("empty"), []

    def failing():
        calls.append(1)
        raise ValueError("damaged")

    for _ in range(2):
        with pytest.raises(ValueError):
            memo.remember(failing_key, failing)
        assert memo.remember(empty_key, lambda: calls.append(1)) is None
    assert len(calls) == 4


def test_the_memo_is_bounded_least_recently_asked_first():
    first, second = _key("first"), _key("second")
    memo.remember(first, lambda: 1), memo.remember(second, lambda: 2)
    for i in range(memo.SIZE - 1):
        memo.remember(_key(f"filler {i}"), lambda: 0)
        if i == 0:
            assert memo.remember(first, lambda: "read again") == 1  # asked again: now the most recent
    assert memo._answer.cache_info().currsize == memo.SIZE
    assert memo.remember(first, lambda: "read again") == 1  # asked since: kept
    assert memo.remember(second, lambda: "read again") == "read again"  # least recently asked: dropped


# ------------------------------------------------------------------------------------------------ the runner's reads
def test_a_stored_result_asked_twice_is_read_once(stored_run, reads):
    cache, entry = stored_run
    first = runner.open_stored(ATTRIBUTION, entry, cache=cache)
    assert reads, "the first open reads the file"
    n = len(reads)
    again = runner.open_stored(ATTRIBUTION, entry, cache=cache)
    assert again is first and len(reads) == n  # the same result, shared; no file read
    assert runner.run(ATTRIBUTION, runner.standin(entry), "demo", cache=cache).frame is first.frame
    assert len(reads) == n  # run() of a stored result reads nothing either: its reads are remembered
    summary = runner.drawn(ATTRIBUTION, entry, ATTRIBUTION.summary, cache=cache, metric="pll")
    assert runner.drawn(ATTRIBUTION, entry, ATTRIBUTION.summary, cache=cache, metric="pll") is summary
    assert summary.equals(ATTRIBUTION.summary(runner.open_stored(ATTRIBUTION, entry, cache=cache, metric="pll")))


def test_threads_opening_one_version_read_it_once(stored_run, reads):
    cache, entry = stored_run

    def new_version(seconds: int) -> None:  # the same file touched: a new version, read again
        os.utime(entry.path, ns=(entry.mtime_ns + seconds * 10**9,) * 2)
        reads.clear()

    runner.open_stored(ATTRIBUTION, entry, cache=cache)
    new_version(1)
    runner.open_stored(ATTRIBUTION, entry, cache=cache)
    one_caller = len(reads)
    new_version(2)
    answers = _together(8, lambda: runner.open_stored(ATTRIBUTION, entry, cache=cache))
    assert all(a is answers[0] for a in answers), answers
    assert 0 < len(reads) == one_caller  # eight sessions at once cost what one costs


def test_a_listing_is_read_again_only_when_a_result_is_stored(stored_run, random_mlm, reads, monkeypatch):
    cache, entry = stored_run
    footers, real = [], ResultCache.entries
    monkeypatch.setattr(ResultCache, "entries", lambda self, folder: footers.append(folder) or real(self, folder))
    runner.stored(ATTRIBUTION, cache=cache), runner.stored(ATTRIBUTION, cache=cache)
    runs = ATTRIBUTION.drawing.cached_runs(cache=cache)
    assert ATTRIBUTION.drawing.cached_runs(cache=cache) is runs and len(runs) == 1
    assert footers == []  # the fixture's listing is remembered
    runner.run(ATTRIBUTION, random_mlm, "demo", cache=cache, limit=5)  # a second result is stored
    assert len(runner.stored(ATTRIBUTION, cache=cache)) == 2 and len(footers) == 1


def test_a_replaced_result_is_read_again(stored_run, reads):
    cache, entry = stored_run
    first = runner.open_stored(ATTRIBUTION, entry, cache=cache)
    copy = entry.path.with_suffix(".copy")
    shutil.copy(entry.path, copy)
    os.replace(copy, entry.path)  # the same bytes stored anew, as another process storing it would
    reads.clear()
    again = runner.open_stored(ATTRIBUTION, entry, cache=cache)
    assert again is not first and reads and again.frame.equals(first.frame)


def test_a_damaged_result_raises_every_time_it_is_asked(stored_run):
    cache, entry = stored_run
    runner.open_stored(ATTRIBUTION, entry, cache=cache)  # remembered while intact
    entry.path.write_bytes(b"PAR1 not a parquet file PAR1")
    for _ in range(3):  # damaged, then removed: never the remembered intact read
        with pytest.raises(runner.DamagedResult):
            runner.open_stored(ATTRIBUTION, entry, cache=cache)
        with pytest.raises(runner.DamagedResult):
            runner.drawn(ATTRIBUTION, entry, ATTRIBUTION.summary, cache=cache, metric="attribution")
    assert not entry.path.exists()


def test_a_removed_result_is_never_served_from_memory(stored_run):
    cache, entry = stored_run
    runner.open_stored(ATTRIBUTION, entry, cache=cache)
    entry.path.unlink()
    with pytest.raises(runner.DamagedResult):
        runner.open_stored(ATTRIBUTION, entry, cache=cache)
    assert runner.stored(ATTRIBUTION, cache=cache) == []
