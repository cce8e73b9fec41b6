"""The paired comparison as a method (``attribution-paired``): two stored attribution results compared through the
runner — the numbers of :func:`compare_results` (what ``biascore compare`` and, before, the Overview's page memo
computed), stored under a key, read back by a second caller without computing, and announced while computing."""
from __future__ import annotations

import threading

import pandas as pd
import pytest

from biascore.methods import get
from biascore.methods.attribution import method as attribution_method
from biascore.methods.attribution.compare import compare_results
from biascore.runs import runner
from biascore.store.cache import ResultCache

PAIRED = get("attribution-paired")


@pytest.fixture
def two_runs(random_mlm, random_causal, tmp_path):
    """Two models scored on the first 12 demo pairs in a fresh cache: (cache, entry A, entry B, result A, B)."""
    cache = ResultCache(tmp_path / "cache")
    a, b = (runner.run(get("attribution"), lm, "demo", limit=12, cache=cache) for lm in (random_mlm, random_causal))
    entries = {e.model: e for e in runner.stored(get("attribution"), cache=cache)}
    return cache, entries[random_mlm.name], entries[random_causal.name], a, b


def test_the_comparison_is_the_engines_and_is_stored_under_its_key(two_runs, monkeypatch):
    cache, entry_a, entry_b, a, b = two_runs
    result = runner.run_on_stored(PAIRED, entry_b, cache=cache, against=entry_a.digest)
    expected = compare_results(a, b)  # the computation the page memo ran before (and the CLI runs)
    shown = result.frame[expected.summary().columns]
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), expected.summary(), check_dtype=False)
    assert result.conventions["method_line"] == expected.describe()
    assert result.conventions["notes"] == list(expected.notes)
    assert result.meta["info"]["uses"] == {"attribution": b.digest, "attribution (A)": entry_a.digest}
    assert (cache.root / "attribution-paired" / f"{result.digest}.parquet").is_file()

    # a second caller (another thread, another session) reads the stored comparison: nothing is computed
    def refuse(*args, **kwargs):
        raise AssertionError("computed again")

    monkeypatch.setattr(attribution_method.compare, "compare_results", refuse)
    again = {}
    reader = threading.Thread(target=lambda: again.update(r=runner.run_on_stored(
        PAIRED, entry_b, cache=cache, against=entry_a.digest)))
    reader.start()
    reader.join()
    assert again["r"].timings["from_cache"] and again["r"].digest == result.digest
    pd.testing.assert_frame_equal(again["r"].frame, result.frame)
    # another A, another options: another key
    assert runner.run_on_stored(PAIRED, entry_b, cache=cache, against=entry_a.digest, seed=1,
                                only_cached=True) is None


def test_a_model_against_itself_differs_by_nothing(two_runs):
    cache, _, entry_b, _, _ = two_runs
    frame = runner.run_on_stored(PAIRED, entry_b, cache=cache).frame
    assert (frame.delta == 0).all() and (frame.n_discordant == 0).all() and (frame.sjsd_delta == 0).all()


def test_an_unknown_result_is_one_line(two_runs):
    cache, _, entry_b, _, _ = two_runs
    with pytest.raises(ValueError, match="^--against 0123: no stored attribution result has this digest$"):
        runner.run_on_stored(PAIRED, entry_b, cache=cache, against="0123")


def test_an_unknown_result_is_refused_before_this_models_own_is_computed(random_mlm, tmp_path):
    cache = ResultCache(tmp_path / "cache")
    with pytest.raises(ValueError, match="^--against 0123: no stored attribution result has this digest$"):
        runner.run(PAIRED, random_mlm, "demo", limit=12, cache=cache, against="0123")
    assert runner.stored(get("attribution"), cache=cache) == []  # nothing computed for a comparison refused


def test_it_is_announced_while_it_computes(two_runs, monkeypatch):
    """While one caller computes the comparison, every viewer asking the runner sees it computing (its key)."""
    cache, entry_a, entry_b, _, _ = two_runs
    inside, release = threading.Event(), threading.Event()
    real = attribution_method.compare.compare_results

    def held(*args, **kwargs):
        inside.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(attribution_method.compare, "compare_results", held)
    model = runner.standin(entry_b)
    assert runner.computing(PAIRED, model, "demo", cache=cache, limit=12, against=entry_a.digest) is None
    worker = threading.Thread(target=lambda: runner.run_on_stored(PAIRED, entry_b, cache=cache,
                                                                  against=entry_a.digest))
    worker.start()
    try:
        assert inside.wait(60)
        seen = runner.computing(PAIRED, model, "demo", cache=cache, limit=12, against=entry_a.digest)
        assert seen is not None and seen.digest == runner.selection(
            PAIRED, model, "demo", limit=12, against=entry_a.digest).key.digest
    finally:
        release.set()
        worker.join()
    assert runner.computing(PAIRED, model, "demo", cache=cache, limit=12, against=entry_a.digest) is None
    assert runner.is_cached(PAIRED, model, "demo", cache=cache, limit=12, against=entry_a.digest)
