"""One counter pair's attentions as a run (``heads-attention``), no longer a page memo: the numbers of
:func:`counter_stereotype.sentence_attentions` (what the page computed before), stored under a key (model, input
content hash, the pair), read back by a second caller without loading the model, and announced while computing."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from biascore.methods import get
from biascore.methods.heads import counter_stereotype as cs
from biascore.models.handle import ModelHandle
from biascore.runs import runner
from biascore.store.cache import ResultCache

ATTENTION = get("heads-attention")


@pytest.mark.parametrize("model", ["random_mlm", "random_causal"])
def test_the_attentions_are_the_engines_stored_and_read_back_without_a_model(model, request, fixture_data,
                                                                             tmp_path):
    lm = request.getfixturevalue(model)
    cache = ResultCache(tmp_path)
    counter = runner.run(get("heads-counter"), lm, cache=cache).frame
    row = counter.iloc[-1]
    result = runner.run(ATTENTION, lm, cache=cache, pair=row["source"])
    assert result.frame["side"].tolist() == ["original", "counter"]
    assert result.frame["text"].tolist() == [row["sentence"], row["counter"]]
    for (_, side), text in zip(result.frame.iterrows(), (row["sentence"], row["counter"])):
        tokens, att = ATTENTION.drawing.attentions(side)
        expected_tokens, expected, _, _ = cs.sentence_attentions(lm, text)  # the page's computation before
        assert tokens == expected_tokens
        np.testing.assert_array_equal(att, expected.astype(float))
    assert (cache.root / "heads-attention" / f"{result.digest}.parquet").is_file()
    # a second caller (another thread or session) reads it: the model is not loaded, nothing computed
    standin = ModelHandle.standin(lm.name, lm.identity(), "must not load")
    again = {}
    reader = threading.Thread(target=lambda: again.update(r=runner.run(ATTENTION, standin, cache=cache,
                                                                       pair=row["source"])))
    reader.start()
    reader.join()
    assert again["r"].timings["from_cache"] and again["r"].digest == result.digest
    assert again["r"].frame.equals(result.frame)
    # another pair: another key
    assert runner.run(ATTENTION, standin, cache=cache, pair=counter.iloc[0]["source"], only_cached=True) is None \
        or len(counter) == 1


@pytest.mark.parametrize("model", ["random_mlm", "random_causal"])
def test_an_unknown_pair_is_one_line_before_the_model_loads(model, request, fixture_data, tmp_path):
    lm = request.getfixturevalue(model)
    standin = ModelHandle.standin(lm.name, lm.identity(), "must not load")  # its load() raises
    with pytest.raises(ValueError, match="^no counter pair 'demo#999999' for this model"):
        runner.run(ATTENTION, standin, cache=ResultCache(tmp_path), pair="demo#999999")


def test_it_is_announced_while_it_computes(random_mlm, fixture_data, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path)
    inside, release = threading.Event(), threading.Event()
    real = cs.sentence_attentions

    def held(*args, **kwargs):
        inside.set()
        assert release.wait(60)
        return real(*args, **kwargs)

    monkeypatch.setattr(cs, "sentence_attentions", held)
    assert runner.computing(ATTENTION, random_mlm, cache=cache) is None
    worker = threading.Thread(target=lambda: runner.run(ATTENTION, random_mlm, cache=cache))
    worker.start()
    try:
        assert inside.wait(60)
        seen = runner.computing(ATTENTION, random_mlm, cache=cache)
        assert seen is not None and seen.digest == runner.selection(ATTENTION, random_mlm).key.digest
    finally:
        release.set()
        worker.join()
    assert runner.computing(ATTENTION, random_mlm, cache=cache) is None
    assert runner.is_cached(ATTENTION, random_mlm, cache=cache)
