"""Shared fixtures: the data directory (../shared/data by default), a private cache per test session,
and the models that exist on disk here (loaded once per session)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))
DATA_DIR = Path(os.environ.get("BIASCORE_DATA_DIR", SHARED / "data"))
TINY_MLM = SHARED / "models" / "tiny-trained-bert-mlm"


@pytest.fixture(scope="session", autouse=True)
def _environment(tmp_path_factory):
    """Point the engine at the shared data and a fresh cache; keep converted GGUF models across runs."""
    os.environ["BIASCORE_DATA_DIR"] = str(DATA_DIR)
    cache = tmp_path_factory.mktemp("cache")
    models = REPO / "cache" / "models"  # GGUF conversions are slow: reuse the project's converted copies
    models.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(models, target_is_directory=True)
    os.environ["BIASCORE_CACHE_DIR"] = str(cache)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["BIASCORE_RAISE_PAGE_ERRORS"] = "1"  # a page that crashes fails its test (app.py would show one line)
    yield


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not DATA_DIR.exists():
        pytest.fail(f"benchmark data not found at {DATA_DIR}; set BIASCORE_DATA_DIR")
    return DATA_DIR


@pytest.fixture(scope="session")
def tiny_mlm():
    from biascore.core.models import load_model
    return load_model(str(TINY_MLM))


@pytest.fixture(scope="session")
def smollm():
    from biascore.core.models import load_model
    return load_model("smollm2-135m")


@pytest.fixture(scope="session")
def minilm():
    from biascore.core.models import load_model
    return load_model("all-minilm-l6-v2")


@pytest.fixture(scope="session")
def demo_scores(smollm, tiny_mlm):
    """The demo benchmark scored by the engine (into the session's private cache) with two models."""
    import torch

    from biascore.methods.attribution.scorer import score_benchmark

    torch.set_num_threads(1)
    return {"smollm2-135m": score_benchmark(smollm, "demo"), tiny_mlm.name: score_benchmark(tiny_mlm, "demo")}
