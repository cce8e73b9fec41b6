"""The first minute on an empty cache (Debian Chromium + Playwright on a real `streamlit run app.py`): the embedded
default model starts loading with the server's first page, in the background, and every page says so in one line;
a "Score now" pressed meanwhile waits for that same load — the server loads the model once — and B shows.

The server's cache is empty, so the default model (SmolLM2, from its PyPI GGUF file) has to be converted first.
The test holds that conversion's file lock, as another process converting it would (tests/gated_model.py does the
same for a made-up file), so every wait here is for an event, never a time. Letting go, it puts the session's
converted copy in place, as that process would have: the server reads it (no conversion is timed or run here).
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from biascore.models.loading import resolve_source
from biascore.settings import DEFAULT_MODEL
from biascore.store.locks import file_lock
from dashboard_server import CHROMIUM, dashboard
from test_e2e_browser import assert_no_errors

WAIT_MS = 300_000  # one generous limit for each awaited event (busy CI machines); never a fixed sleep
STATUS = f"⏳ Converting {DEFAULT_MODEL} from its GGUF file"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")


def test_the_default_model_loads_from_the_first_page_once_and_score_now_waits_for_it(smollm, tmp_path, browser):
    converted = resolve_source(DEFAULT_MODEL).converted_folder  # the session's copy (conftest: the project's models)
    assert (converted / "config.json").exists()
    target = tmp_path / "cache" / "models" / converted.name  # where the server's empty cache wants it
    lock = file_lock(target.with_name(target.name + ".lock"))
    lock.acquire(timeout=0)  # "another process is converting it"
    log = tmp_path / "streamlit.log"
    page = browser.new_page(viewport={"width": 1400, "height": 2000})
    page.set_default_timeout(WAIT_MS)
    try:
        with dashboard(log, BIASCORE_CACHE_DIR=str(tmp_path / "cache")) as url:
            page.goto(f"{url}/words", wait_until="domcontentloaded")  # a first page that loads no model
            status = page.locator('[data-testid="stCaptionContainer"]', has_text=STATUS)
            status.wait_for()
            assert "first use on this machine only" in status.inner_text()
            page.goto(url, wait_until="domcontentloaded")  # the Overview, in a new session: the same line
            status.wait_for()
            page.get_by_role("button", name=re.compile("^Score now")).click()
            page.locator('[data-testid="stProgress"]', has_text=f"Converting {DEFAULT_MODEL} from its GGUF").wait_for()
            shutil.copytree(converted, target.with_name(target.name + ".tmp"))
            os.replace(target.with_name(target.name + ".tmp"), target)
            lock.release()
            page.locator('[data-testid="stHeading"]', has_text="B by bias type").wait_for()
            assert status.count() == 0
            assert_no_errors(page, "the Overview after the first load")
    finally:
        page.close()
        if lock.is_locked:
            lock.release()
    # transformers draws one "Loading weights" bar per model load on the server's console
    loads = re.findall(r"Loading weights:\s+0%", log.read_text())
    assert len(loads) == 1, log.read_text()[-3000:]
