"""A run in progress is visible to everyone: while another process (here a command-line run) scores a model on a
benchmark, a browser that opens the page for that selection shows the run's progress, updated without any click,
and then the result once it is stored (Debian Chromium + Playwright on a real `streamlit run app.py`)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard_server import CHROMIUM, dashboard
from waits import SAFETY_MS, SAFETY_S, wait_idle, wait_until
from test_e2e_browser import assert_no_errors

REPO = Path(__file__).resolve().parents[2]
BENCHMARK = "demo"  # built in (38 pairs, 10 shards of 4); the run is held below until the page has seen it

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")

#: a command-line run held twice, each time until the test lets it go on (a gate file), so that the page is seen
#: to show two different progress values however fast or slow the machine is: at its first report past 0 pairs
#: (the progress file then says 0, written at the start) and at its first report past 8 (the file says 8, written
#: at the end of the second shard). Small shards: the runner writes the progress file at every shard's end.
HELD_RUN = """
import sys, time
from pathlib import Path
from biascore.models.loading import load_model
from biascore.runs import runner
from biascore.methods import get
lm = load_model(sys.argv[1])
gates, passed = Path(sys.argv[3]), []
def hold(done, total):
    for i, above in enumerate((0, 8)):
        if len(passed) == i and done > above:
            print("held", i + 1, flush=True)
            while not (gates / f"gate{i + 1}").exists():
                time.sleep(0.05)
            passed.append(i)
print("started", flush=True)
runner.run(get("attribution"), lm, sys.argv[2], shard_size=4, progress=hold)
print("stored", flush=True)
"""


def next_line(run: subprocess.Popen, expected: str) -> None:
    """Read the run's output until the line ``expected`` (other lines: library warnings); fail if it ends first."""
    seen = []
    for line in run.stdout:
        if line.strip() == expected:
            return
        seen.append(line)
    raise AssertionError(f"the run ended before {expected!r}: {''.join(seen)[-3000:]}")


def test_a_browser_opened_mid_run_follows_it_to_the_result(tiny_mlm, data_dir, tmp_path, browser):
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
    env = {**os.environ, "BIASCORE_CACHE_DIR": str(cache)}
    model = str(tiny_mlm.source)
    with dashboard(tmp_path / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_MODELS=model) as url:
        gates = tmp_path / "gates"
        gates.mkdir()
        run = subprocess.Popen([sys.executable, "-c", HELD_RUN, model, BENCHMARK, str(gates)], cwd=REPO, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            next_line(run, "held 1")  # holding its lock, the progress file written
            page = browser.new_page(viewport={"width": 1400, "height": 2000})
            page.set_default_timeout(SAFETY_MS)
            page.goto(f"{url}/token_attributions?benchmark={BENCHMARK}&model={model}",
                      wait_until="domcontentloaded")
            bar = page.locator('[data-testid="stProgress"]', has_text="right now")
            bar.first.wait_for(timeout=SAFETY_MS)
            assert page.get_by_role("button", name=re.compile("Score now")).count() == 0

            def shown() -> set[str]:
                page.wait_for_timeout(200)  # Playwright processes the page's events meanwhile
                return set(re.findall(r"(\d+)/\d+ pairs", bar.first.inner_text())) if bar.count() else set()

            seen = set(wait_until(shown, "the run's progress on the page"))
            (gates / "gate1").touch()  # no click from here on: the page looks by itself
            next_line(run, "held 2")
            seen |= wait_until(lambda: shown() - seen, "the page's progress to move on")
            (gates / "gate2").touch()
            result = page.locator("h3", has_text="Pair ")
            result.first.wait_for(timeout=SAFETY_MS)
            assert len(seen) >= 2, f"the progress did not move on the page: {sorted(seen)}"
            wait_idle(page)
            assert_no_errors(page, "token attributions after the run")
            assert page.locator('[data-testid="stMetricValue"]').count() >= 1
            page.close()
            run.communicate(timeout=SAFETY_S)
            assert run.returncode == 0
        finally:
            if run.poll() is None:
                run.kill()
                run.wait()
