"""A run is visible from its first second, to everyone (Debian Chromium + Playwright on a real `streamlit run app.py`):

* a tab presses "Score now" (and the command line asks for the same result) for a model whose first load is
  still converting it; a third tab opened meanwhile shows that run's state (no "Score now"), then its result,
  without any click;
* a page that says "not scored yet" shows a result the command line stores later, without any click;
* a page following a command-line run that is killed (SIGKILL) offers "Score now" again by itself.

The model is a "GGUF file" whose conversion the test holds (tests/gated_model.py): the runs stay in "converting
the model" until the test lets them go, so no wait here depends on timing; every wait is for the event itself
under one generous limit.
"""
from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from biascore.models.loading import resolve_source
from biascore.settings import DEFAULT_MODEL
from dashboard_server import CHROMIUM, dashboard
from gated_model import GatedGguf
from test_e2e_browser import assert_no_errors

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = "demo"  # built in (38 pairs)
WAIT_MS = 300_000  # one generous limit for each awaited event (busy CI machines); never a fixed sleep

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")


def _cli_score(model: str, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "BIASCORE_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO)}
    log = tempfile.TemporaryFile("w+")
    proc = subprocess.Popen([sys.executable, "-m", "biascore", "score", "--model", model, "--benchmark", BENCHMARK],
                            cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    proc.log = log
    return proc


def _output(proc: subprocess.Popen) -> str:
    proc.log.seek(0)
    return proc.log.read()[-3000:]


@contextlib.contextmanager
def _pages(browser):
    """``open(url, model)``: a new tab of the session's browser on the model's Token attributions; every tab
    opened is closed when the block ends."""
    opened = []

    def open_(url: str, model: str):
        page = browser.new_page(viewport={"width": 1400, "height": 2000})
        opened.append(page)
        page.goto(f"{url}/token_attributions?benchmark={BENCHMARK}&model={model}", wait_until="domcontentloaded")
        return page

    try:
        yield open_
    finally:
        for page in opened:
            page.close()


def _announced(cache: Path, model: str, n: int):
    """The announcements of the model's demo run, once there are ``n`` of them (the engine's own reading)."""
    from biascore.store.cache import ResultCache
    from biascore.runs.runner import selection
    from biascore.methods import get

    sel = selection(get("attribution"), model, BENCHMARK)
    found = sel.runs(ResultCache(cache))
    return found if len(found) >= n else None


def _until(look, what: str, procs=()):
    import time

    end = time.monotonic() + WAIT_MS / 1000
    while not (found := look()):
        for p in procs:
            assert p.poll() is None, f"ended while waiting for {what}: {_output(p)}"
        assert time.monotonic() < end, f"never saw {what}"
        time.sleep(0.2)
    return found


@contextlib.contextmanager
def _reaped(proc):
    """Kill and reap ``proc()`` (a process or None) when the block ends."""
    try:
        yield
    finally:
        p = proc()
        if p is not None:
            if p.poll() is None:
                p.kill()
            p.wait()


@pytest.fixture
def cache(tmp_path, smollm) -> Path:
    """An empty result cache with the session's converted default model (else each server would convert it)."""
    root = tmp_path / "cache"
    (root / "models").mkdir(parents=True)
    converted = resolve_source(DEFAULT_MODEL).converted_folder  # in the session's cache
    (root / "models" / converted.name).symlink_to(converted, target_is_directory=True)
    return root


def test_a_third_tab_sees_a_run_that_is_still_loading_then_its_result(hermetic_models, cache, tmp_path, browser):
    cli = None
    with GatedGguf(tmp_path / "gguf", cache, hermetic_models / "random-mlm") as gguf, _reaped(lambda: cli):
        model = str(gguf.path)
        with dashboard(tmp_path / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_MODELS=model) as url, \
                _pages(browser) as pages:
            tab = pages(url, model)
            tab.get_by_text("has not been scored").first.wait_for(timeout=WAIT_MS)
            tab.get_by_role("button", name=re.compile("Score now")).click()
            _until(lambda: _announced(cache, model, 1), "the tab's run announced")
            cli = _cli_score(model, cache)  # a second caller of the same result, from another process
            _until(lambda: _announced(cache, model, 2), "the command line's run announced too", [cli])

            third = pages(url, model)
            state = third.locator('[data-testid="stProgress"]', has_text="converting the model")
            state.first.wait_for(timeout=WAIT_MS)
            assert "right now" in state.first.inner_text()
            assert third.get_by_role("button", name=re.compile("Score now")).count() == 0
            assert third.get_by_text("has not been scored").count() == 0

            gguf.convert()  # the model loads; one run scores, the other waits for it
            for page in (third, tab):  # no click from here on
                page.locator("h3", has_text="Pair ").first.wait_for(timeout=WAIT_MS)
            third.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=WAIT_MS)
            assert_no_errors(third, "the third tab after the run")
            assert cli.wait(WAIT_MS / 1000) == 0, _output(cli)
    assert len(list((cache / "attribution").glob("*.parquet"))) == 1


def test_not_scored_yet_shows_a_result_the_cli_stores_later(hermetic_models, cache, tmp_path, browser):
    model = str(hermetic_models / "random-mlm")
    with dashboard(tmp_path / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_MODELS=model) as url, \
            _pages(browser) as pages:
        page = pages(url, model)
        page.get_by_text("has not been scored").first.wait_for(timeout=WAIT_MS)
        cli = _cli_score(model, cache)
        try:
            assert cli.wait(WAIT_MS / 1000) == 0, _output(cli)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait()
        page.locator("h3", has_text="Pair ").first.wait_for(timeout=WAIT_MS)  # no click
        page.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=WAIT_MS)
        assert_no_errors(page, "token attributions after the CLI stored the result")


def test_a_killed_run_gives_the_page_its_score_now_back(hermetic_models, cache, tmp_path, browser):
    with GatedGguf(tmp_path / "gguf", cache, hermetic_models / "random-mlm") as gguf:
        model = str(gguf.path)
        cli = _cli_score(model, cache)
        try:
            _until(lambda: _announced(cache, model, 1), "the command-line run announced", [cli])
            with dashboard(tmp_path / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_MODELS=model) as url, \
                    _pages(browser) as pages:
                page = pages(url, model)
                page.locator('[data-testid="stProgress"]', has_text="converting the model").first.wait_for(
                    timeout=WAIT_MS)
                cli.send_signal(signal.SIGKILL)
                page.get_by_role("button", name=re.compile("Score now")).wait_for(timeout=WAIT_MS)  # no click
                assert page.locator('[data-testid="stProgress"]', has_text="right now").count() == 0
        finally:
            if cli.poll() is None:
                cli.kill()
            cli.wait()
    assert not list((cache / "running").glob("*.json"))
