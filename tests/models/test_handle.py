"""A model handle's background load (the dashboard starts the default model's first load with the server's first
page): a caller of ``load`` meanwhile waits for that same load, and a failed one is not tried again.

The model is a "GGUF file" whose conversion the test holds (tests/gated_model.py): the background load stays in its
conversion until the test lets it go, so nothing here depends on timing."""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from biascore.models.handle import ModelHandle
from biascore.models.loading import ModelLoadError
from gated_model import GatedGguf


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _loaders() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("load ")]


def test_a_load_started_in_the_background_is_the_one_a_caller_waits_for(hermetic_models, cache, tmp_path):
    with GatedGguf(tmp_path / "gguf", cache, hermetic_models / "random-mlm") as gguf:
        handle = ModelHandle(str(gguf.path))
        assert handle.converts and handle.loading_since is None
        assert handle.load_line("gated") == \
            "Converting gated from its GGUF file (first use on this machine only, a few seconds)"
        handle.start_loading()
        handle.start_loading()  # a second page while it loads: nothing more
        assert handle.loading_since is not None and len(_loaders()) == 1
        with ThreadPoolExecutor(1) as pool:
            pressed = pool.submit(handle.load)  # "Score now", while the background load waits for the conversion
            assert not pressed.done()
            gguf.convert()
            lm = pressed.result(timeout=120)
    for thread in _loaders():
        thread.join(120)
    assert handle.loads == 1 and handle.load() is lm and handle.loading_since is None
    assert handle.load_line() == f"Loading {gguf.path}" and not handle.converts
    handle.start_loading()  # loaded: nothing to start
    assert handle.loading_since is None and not _loaders()


def test_a_background_load_that_fails_is_not_tried_again(cache, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    handle = ModelHandle(str(broken))
    handle.start_loading()
    for thread in _loaders():
        thread.join(120)
    assert isinstance(handle.load_error, ModelLoadError) and handle.loading_since is None
    handle.start_loading()
    assert handle.loading_since is None and not _loaders()
    with pytest.raises(ModelLoadError) as raised:
        handle.load()
    assert raised.value is handle.load_error and handle.loads == 0


def test_an_identity_asked_during_the_load_is_the_loaded_models(hermetic_models, cache, tmp_path, monkeypatch):
    """"Score now" pressed during the first load asks the identity (the cache key) first: it waits for the load and
    then takes the loaded model's, without reading the model's files again (the tokenizer load that costs)."""
    import biascore.models.handle as handle_module

    read = []
    monkeypatch.setattr(handle_module, "model_identity", lambda *a, **k: read.append(a) or None)
    with GatedGguf(tmp_path / "gguf", cache, hermetic_models / "random-mlm") as gguf:
        handle = ModelHandle(str(gguf.path))
        handle.start_loading()
        while not handle._lock.locked() and handle.loading_since is not None:  # the load holds it, held by the gate
            threading.Event().wait(0.01)
        with ThreadPoolExecutor(1) as pool:
            asked = pool.submit(handle.known_identity)
            gguf.convert()
            identity = asked.result(timeout=120)
    for thread in _loaders():
        thread.join(120)
    assert identity is not None and identity == handle.load().identity() and read == []
