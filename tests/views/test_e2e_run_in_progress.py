"""A run in progress is visible to everyone: while another process (here a command-line run) scores a model on a
benchmark, a browser that opens the page for that selection shows the run's progress, updated without any click,
and then the result once it is stored (Debian Chromium + Playwright on a real `streamlit run app.py`)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dashboard_server import CHROMIUM, dashboard
from test_e2e_browser import LAUNCH_ARGS, assert_no_errors, wait_idle

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = "demo"  # built in (38 pairs); the run is made slow below

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")

#: a command-line run made slow on purpose: small shards, and a pause at every progress report
SLOW_RUN = """
import sys, time
from biascore.core.models import load_model
from biascore.methods.attribution.scorer import score_benchmark
lm = load_model(sys.argv[1])
print("started", flush=True)
score_benchmark(lm, sys.argv[2], shard_pairs=4, progress=lambda done, total: time.sleep(0.4))
print("stored", flush=True)
"""


def test_a_browser_opened_mid_run_follows_it_to_the_result(tiny_mlm, data_dir, tmp_path):
    from playwright.sync_api import sync_playwright

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
    env = {**os.environ, "BIASCORE_CACHE_DIR": str(cache)}
    model = str(tiny_mlm.source)
    with dashboard(tmp_path / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_MODELS=model) as url:
        run = subprocess.Popen([sys.executable, "-c", SLOW_RUN, model, BENCHMARK], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            progress_files = cache / "attribution"
            deadline = time.monotonic() + 120
            while not list(progress_files.glob("*.progress.json")):  # the run holds its lock and reports
                assert run.poll() is None and time.monotonic() < deadline, run.stdout.read()
                time.sleep(0.2)
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 2000})
                page.goto(f"{url}/token_attributions?benchmark={BENCHMARK}&model={model}",
                          wait_until="domcontentloaded")
                bar = page.locator('[data-testid="stProgress"]', has_text="right now")
                bar.first.wait_for(timeout=120_000)
                assert page.get_by_role("button", name=re.compile("Score now")).count() == 0
                seen = set()
                result = page.locator("h3", has_text="Pair ")
                deadline = time.monotonic() + 240
                while result.count() == 0:  # no click from here on: the page looks by itself
                    assert time.monotonic() < deadline, f"no result on the page; progress seen: {sorted(seen)}"
                    if bar.count():
                        seen |= set(re.findall(r"(\d+)/\d+ pairs", bar.first.inner_text()))
                    time.sleep(0.3)
                assert len(seen) >= 2, f"the progress did not move on the page: {sorted(seen)}"
                wait_idle(page)
                assert_no_errors(page, "token attributions after the run")
                assert page.locator('[data-testid="stMetricValue"]').count() >= 1
                browser.close()
            assert run.wait(120) == 0
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
