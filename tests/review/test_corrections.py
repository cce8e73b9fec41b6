"""B before/after a review's corrections through the one runner (no page memo): on a model handle it reads the
stored runs without loading the model, a second caller (another thread or session) reads what the first stored,
the corrected benchmark's run is announced while it computes (keyed by its own content hash) and a second caller
follows its progress, and the numbers are those the page computed before on a loaded model."""
from __future__ import annotations

import threading

import pandas as pd
import pytest

from biascore.inputs.datasets import load_benchmark
from biascore.methods import get
from biascore.models.handle import ModelHandle
from biascore.review.corrections import before_after, corrected_benchmark, reviewable_pairs
from biascore.runs import runner
from biascore.store.cache import ResultCache


@pytest.fixture
def review(tmp_path, monkeypatch):
    """A private cache, the demo benchmark and a corrected frame of its first Filipino pairs (one corrected)."""
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    source = load_benchmark("demo")
    pairs = reviewable_pairs(source).head(6)
    corrected = pd.DataFrame({"source_pair_id": pairs.pair_id, "bias_type": pairs.bias_type,
                              "sent_more": pairs.sent_more, "sent_less": pairs.sent_less})
    corrected.loc[corrected.index[0], "sent_more"] = corrected.sent_less.iloc[0].replace(".", " talaga.")
    return ResultCache(tmp_path / "cache"), source, corrected.reset_index(drop=True)


def test_before_after_runs_through_the_runner_and_a_second_caller_reads_it(random_mlm, hermetic_models, review):
    cache, source, corrected = review
    handle = ModelHandle(str(hermetic_models / "random-mlm"))
    first = before_after(handle, source, corrected)
    after = corrected_benchmark(source, corrected)
    for bench in (source, after):  # both runs stored, each under its input's own content hash
        assert runner.is_cached(get("attribution"), handle, bench, cache=cache)
    standin = ModelHandle.standin(handle.name, handle.identity(), "must not load")
    again = {}
    reader = threading.Thread(target=lambda: again.update(t=before_after(standin, source, corrected)))
    reader.start()
    reader.join()
    pd.testing.assert_frame_equal(again["t"], first)
    # the numbers the page computed before, on a loaded model
    loaded = before_after(handle.load(), source, corrected)
    pd.testing.assert_frame_equal(loaded, first)


def test_the_corrected_run_is_announced_while_it_computes(hermetic_models, review):
    cache, source, corrected = review
    handle = ModelHandle(str(hermetic_models / "random-mlm"))
    after = corrected_benchmark(source, corrected)
    inside, release, tables = threading.Event(), threading.Event(), {}

    def progress(done, total):
        if done > len(source.frame) and not inside.is_set():  # inside the corrected benchmark's run
            inside.set()
            assert release.wait(600)

    worker = threading.Thread(target=lambda: tables.update(first=before_after(handle, source, corrected,
                                                                             progress=progress)))
    worker.start()
    followed = threading.Event()
    second = threading.Thread(target=lambda: tables.update(second=before_after(
        handle, source, corrected, progress=lambda done, total: followed.set())))
    try:
        assert inside.wait(300)
        seen = runner.computing(get("attribution"), handle, after, cache=cache)
        assert seen is not None and seen.input == after.name == "demo-corrected"
        second.start()  # a second viewer asks for the same comparison: it follows the first one's progress
        assert followed.wait(60)
    finally:
        release.set()
        worker.join()
        if second.ident:
            second.join()
    assert runner.computing(get("attribution"), handle, after, cache=cache) is None
    pd.testing.assert_frame_equal(tables["second"], tables["first"])  # the first one's result, read back
