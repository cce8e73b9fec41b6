"""One cache-key rule: every model-based scorer keys its results with biascore.store.keys.result_key, so each
scorer's key changes with the dtype and the device type of the model (a bf16 or GPU run is never answered from
an fp32 CPU run's cache). Each scorer's real entry point is called with a cache that records the key it asks
for and stops there, so the test sees the key the scorer actually uses, not a copy of its recipe."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest
import torch

from biascore.version import ENGINE_VERSION
from biascore.store.cache import CacheKey, ResultCache
from biascore.models.embeddings import features_key
from biascore.store.keys import model_parts, result_key
from biascore.models.loading import LanguageModel
from conftest import FIXTURE_DATA


class _Asked(Exception):
    pass


class SpyCache(ResultCache):
    """Records the first key a scorer asks for, then stops the scorer (nothing is computed)."""

    def __init__(self, root):
        super().__init__(root)
        self.keys: list[CacheKey] = []

    def load(self, key, *args, **kwargs):
        self.keys.append(key)
        raise _Asked

    def load_entry(self, key, *args, **kwargs):
        self.keys.append(key)
        raise _Asked

    def get_or_compute(self, key, compute):
        self.keys.append(key)
        raise _Asked


def _variant(lm: LanguageModel, dtype: str = "float32", device: str = "cpu") -> LanguageModel:
    return dataclasses.replace(lm, device=torch.device(device), extra={**lm.extra, "dtype": dtype})


def _asked_key(call, lm, tmp_path) -> CacheKey:
    cache = SpyCache(tmp_path)
    with pytest.raises(_Asked):
        call(lm, cache)
    return cache.keys[0]


def _entry_points(data_dir):
    """Each scorer's entry point on the fixture data directory (tests/fixtures/data) and its SEAT test."""
    from biascore.runs import runner
    from biascore.methods import get

    def seat_test():
        from biascore.inputs.seat_tests import load_seat_test

        return load_seat_test("names-career-family", data_dir)

    def result_of(name, input=None, **kw):  # the method's result through the runner's door
        return lambda lm, c: runner.run(get(name), lm, input() if callable(input) else input, cache=c, **kw)

    return {
        "attribution": result_of("attribution", "demo"),
        "heads": result_of("heads", seat_test),
        "heads-masking": result_of("heads-masking", seat_test, data_dir=data_dir),
        "heads-counter": result_of("heads-counter", data_dir=data_dir),
        "labdet": result_of("labdet", "en", data_dir=data_dir),
        "seat": result_of("seat", "sent-names-career-family"),
        "ceat": result_of("ceat", "names-career-family", segment_lengths=(None,)),
        "logprob": result_of("logprob", "en-gender-career"),
        "features": lambda lm, c: c.load(features_key(lm, ["a sentence."], "mean")),
    }


@pytest.mark.parametrize("scorer", ["attribution", "heads", "heads-masking", "heads-counter", "labdet", "seat",
                                    "ceat", "logprob", "features"])
def test_every_scorers_key_changes_with_dtype_and_device(scorer, random_mlm, fixture_data, tmp_path):
    call = _entry_points(FIXTURE_DATA)[scorer]
    fp32 = _asked_key(call, _variant(random_mlm), tmp_path)
    bf16 = _asked_key(call, _variant(random_mlm, "bfloat16"), tmp_path)
    fp16 = _asked_key(call, _variant(random_mlm, "float16"), tmp_path)
    cuda = _asked_key(call, _variant(random_mlm, device="cuda"), tmp_path)
    again = _asked_key(call, _variant(random_mlm), tmp_path)
    assert len({fp32.digest, bf16.digest, fp16.digest, cuda.digest}) == 4
    assert again.digest == fp32.digest  # deterministic
    meta = fp32.meta
    assert (meta["model"], meta["model_fingerprint"], meta["dtype"], meta["device"], meta["engine_version"]) == \
        (random_mlm.name, random_mlm.fingerprint, "float32", "cpu", ENGINE_VERSION)
    assert "approximate" not in meta and bf16.meta["approximate"] is True  # the entry says it is approximate


def test_result_key_is_the_one_rule():
    from biascore.models.loading import ModelIdentity

    a = ModelIdentity("m", "abc", "masked", "float32", "cpu")
    key = result_key("x", a, benchmark="demo")
    assert key.meta == {"scorer": "x", "model": "m", "model_fingerprint": "abc", "model_kind": "masked",
                        "dtype": "float32", "device": "cpu", "benchmark": "demo", "engine_version": ENGINE_VERSION}
    assert model_parts(dataclasses.replace(a, dtype="bfloat16"))["approximate"] is True
    assert result_key("x", dataclasses.replace(a, fingerprint="abd"), benchmark="demo").digest != key.digest
    with pytest.raises(ValueError, match="reserved"):
        result_key("x", a, dtype="float16")


def test_no_model_based_scorer_builds_its_key_by_hand():
    """Only keys without a model (lexicons, tagging, a derived frame keyed by its run's digest) may call
    CacheKey.make directly; everything else goes through result_key."""
    root = Path(__file__).resolve().parents[2] / "biascore"
    allowed = {"store/cache.py", "store/keys.py", "methods/fields/tagging.py",
               "runs/runner.py"}  # the runner: a derived frame keyed by its stored result's digest
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if re.search(r"CacheKey\.make\(", p.read_text()) and str(p.relative_to(root)) not in allowed]
    assert offenders == []
