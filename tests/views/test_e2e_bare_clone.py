"""A newcomer's first five minutes, end to end: every page of the menu on a bare clone shows a result.

``git clone`` of this repository into an empty temporary folder — no ../shared beside it, no BIASCORE_DATA_DIR (nor
any other BIASCORE_ setting), an empty cache, HuggingFace offline — then ``streamlit run app.py`` there and one
headless Chromium: it opens every page of the menu in one session, presses each visible "Score now" (and
"Compute …") button once, and checks that the page shows a result (a table, a chart or a metric)
and no exception, error box or missing-data message. Everything comes from the clone itself: the shipped demo
inputs (data/shipped.json) scored with the models that come from PyPI (SmolLM2, MiniLM).

Semantic fields is the one page without a result: the USAS lexicon cannot be shipped (CC BY-NC-SA 4.0), so the
page must say so in one line and offer its download instead. A screenshot of each page goes to
tests/artifacts/bare_clone/. It waits for the page's own state (the script runs it asked for, spinners:
tests/waits.py), never a fixed time.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest

from dashboard_server import CHROMIUM, dashboard
from test_e2e_browser import assert_no_errors
from waits import SAFETY_MS, wait_idle

REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "tests" / "artifacts" / "bare_clone"
#: what a result is on a page
RESULT = ('[data-testid="stDataFrame"], [data-testid="stMetric"], .js-plotly-plot, [data-testid="stVegaLiteChart"], '
          '[data-testid="stArrowVegaLiteChart"]')
#: what a page says when its data or its result is missing (the messages issue 31 found, and their kin)
MISSING = re.compile(r"not found|missing|No SEAT tests|No .* in the data directory yet|not computed yet|"
                     r"has not been scored|No cached|nothing to score", re.IGNORECASE)
#: the buttons that compute a page's result
SCORE_BUTTON = re.compile(r"^(Score now|Compute)")
LEXICON_PAGE = "semantic_fields"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")


@pytest.fixture(scope="module")
def bare_clone(tmp_path_factory) -> Path:
    """This repository's committed tree, cloned into an empty folder with nothing beside it."""
    clone = tmp_path_factory.mktemp("bare") / "biascore"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    assert not (clone.parent / "shared").exists() and not (clone / "cache").exists()
    assert not any((clone / "data" / "downloads").glob("*")) if (clone / "data" / "downloads").exists() else True
    return clone


@pytest.fixture(scope="module")
def bare_server(bare_clone, tmp_path_factory):
    """``streamlit run app.py`` in the clone, with no biascore setting at all, offline, importing the clone's code."""
    drop = tuple(k for k in os.environ if k.startswith("BIASCORE_") and k != "BIASCORE_RAISE_PAGE_ERRORS")
    log = tmp_path_factory.mktemp("bare-streamlit") / "streamlit.log"
    with dashboard(log, drop_env=drop, cwd=bare_clone, PYTHONPATH=str(bare_clone), HF_HUB_OFFLINE="1",
                   TRANSFORMERS_OFFLINE="1") as url:
        yield url


def press_score_buttons(page) -> list[str]:
    """Press every visible "Score now" / "Compute …" button once, one after the other (a page may offer the next
    one once the first result is there): after each, wait for the run it starts to begin and to end (a button may
    stay on the page beside its result); the labels pressed."""
    pressed: list[str] = []
    for _ in range(6):
        buttons = [b for b in page.get_by_role("button", name=SCORE_BUTTON).all()
                   if b.is_visible() and b.inner_text().strip() not in pressed]
        if not buttons:
            break
        pressed.append(buttons[0].inner_text().strip())
        buttons[0].click()
        wait_idle(page, rerun=True)
        if page.locator('[data-testid="stAlertContentError"], [data-testid="stException"]').count():
            break  # the caller reports it
    return pressed


def test_every_page_shows_a_result_on_a_bare_clone(bare_server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": 1400, "height": 2200})  # the session's Chromium
    try:
        page = context.new_page()
        page.set_default_timeout(SAFETY_MS)
        page.goto(bare_server, wait_until="domcontentloaded")
        page.locator('[data-testid="stSidebarNav"] a').first.wait_for()
        wait_idle(page)
        links = page.locator('[data-testid="stSidebarNav"] a')
        menu = [(links.nth(i).inner_text().strip().splitlines()[-1], i,  # the title, after the icon
                 urlparse(links.nth(i).get_attribute("href")).path.strip("/") or "overview")
                for i in range(links.count())]
        assert len(menu) >= 9, menu
        seen = {}
        for title, i, name in menu:
            links.nth(i).click()
            page.wait_for_url(re.compile(rf"/{name}(\?|$)") if name != "overview" else re.compile(r":\d+/?(\?|$)"))
            page.locator("h1").first.wait_for()
            wait_idle(page, rerun=i > 0)  # (the first link is the page open already)
            pressed = press_score_buttons(page)
            page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
            main = page.locator('[data-testid="stMain"]').inner_text()
            seen[title] = pressed
            assert_no_errors(page, title)
            if name == LEXICON_PAGE:  # the one page whose input cannot be shipped: one line and a download
                assert "not shipped" in main and "CC BY-NC-SA 4.0" in main, main[:2000]
                assert page.get_by_role("button", name=re.compile("^Download the USAS lexicon")).is_visible()
                continue
            assert page.locator(RESULT).count() > 0, f"{title}: no table, chart or metric (pressed {pressed})"
            found = MISSING.search(main)
            assert found is None, f"{title}: {found.group(0)!r} in {main[max(0, found.start() - 300):found.end() + 300]!r}"
    finally:
        context.close()
    # the pages that compute on the shipped inputs did (the others read the Overview's result)
    pressed = {t: p for t, p in seen.items() if p}
    for title in ("Overview", "Attention heads", "Nationality (LABDet)", "Association tests"):
        assert pressed.get(title), f"{title}: no Score now button was pressed ({seen})"
    print(f"pressed: {pressed}", file=sys.stderr)
