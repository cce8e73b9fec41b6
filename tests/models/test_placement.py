"""Split models (``device_map`` / ``max_memory`` / ``offload_folder``): a model whose layers sit partly on the CPU
and partly on disk gives the one-device numbers within the reproducibility contract (docs/reproducibility.md),
for the attribution scores of a causal and a masked LM (hermetic models and SmolLM2) and for the heads method's
gradients; the placement is recorded in the result, the cache key is the one-device key; bad options are one line.
"""
from __future__ import annotations

import numpy as np
import pytest

import biascore
from biascore.cli.main import main
from biascore.store.cache import ResultCache
from biascore.models.handle import ModelHandle
from biascore.models.placement import Placement, PlacementError, parse_max_memory
from biascore.runs.runner import model_key, resolve_input
from biascore.methods import get
from reproducibility_contract import compare_frames
from conftest import FIXTURE_DATA

#: the hermetic GPT-2's word embeddings (tied to its head) take 3.9 MB: a 4 MB CPU budget holds them and the first
#: block, and sends the rest to disk
GPT2_SPLIT = {"cpu": "4MB"}
#: the masked LM by an explicit map (accelerate's "auto" map trips over BERT's tied decoder at some budgets in
#: transformers 5.24): embeddings, the first layer and the head on the CPU, the second layer on disk
MLM_SPLIT = {"bert.embeddings": "cpu", "bert.encoder.layer.0": "cpu", "bert.encoder.layer.1": "disk", "cls": "cpu"}


def _split(folder, **placement) -> ModelHandle:
    return ModelHandle(str(folder), placement=Placement.make(**placement))


def _assert_on_cpu_and_disk(handle: ModelHandle) -> dict:
    placed = handle.load().extra["placement"]
    assert placed["modules_per_device"].get("cpu") and placed["modules_per_device"].get("disk"), placed
    return placed


def _attribution(handle, tmp_path, name, **kw):
    return biascore.run("attribution", handle, "demo", progress=False, cache_dir=tmp_path / name, **kw)


@pytest.mark.parametrize("model, placement", [("random-gpt2", {"device_map": "auto", "max_memory": GPT2_SPLIT}),
                                              ("random-mlm", {"device_map": MLM_SPLIT})])
def test_split_attribution_equals_one_device(model, placement, hermetic_models, tmp_path):
    one = _attribution(ModelHandle(str(hermetic_models / model)), tmp_path, "one")
    split_handle = _split(hermetic_models / model, **placement)
    placed = _assert_on_cpu_and_disk(split_handle)
    split = _attribution(split_handle, tmp_path, "split")
    agreement = compare_frames(one.frame, split.frame)
    assert agreement.within_contract, agreement.problems
    assert agreement.flips == 0 and agreement.pairs == len(one.frame)
    # the placement is recorded in the result; the key is the one-device key (same digest)
    assert split.placement == placed and split.describe()["placement"] == placed
    assert "offload_folder" in placed and not one.placement
    assert split.digest == one.digest and split.precision == "exact (float32)"


def test_split_shares_the_one_device_cache_entry(hermetic_models, tmp_path):
    """A split run is answered from the one-device run's cache entry without loading anything (and the reverse),
    because its numbers equal it within the contract."""
    cache = tmp_path / "shared"
    biascore.run("attribution", ModelHandle(str(hermetic_models / "random-gpt2")), "demo", progress=False,
                 cache_dir=cache)
    split = _split(hermetic_models / "random-gpt2", device_map="auto", max_memory=GPT2_SPLIT)
    again = biascore.run("attribution", split, "demo", progress=False, cache_dir=cache, only_cached=True)
    assert again is not None and not split.loaded
    m = get("attribution")
    loaded = resolve_input(m, "demo", None, None)
    opts = m.Options.build()
    assert model_key(m, split.identity(), loaded, opts) == model_key(
        m, ModelHandle(str(hermetic_models / "random-gpt2")).identity(), loaded, opts)


def test_split_heads_gradients_equal_one_device(hermetic_models):
    """The heads method differentiates |SEAT effect size| through the CPU and the disk-offloaded layers."""
    from biascore.inputs.seat_tests import load_seat_test
    from biascore.methods.heads.scorer import head_score_matrix

    test = load_seat_test(str(FIXTURE_DATA / "seat" / "names-career-family.jsonl"))
    one = ModelHandle(str(hermetic_models / "random-gpt2")).load()
    split = _split(hermetic_models / "random-gpt2", device_map="auto", max_memory=GPT2_SPLIT)
    _assert_on_cpu_and_disk(split)
    b_one, es_one = head_score_matrix(one, test)
    b_split, es_split = head_score_matrix(split.load(), test)
    assert abs(es_split - es_one) <= 1e-4 * max(abs(es_one), 1e-7)
    np.testing.assert_allclose(b_split, b_one, rtol=1e-4, atol=1e-4 * np.abs(b_one).max())


def test_split_smollm2_equals_one_device(smollm, tmp_path):
    """SmolLM2 with a 300 MiB CPU budget (the issue's example): embeddings and the first layers on the CPU, the
    rest on disk."""
    split = ModelHandle("smollm2-135m", placement=Placement.make("auto", "cpu=300MiB"))
    placed = _assert_on_cpu_and_disk(split)
    assert placed["max_memory"] == {"cpu": "300MiB"}
    one = _attribution(ModelHandle.of(smollm), tmp_path, "one", limit=8)
    got = _attribution(split, tmp_path, "split", limit=8)
    agreement = compare_frames(one.frame, got.frame)
    assert agreement.within_contract, agreement.problems
    assert got.digest == one.digest


def test_offload_folder_is_created_and_removed(hermetic_models, tmp_path):
    import gc
    from pathlib import Path

    handle = _split(hermetic_models / "random-gpt2", device_map="auto", max_memory=GPT2_SPLIT)
    folder = Path(_assert_on_cpu_and_disk(handle)["offload_folder"])
    assert folder.is_dir() and folder.parent.name == "offload"
    handle.release()
    gc.collect()
    assert not folder.exists()
    own = tmp_path / "mine"
    handle = _split(hermetic_models / "random-gpt2", device_map="auto", max_memory=GPT2_SPLIT, offload_folder=own)
    assert _assert_on_cpu_and_disk(handle)["offload_folder"] == str(own.resolve())
    handle.release()
    gc.collect()
    assert own.is_dir()  # the user's own folder is left alone


def test_placement_options_are_parsed_and_checked():
    assert parse_max_memory("cpu=300MiB, 0=10GiB") == {"cpu": "300MiB", 0: "10GiB"}
    assert parse_max_memory({"cuda:1": "2GB"}) == {1: "2GB"}
    assert Placement.make() is None
    assert Placement.make(max_memory="cpu=1GB").device_map == "auto"  # a budget alone implies auto
    assert Placement.make('{"model.embed_tokens": 0, "lm_head": "cpu"}').compute_device_type() == "cuda"
    assert Placement.make({"": "cpu"}).compute_device_type() == "cpu"
    for bad in ("cpu=lots", "cpu", "tpu=1GB"):
        with pytest.raises(PlacementError):
            parse_max_memory(bad)
    with pytest.raises(PlacementError):
        Placement.make("everywhere")


@pytest.mark.parametrize("argv, needle", [
    (["--max-memory", "cpu=lots"], "not a size"),
    (["--device-map", "everywhere"], "--device-map must be one of"),
    (["--device-map", "auto", "--quantize", "int8"], "cannot be combined"),
])
def test_bad_placement_options_are_one_line_errors(argv, needle, hermetic_models, capsys):
    rc = main(["score", "--model", str(hermetic_models / "random-gpt2"), "--benchmark", "demo", "--limit", "2", *argv])
    assert rc == 2  # the CLI's one-line error, as for compare's two models (spec_from_args raises, main answers 2)
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0], err


def test_cli_split_run_prints_the_one_device_numbers(hermetic_models, tmp_path, capsys):
    argv = ["score", "--model", str(hermetic_models / "random-gpt2"), "--benchmark", "demo", "--limit", "6",
            "--cache-dir"]
    assert main(argv + [str(tmp_path / "a")]) == 0
    one = capsys.readouterr().out
    assert main(argv + [str(tmp_path / "b"), "--device-map", "auto", "--max-memory", "cpu=4MB"]) == 0
    split = capsys.readouterr().out
    assert "exact (float32" in split
    assert [ln for ln in split.splitlines() if "%" in ln] == [ln for ln in one.splitlines() if "%" in ln]
    assert ResultCache(tmp_path / "b").entries("attribution")


def test_split_attention_weights_equal_one_device(hermetic_models):
    """heads-counter reads attention weights through an eager-attention view of the (split) model."""
    from biascore.methods.heads.counter_stereotype import sentence_attentions

    one = ModelHandle(str(hermetic_models / "random-gpt2")).load()
    split = _split(hermetic_models / "random-gpt2", device_map="auto", max_memory=GPT2_SPLIT)
    _assert_on_cpu_and_disk(split)
    text = "The nurse said she was tired."
    a, b = sentence_attentions(one, text)[1], sentence_attentions(split.load(), text)[1]
    np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-7)
