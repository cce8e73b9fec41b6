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

Two tiers (docs/testing.md): a test that starts processes — a browser, a Streamlit or reference server, Ray, a
CLI or Python helper — is marked ``slow`` here, from the fixtures it uses (:data:`SLOW_FIXTURES`, directly or
through a fixture of its own); a test that is neither ``slow`` nor ``shared`` (the hermetic core without
processes, the same set on every clone) is marked ``fast``: the fast tier is ``-m fast``. A test that is not
``slow`` but starts a process anyway fails (:func:`pytest_runtest_makereport`), so a new browser or server test
cannot slip into the fast tier: it asks for ``processes`` (or a fixture that does). Chromium, the demo dashboard, the reference server
and Ray are started once per session (per xdist worker), and the tests that share one run on one worker (their
``xdist_group``).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

# Idle OpenMP threads sleep instead of spinning, in the workers and every process a test starts (before any of them
# imports torch), as the dashboard (app.py) and the CLI run: two xdist workers, their Streamlit, reference servers
# and CLI runs share two cores, and spinning threads took CPU from the others (tests/cli, tests/runs and
# tests/methods/labdet on 2 workers, busy machine: 183 s spinning, 94 s passive).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
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
ADJUDICATOR = "Cara (browser)"  # the demo dashboard's BIASCORE_ADJUDICATORS (tests/views/test_e2e_browser.py)

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


#: fixture -> what a test using it (directly or through another fixture) waits on: conftest marks it ``slow``
#: with these reasons; ``processes`` is the one every process-starting fixture asks for
SLOW_FIXTURES = {"browser": "Chromium", "demo_dashboard": "a Streamlit server",
                 "reference_server": "the reference completions server", "ray_instance": "Ray",
                 "processes": "processes of its own"}
#: fixture (session-scoped, one per xdist worker) -> the xdist group of the tests sharing it
SHARED_GROUPS = {"ray_instance": "ray", "reference_server": "reference-server", "perturbed_server": "reference-server",
                 "demo_dashboard": "demo-dashboard"}


def slow_reasons(item) -> list[str]:
    """What a test waits on, read from the fixtures it uses (empty: it belongs to the fast tier)."""
    names = set(getattr(item, "fixturenames", ()))
    return [why for name, why in SLOW_FIXTURES.items() if name in names]


def _xdist_group(item) -> str | None:
    """The test's xdist group: the session resource it shares (``SHARED_GROUPS``), else its module when it uses a
    module-scoped fixture (so that fixture is built on one worker only), else none (any worker)."""
    names = set(getattr(item, "fixturenames", ()))
    for name, group in SHARED_GROUPS.items():
        if name in names:
            return group
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if defs and defs[-1].scope in ("module", "package", "class"):
            return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark every test that needs the shared files ``shared`` (before ``-m`` selects), remembering its needs; mark
    every test that starts processes ``slow`` (from its fixtures), every other hermetic test ``fast``, and give
    tests that share a fixture too costly to build twice one xdist group."""
    for item in items:
        needs = _needs(item)
        if needs:
            item.stash[_NEEDS] = needs
            if not item.get_closest_marker("shared"):
                item.add_marker(pytest.mark.shared(*sorted(needs)))
        reasons = slow_reasons(item)
        if reasons:
            item.add_marker(pytest.mark.slow(*reasons))
        elif not needs and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.fast)
        group = _xdist_group(item)
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
        if getattr(config.option, "loadgroup", False):
            group_in_node_id(item)
    items[:] = waiting_first(items)


def group_in_node_id(item) -> None:
    """On a pytest-xdist worker under ``--dist loadgroup`` the scheduler reads a test's group from an ``@group``
    suffix of the node id the worker reports. pytest-xdist 3.8 appends it by setting ``Node._nodeid``, which pytest
    9.2 no longer reads (the id is ``Node._id``): every test was then a work unit of its own, so both workers
    started a dashboard, Ray and a reference server, and built the module-scoped fixtures. Set it where it is read."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    if names and hasattr(item, "_id"):
        from _pytest.nodeid import NodeId
        item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


def waiting_first(items: list) -> list:
    """The modules with a ``slow`` test first, then those with a ``shared`` one (real models and data), then the
    hermetic rest; each module's tests together and in their order.

    pytest-xdist hands the work out in collection order, the next unit to whichever worker is free: long units
    handed out early and the many short hermetic tests last let both workers finish together (the longest-first
    rule), instead of one worker starting a browser test while the other has nothing left."""
    ranks = module_rank(items)
    return sorted(items, key=lambda item: ranks[item.nodeid.split("::")[0]])


def module_rank(items: list) -> dict[str, int]:
    """Each test module's place in :func:`waiting_first`: 0 with a ``slow`` test, 1 with a ``shared`` one, else 2."""
    ranks: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        rank = 0 if item.get_closest_marker("slow") else 1 if item.get_closest_marker("shared") else 2
        ranks[module] = min(rank, ranks.get(module, 2))
    return ranks


# ------------------------------------------------------------------------------------------------ the fast tier
_SPAWNED: list[str] | None = None  # the processes a fast-tier test started (None: not watching)
#: a library's quick look-up, allowed in the fast tier (lm-evaluation-harness asks `git describe` for its version)
QUICK_TOOLS = {"git", "uname", "ldconfig", "lscpu", "nvidia-smi"}
_popen_init = subprocess.Popen.__init__


def _watched_popen_init(self, args, *rest, **kwargs):
    argv = [str(a) for a in args] if isinstance(args, (list, tuple)) else str(args).split()
    if _SPAWNED is not None and argv and Path(argv[0]).name not in QUICK_TOOLS:
        _SPAWNED.append(" ".join(argv)[:200])
    _popen_init(self, args, *rest, **kwargs)


if not getattr(_popen_init, "_biascore_watch", False):  # once, also when a test imports this file as tests.conftest
    _watched_popen_init._biascore_watch = True
    subprocess.Popen.__init__ = _watched_popen_init


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Watch a fast-tier test (set-up, call and teardown) for processes it starts."""
    global _SPAWNED
    _SPAWNED = [] if not item.get_closest_marker("slow") else None
    try:
        yield
    finally:
        _SPAWNED = None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A fast-tier test that started a process fails, naming it: it belongs in the slow tier (ask for the
    ``processes`` fixture, or a fixture that starts the process and asks for it)."""
    outcome = yield
    report = outcome.get_result()
    if _SPAWNED and report.passed and call.when in ("call", "teardown"):
        report.outcome = "failed"
        report.longrepr = (f"{item.nodeid} is in the fast tier (no fixture of {sorted(SLOW_FIXTURES)}) but started "
                           f"a process: {_SPAWNED[0]}; ask for the `processes` fixture (tests/conftest.py)")
        _SPAWNED.clear()


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
    listed in BIASCORE_SKIPPED_SHARED_FILE when that is set). Under xdist the controller decides: it sees every
    worker's reports."""
    if hasattr(session.config, "workerinput"):
        return
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


# ------------------------------------------------------------------------------------------------ background loads
@pytest.fixture(autouse=True)
def _background_loads_end_with_their_test():
    """A model load a test started in the background (``ModelHandle.start_loading``: a page's default model, thread
    "load …") is waited for when the test ends, so its output (transformers' "Loading weights" bar on stderr) never
    lands in a later test's captured one-line error on the same worker."""
    yield
    import threading
    for thread in threading.enumerate():
        if thread.name.startswith("load ") and thread.is_alive():
            thread.join(timeout=300)


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
    os.environ["BIASCORE_SERVED_BACKOFF_S"] = "0"  # served clients retry at once: an unreachable host fails fast
    yield cache


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
def smollm_demo_frame(smollm, run_cache):
    """``smollm_demo_frame(prefix="published", limit=None)``: SmolLM2's in-process attribution frame of the demo pairs
    (the served-model tests' yardstick), scored once per run for each prefix and limit in :func:`run_cache` (the
    published, whole run is :func:`smollm_demo`'s key: scored once for both)."""
    from biascore.methods import get
    from biascore.runs import runner
    from biascore.store.cache import ResultCache

    cache, frames = ResultCache(run_cache), {}

    def frame(prefix: str = "published", limit: int | None = None):
        if (prefix, limit) not in frames:
            frames[prefix, limit] = runner.run(get("attribution"), smollm, "demo", prefix=prefix, limit=limit,
                                               cache=cache).frame
        return frames[prefix, limit]

    return frame


@pytest.fixture(scope="session")
def minilm():
    from biascore.models.loading import load_model
    return load_model("all-minilm-l6-v2")


@pytest.fixture(scope="session")
def demo_scores(smollm_demo, random_mlm):
    """The demo benchmark scored by the engine (into the session's private cache) with a causal and a masked
    model, both available on any clone (SmolLM2's: :func:`smollm_demo`, scored once per run)."""
    import torch

    from biascore.runs import runner
    from biascore.methods import get

    torch.set_num_threads(1)
    return {"smollm2-135m": smollm_demo["result"].frame,
            random_mlm.name: runner.run(get("attribution"), random_mlm, "demo").frame}


@pytest.fixture(scope="session")
def run_cache(tmp_path_factory) -> Path:
    """A result cache shared by the workers of this pytest run (the run's temporary folder; in one process, the
    session's): a key scored there is scored once per run — its file lock lets one worker compute it while the
    other waits and reads it — and :func:`copy_stored` puts the file into another cache."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "run-cache"
    root.mkdir(exist_ok=True)
    return root


def copy_stored(results, source: Path, cache: Path) -> None:
    """Each result's cache file copied from the cache folder ``source`` into ``cache``, at the path the cache gives
    its key (``ResultCache.path``): the engine finds it there (the file holds its key's digest, checked on every
    read); written whole, then renamed."""
    from biascore.runs.runner import key_of
    from biascore.store.cache import ResultCache

    src, dst = ResultCache(source), ResultCache(cache)
    for key in (key_of(r.meta) for r in results):
        target = dst.path(key)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src.path(key), target.with_suffix(".copy"))
        os.replace(target.with_suffix(".copy"), target)


def _scored_once(score, run_cache: Path, session_cache: Path):
    """What ``score(cache)`` returns first, scored into :func:`run_cache` with one torch thread on the session's data
    directory; the results it returns second are copied into the session's cache, where the session's pages find
    them."""
    import torch

    from biascore import settings
    from biascore.store.cache import ResultCache

    torch.set_num_threads(1)
    with settings.directories(str(DATA_DIR), str(session_cache)):  # whatever a module fixture set meanwhile
        value, results = score(ResultCache(run_cache))
    copy_stored(results, run_cache, session_cache)
    return value


@pytest.fixture(scope="session")
def smollm_demo(smollm, run_cache, _environment):
    """The demo benchmark scored by SmolLM2 (attribution) once per run (:func:`_scored_once`): the demo dashboard
    serves it and the snapshot's world exports a copy of it (``result``; ``cache``: the run's cache)."""
    from biascore.methods import get
    from biascore.runs import runner

    def score(cache):
        result = runner.run(get("attribution"), smollm, "demo", cache=cache)
        return result, [result]

    return {"result": _scored_once(score, run_cache, _environment), "cache": run_cache}


@pytest.fixture(scope="session")
def demo_aligned_scores(smollm, run_cache, _environment):
    """The shipped demo-aligned set (6 pairs × 10 languages) scored by SmolLM2 once per run (:func:`_scored_once`)
    by the engine's ``api.across_languages`` (``scores``; ``cache``: the run's cache): the pages that show it (the
    demo dashboard's Across languages, the bare snapshot's) read it instead of scoring the same 60 pairs live again.
    The page's own live scoring stays tested where it is the subject: the bare clone's walk (an empty cache), the
    bare snapshot (one language left to score, in memory) and tests/views/test_across_languages_page.py (a cache of
    its own)."""
    from biascore import api

    def score(cache):
        out = api.across_languages("demo-aligned", smollm, progress=False, cache_dir=cache.root)
        return out, list(out.results.values())

    return {"scores": _scored_once(score, run_cache, _environment), "cache": run_cache}


# ------------------------------------------------------------------------------------------------ processes
@pytest.fixture(scope="session")
def processes():
    """Declares that a test (or a fixture) starts processes: servers, browsers, Ray, the CLI or a Python helper.
    Such a test is in the slow tier (``slow``, from this fixture); a fast-tier test that starts one fails."""
    return subprocess


@pytest.fixture(scope="session")
def browser(processes):
    """Debian's Chromium driven by Playwright, launched once per session (once per xdist worker); each test opens
    its own pages or browser contexts and closes them; every page keeps count of its script runs for
    :func:`waits.wait_idle`. Skips without Chromium (.ci/install-browser.sh)."""
    from dashboard_server import CHROMIUM, LAUNCH_ARGS
    from waits import RunsBrowser

    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        yield RunsBrowser(b)
        b.close()


@pytest.fixture(scope="session")
def reference_server(processes):
    """The faithful reference completions server (tests/served_reference.py: vLLM's protocol, SmolLM2 in float32),
    started once per session and shared by the tests of served models (one xdist group)."""
    from served_reference import serving

    yield from serving()


@pytest.fixture(scope="session")
def perturbed_server(processes):
    """A reference server of SmolLM2 with other weights under the same name (``--perturb 1``), started once per
    session for the served tests that need another model (with the reference server's xdist group)."""
    from served_reference import serving

    yield from serving("--perturb", "1")


@pytest.fixture(scope="session")
def ray_instance(processes):
    """A local Ray instance (2 CPUs), started once per session for the sweep's Ray tests (one xdist group)."""
    import ray

    ray.init(num_cpus=2, include_dashboard=False)
    yield ray
    ray.shutdown()


@pytest.fixture(scope="session")
def demo_dashboard(smollm_demo, demo_aligned_scores, tmp_path_factory, processes):
    """`streamlit run app.py` on a free loopback port, once per session, over the session cache with the demo
    benchmark (:func:`smollm_demo`) and the demo-aligned set (:func:`demo_aligned_scores`) scored by SmolLM2, a
    review database of its own
    and an adjudicator (``ADJUDICATOR``): the browser tests of tests/views/test_e2e_browser.py and the Words page's
    share it (one xdist group)."""
    from dashboard_server import dashboard

    review_db = tmp_path_factory.mktemp("reviews") / "reviews.sqlite"
    log = tmp_path_factory.mktemp("streamlit") / "streamlit.log"
    with dashboard(log, BIASCORE_REVIEW_DB=str(review_db), BIASCORE_ADJUDICATORS=ADJUDICATOR) as url:
        yield {"url": url, "review_db": review_db}
