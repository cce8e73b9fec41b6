"""Shared fixtures: the data directory, a private cache per test session, and the models (loaded once per session).

Two kinds of test (docs/reproducibility.md, README "Run the tests"):

* the **hermetic core** runs on any clone: seeded random models built from small configs (tests/tiny_models.py),
  the PyPI-shipped SmolLM2 and MiniLM, the shipped ``demo`` benchmark and the small data the project writes
  itself (tests/fixtures/data, a data directory of its own: :func:`fixture_data`);
* tests that need the **shared files** — the public benchmark files (``python -m biascore data download``), the
  tiny trained MLM and the published-code reference outputs (both only in the project's shared folder,
  ``../shared`` or ``BIASCORE_SHARED``) — carry the ``shared`` marker, added here from the fixtures they use
  (``data_dir``, ``tiny_mlm``, ``reference_dir``) or written on the test, and skip with one line naming what is
  missing and where it comes from. With ``BIASCORE_REQUIRE_SHARED=1`` (CI, where ../shared is present) a missing
  file fails them instead, and any skipped ``shared`` test fails the session.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("BIASCORE_SHARED", REPO.parent / "shared"))


def _data_dir() -> Path:
    """BIASCORE_DATA_DIR, else ../shared/data, else where `python -m biascore data download` puts the files."""
    if os.environ.get("BIASCORE_DATA_DIR"):
        return Path(os.environ["BIASCORE_DATA_DIR"])
    shared = SHARED / "data"
    return shared if shared.is_dir() or not (REPO / "data" / "downloads").is_dir() else REPO / "data" / "downloads"


DATA_DIR = _data_dir()
TINY_MLM = SHARED / "models" / "tiny-trained-bert-mlm"
REFERENCE_DIR = DATA_DIR / "reference"
FIXTURE_DATA = REPO / "tests" / "fixtures" / "data"

REQUIRE_SHARED = os.environ.get("BIASCORE_REQUIRE_SHARED", "").strip().lower() in {"1", "true", "yes", "on"}
#: fixture -> the shared files it needs (a test using one of them is marked ``shared`` with those needs)
FIXTURE_NEEDS = {"data_dir": "data", "tiny_mlm": "tiny_mlm", "reference_dir": "reference"}


def _public_data_files() -> list[str]:
    manifest = json.loads((REPO / "data" / "downloads.json").read_text())
    return [f["path"] for f in manifest["files"] if f.get("url")]


def missing_shared(needs) -> list[str]:
    """The needs (``data``, ``tiny_mlm``, ``reference``) whose files are not on this machine, described."""
    out = []
    for need in needs:
        if need == "data":
            absent = [p for p in _public_data_files() if not (DATA_DIR / p).is_file()]
            if absent:
                out.append(f"the benchmark data ({len(absent)} files missing from {DATA_DIR})")
        elif need == "tiny_mlm":
            if not (TINY_MLM / "config.json").is_file():
                out.append(f"the tiny trained MLM ({TINY_MLM})")
        elif need == "reference":
            if not (REFERENCE_DIR / "tiny_mlm_scores.csv").is_file():
                out.append(f"the published-code reference outputs ({REFERENCE_DIR})")
        else:
            raise ValueError(f"unknown shared need {need!r}")
    return out


def shared_skip_line(missing: list[str]) -> str:
    """One line: what is missing, and where each kind of file comes from."""
    return (f"needs {' and '.join(missing)}: the benchmark files come from `python -m biascore data download` "
            "(read from BIASCORE_DATA_DIR, ../shared/data or data/downloads), the tiny trained MLM and the reference "
            "outputs with the project's shared folder (../shared or BIASCORE_SHARED)")


def _needs(item) -> set[str]:
    needs = {FIXTURE_NEEDS[f] for f in getattr(item, "fixturenames", ()) if f in FIXTURE_NEEDS}
    for mark in item.iter_markers("shared"):
        needs |= set(mark.args) or {"data"}
    return needs


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test that needs the shared files ``shared`` (before ``-m`` selects), remembering its needs."""
    for item in items:
        needs = _needs(item)
        if needs:
            item.stash[_NEEDS] = needs
            if not item.get_closest_marker("shared"):
                item.add_marker(pytest.mark.shared(*sorted(needs)))


_NEEDS = pytest.StashKey[set]()
_SKIPPED_SHARED: list[str] = []


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    missing = missing_shared(sorted(item.stash.get(_NEEDS, set())))
    if missing:
        line = shared_skip_line(missing)
        if REQUIRE_SHARED:
            pytest.fail("BIASCORE_REQUIRE_SHARED=1 but this test " + line, pytrace=False)
        pytest.skip(line)


def pytest_runtest_logreport(report):
    if report.skipped and "shared" in report.keywords and "gpu" not in report.keywords:
        _SKIPPED_SHARED.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    """Under BIASCORE_REQUIRE_SHARED=1 every ``shared`` test must have run: a skipped one fails the session (and is
    listed in BIASCORE_SKIPPED_SHARED_FILE when that is set)."""
    listing = os.environ.get("BIASCORE_SKIPPED_SHARED_FILE")
    if listing:
        Path(listing).write_text("".join(f"{nodeid}\n" for nodeid in _SKIPPED_SHARED))
    if REQUIRE_SHARED and _SKIPPED_SHARED and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter):
    if REQUIRE_SHARED and _SKIPPED_SHARED:
        terminalreporter.write_line(f"BIASCORE_REQUIRE_SHARED=1: {len(_SKIPPED_SHARED)} test(s) marked shared were "
                                    "skipped: " + ", ".join(_SKIPPED_SHARED), red=True)


def _fresh_cache(cache: Path) -> Path:
    """An empty result cache whose models folder is the project's (GGUF conversions are slow: reuse them)."""
    models = REPO / "cache" / "models"
    models.mkdir(parents=True, exist_ok=True)
    (cache / "models").symlink_to(models, target_is_directory=True)
    return cache


# ------------------------------------------------------------------------------------------------ environment
@pytest.fixture(scope="session", autouse=True)
def _environment(tmp_path_factory):
    """Point the engine at the data directory and a fresh cache; keep converted GGUF models across runs."""
    os.environ["BIASCORE_DATA_DIR"] = str(DATA_DIR)
    cache = _fresh_cache(tmp_path_factory.mktemp("cache"))
    os.environ["BIASCORE_CACHE_DIR"] = str(cache)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ["BIASCORE_RAISE_PAGE_ERRORS"] = "1"  # a page that crashes fails its test (app.py would show one line)
    yield


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A cache of the test's own: what a test stores there (a served or quantized model's results) stays out of the
    session's cache, whose models the page tests list and count."""
    cache = tmp_path / "private-cache"
    cache.mkdir()
    _fresh_cache(cache)
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(cache))
    return cache


# ------------------------------------------------------------------------------------------------ shared files
@pytest.fixture(scope="session")
def data_dir() -> Path:
    """The public benchmark files (``shared``: the test skips without them)."""
    return DATA_DIR


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    """The published code's outputs (``shared``)."""
    return REFERENCE_DIR


@pytest.fixture(scope="session")
def tiny_mlm():
    """The tiny trained BERT MLM of ../shared/models (``shared``)."""
    from biascore.models.loading import load_model
    return load_model(str(TINY_MLM))


# ------------------------------------------------------------------------------------------------ hermetic
#: Parameters for a test that runs on a masked LM (``request.getfixturevalue(name)``): the hermetic random one
#: always, the tiny trained one (peaked predictions, P up to ≈ 1) where ../shared is present.
MASKED_LMS = [pytest.param("random_mlm", id="random_mlm"),
              pytest.param("tiny_mlm", id="tiny_mlm", marks=pytest.mark.shared("tiny_mlm"))]


@pytest.fixture
def fixture_data(monkeypatch) -> Path:
    """tests/fixtures/data as the data directory for one test: small files the project wrote itself, laid out
    like the real data directory (tests/fixtures/README.md)."""
    monkeypatch.setenv("BIASCORE_DATA_DIR", str(FIXTURE_DATA))
    return FIXTURE_DATA


@pytest.fixture(scope="session")
def hermetic_models(tmp_path_factory) -> Path:
    """A folder with the seeded random models of tests/tiny_models.py, saved once per session."""
    from tiny_models import save_random_causal_lm, save_random_encoder, save_random_llama, save_random_masked_lm

    root = tmp_path_factory.mktemp("hermetic-models")
    for name, make in (("random-mlm", save_random_masked_lm), ("random-gpt2", save_random_causal_lm),
                       ("random-llama", save_random_llama), ("random-encoder", save_random_encoder)):
        make(root / name)
    return root


def _load(folder: Path):
    from biascore.models.loading import load_model
    return load_model(str(folder))


@pytest.fixture(scope="session")
def random_mlm(hermetic_models):
    """A seeded random BERT masked LM (2 layers × 4 heads) with MiniLM's WordPiece tokenizer (hermetic)."""
    return _load(hermetic_models / "random-mlm")


@pytest.fixture(scope="session")
def random_causal(hermetic_models):
    """A seeded random 2-layer GPT-2 with MiniLM's WordPiece tokenizer (hermetic)."""
    return _load(hermetic_models / "random-gpt2")


@pytest.fixture(scope="session")
def random_llama(hermetic_models):
    """A seeded random Llama-shaped causal LM with grouped-query attention (hermetic)."""
    return _load(hermetic_models / "random-llama")


@pytest.fixture(scope="session")
def random_encoder(hermetic_models):
    """A seeded random plain BERT encoder without an LM head (hermetic)."""
    return _load(hermetic_models / "random-encoder")


@pytest.fixture(scope="session")
def smollm():
    from biascore.models.loading import load_model
    return load_model("smollm2-135m")


@pytest.fixture(scope="session")
def minilm():
    from biascore.models.loading import load_model
    return load_model("all-minilm-l6-v2")


@pytest.fixture(scope="session")
def demo_scores(smollm, random_mlm):
    """The demo benchmark scored by the engine (into the session's private cache) with a causal and a masked
    model, both available on any clone."""
    import torch

    from biascore.runs import runner
    from biascore.methods import get

    torch.set_num_threads(1)
    return {name: runner.run(get("attribution"), lm, "demo").frame
            for name, lm in (("smollm2-135m", smollm), (random_mlm.name, random_mlm))}
