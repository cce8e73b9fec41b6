"""A run is visible from its first second (biascore.runs.announce), with real processes on one cache: announced
before its model loads ("converting the model" while a GGUF conversion is held), one process computing while the
others wait, a failure's line, and a killed run's announcement cleared. Every wait is for the event itself,
with one generous overall deadline."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from biascore.runs import announce
from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.runs.runner import computing, selection
from biascore.methods import get
from gated_model import GatedGguf

REPO = Path(__file__).resolve().parents[2]
DEADLINE_S = 600  # a generous overall limit only: every wait below ends on the event itself

#: one run of the attribution method on the demo pairs; with a gate file, every progress report waits for it; with
#: a start file, the run (not the interpreter: its imports are done) begins once that file exists
RUN = """
import pathlib, sys, time
from biascore.runs import runner
from biascore.methods import get
gate, start = (pathlib.Path(a) if a else None for a in (sys.argv[2:] + ["", ""])[:2])
def progress(done, total):
    while gate is not None and not gate.exists():
        time.sleep(0.05)
while start is not None and not start.exists():
    time.sleep(0.05)
runner.run(get("attribution"), sys.argv[1], "demo", shard_size=4, progress=progress)
print("stored", flush=True)
"""


def _start(model: str, cache: Path, gate: Path | None = None, start: Path | None = None) -> subprocess.Popen:
    env = {**os.environ, "BIASCORE_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-c", RUN, model, str(gate or ""), str(start or "")]
    log = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty run never blocks on a full pipe
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    proc.log = log
    return proc


def _output(proc: subprocess.Popen) -> str:
    proc.log.seek(0)
    return proc.log.read()[-3000:]


def _until(what: str, look, procs=()):
    """Look again until ``look()`` gives something true (returned); fails at the overall deadline or when one
    of ``procs`` has died."""
    end = time.monotonic() + DEADLINE_S
    while True:
        found = look()
        if found:
            return found
        for p in procs:
            assert p.poll() is None, f"a run ended while waiting for {what}: {_output(p)}"
        assert time.monotonic() < end, f"never saw {what}"
        time.sleep(0.1)


def _stop(*procs: subprocess.Popen) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait()


@pytest.fixture
def cache(tmp_path, monkeypatch) -> ResultCache:
    root = tmp_path / "cache"
    root.mkdir()
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(root))
    return ResultCache(root)


def test_a_run_is_announced_before_its_model_loads(hermetic_models, cache, tmp_path, processes):
    """A GGUF model whose conversion is held by the test: the run is announced as "converting the model" (no key
    yet: the model's identity needs the load) and a page's selection finds it by its tag; once converted it
    scores, stores, and leaves no live announcement."""
    with GatedGguf(tmp_path / "gguf", cache.root, hermetic_models / "random-mlm") as gguf:
        page = selection(get("attribution"), str(gguf.path), "demo")
        assert page.key is None and not page.stored(cache)  # the page cannot know the key before the conversion
        run = _start(str(gguf.path), cache.root)
        try:  # past "starting", the state every run has for the moment before it says what it does
            seen = _until("the run announced", lambda: [a for a in page.runs(cache) if a.state != announce.STARTING],
                          [run])
            assert [a.state for a in seen] == [announce.CONVERTING]
            assert seen[0].digest is None and seen[0].pid == run.pid and seen[0].input == "demo"
            assert not list(gguf.converted.parent.glob(gguf.converted.name))  # nothing was converted or loaded
            gguf.convert()
            assert run.wait(DEADLINE_S) == 0, _output(run)
        finally:
            _stop(run)
    assert page.runs(cache) == []
    assert selection(get("attribution"), str(gguf.path), "demo").stored(cache)
    assert not list((cache.root / announce.FOLDER).glob("*.lock"))


def test_one_process_computes_while_the_others_wait(hermetic_models, cache, tmp_path, processes):
    model = str(hermetic_models / "random-mlm")
    gate = tmp_path / "gate"
    page = selection(get("attribution"), model, "demo")
    runs = [_start(model, cache.root, gate) for _ in range(3)]
    try:
        def states():
            found = page.runs(cache)
            kinds = sorted(a.state for a in found)
            return found if kinds == [announce.SCORING] + [announce.WAITING] * 2 else None

        found = _until("one run scoring and two waiting", states, runs)
        scoring = next(a for a in found if a.state == announce.SCORING)
        assert scoring.total == 38 and scoring.digest == page.key.digest
        assert announce.furthest(found) == scoring
        assert computing(get("attribution"), model, "demo", cache=cache) == scoring  # the runner's door says so
        assert {a.pid for a in found} == {r.pid for r in runs}
        gate.touch()
        for r in runs:
            assert r.wait(DEADLINE_S) == 0, _output(r)
    finally:
        _stop(*runs)
    assert page.stored(cache)
    assert page.runs(cache) == []
    assert len(list((cache.root / "attribution").glob("*.parquet"))) == 1


def test_a_killed_run_leaves_no_announcement(hermetic_models, cache, tmp_path, processes):
    """SIGKILL a run that holds the key and scores, and one that waits for it: both announcements are cleared
    by the next reader (their locks died with them), and a new run, begun after the kill, is not blocked. (The
    three interpreters start together; the third begins its run only when told.)"""
    model = str(hermetic_models / "random-mlm")
    gate, go = tmp_path / "gate", tmp_path / "go"
    page = selection(get("attribution"), model, "demo")
    killed = [_start(model, cache.root, gate) for _ in range(2)]
    again = _start(model, cache.root, gate, start=go)
    try:
        def states():
            found = page.runs(cache)
            return found if sorted(a.state for a in found) == [announce.SCORING, announce.WAITING] else None

        found = _until("one run scoring and the other waiting", states, killed + [again])
        assert {a.pid for a in found} == {p.pid for p in killed}
        for p in killed:
            p.send_signal(signal.SIGKILL)
        # not reaped yet (zombies: their pids still answer): their released locks tell
        _until("the killed runs' announcements cleared", lambda: page.runs(cache) == [], [again])
        assert not list((cache.root / announce.FOLDER).glob("*.json"))
        assert not list((cache.root / announce.FOLDER).glob("*.lock"))
        _stop(*killed)
        gate.touch()
        go.touch()
        assert again.wait(DEADLINE_S) == 0, _output(again)
    finally:
        _stop(*killed, again)
    assert page.stored(cache) and page.runs(cache) == []


def test_a_failed_run_says_why_and_then_goes(cache, tmp_path, monkeypatch):
    """A model that cannot load: the announcement ends as "failed" with the error's line (no server path),
    stays readable for a while (:data:`announce.LINGER_S`), then is cleared."""
    from biascore.models.loading import ModelLoadError
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file")
    with pytest.raises(ModelLoadError):
        runner.run(get("attribution"), str(broken), "demo")
    page = selection(get("attribution"), str(broken), "demo")
    assert page.runs(cache) == []  # nothing live
    (failed,) = page.runs(cache, live_only=False)
    assert failed.state == announce.FAILED and failed.error and str(tmp_path) not in failed.error
    assert failed.describe().startswith("failed: ")
    monkeypatch.setattr(announce, "LINGER_S", 0.0)
    assert page.runs(cache, live_only=False) == []
    assert not list((cache.root / announce.FOLDER).iterdir())


def test_a_cached_result_announces_nothing(random_mlm, cache):
    runner.run(get("attribution"), random_mlm, "demo", cache=cache)
    for path in (cache.root / announce.FOLDER).glob("*.json"):
        path.unlink()
    runner.run(get("attribution"), random_mlm, "demo", cache=cache)  # a cache hit: nothing to announce
    assert not list((cache.root / announce.FOLDER).glob("*.json"))
