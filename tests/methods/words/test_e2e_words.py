"""End-to-end: the Words page in Debian's Chromium (Playwright), on a dashboard served on a free loopback port.

Opens Words, clicks a word in the table, checks its pairs are listed, opens one through the table's link
column (new tab) and follows the page link to Token attributions, which opens on that pair. Saves the README screenshot docs/screenshots/words.png.
Uses the session's browser and demo dashboard (tests/conftest.py) and the helpers of tests/views/test_e2e_browser.py.
"""
from __future__ import annotations

import re
import shutil
import time

from waits import SAFETY_MS, SAFETY_S
from test_e2e_browser import (SCREENSHOTS, assert_no_errors, open_page, pytestmark,  # noqa: F401
                              screenshot, server, wait_idle)


def wait_for(page, predicate, timeout: float = SAFETY_S, what: str = "condition") -> None:
    """Poll ``predicate`` while letting Playwright process the page's events (time.sleep would not)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        page.wait_for_timeout(500)


def test_words_click_a_word_then_open_its_pair(browser, server):  # noqa: F811 - fixtures imported above
    page = open_page(browser, server, "words?benchmark=demo&model=smollm2-135m")
    assert_no_errors(page, "words")
    assert page.locator("h1").first.inner_text().strip() == "Words"
    assert page.get_by_text("Pairs with the selected word").count() == 0
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    # click the row-selection cell of the second data row (header ≈ 35 px, rows ≈ 35 px)
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 * 1 + 17)
    wait_for(page, lambda: page.get_by_text("Pairs with the selected word").count() == 1, what="the word's pairs")
    wait_idle(page)
    assert_no_errors(page, "words (word selected)")
    word = page.get_by_text(re.compile(r"^word: ")).first.inner_text().removeprefix("word: ").strip()
    assert word and "word=" in page.url
    assert page.locator('[data-testid="stDataFrame"]').count() == 2  # words + the word's pairs
    link = page.locator('[data-testid="stPageLink"] a').first
    pair = re.search(r"Open pair (\d+)", link.inner_text()).group(1)
    page.set_viewport_size({"width": 1400, "height": 1560})  # the README screenshot without empty space below
    wait_idle(page)
    shot = screenshot(page, "words")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOTS / "words.png")

    # the pairs table's "open ↗" link cell (second column): the first click selects the cell, the second
    # opens the pair in a new tab
    pairs_box = page.locator('[data-testid="stDataFrame"]').nth(1).bounding_box()
    cell = (pairs_box["x"] + 115, pairs_box["y"] + 35 + 17)
    with page.expect_popup(timeout=SAFETY_MS) as popup:
        page.mouse.click(*cell)
        page.wait_for_timeout(500)
        page.mouse.click(*cell)
    tab = popup.value
    tab.wait_for_url(re.compile(r".*/token_attributions\?.*pair=\d+"), timeout=SAFETY_MS)
    tab.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
    wait_idle(tab)
    assert_no_errors(tab, "token_attributions (new tab from words)")
    assert "benchmark=demo" in tab.url and "model=smollm2-135m" in tab.url
    assert tab.locator("h1").first.inner_text().strip() == "Token attributions"
    tab.close()

    page.set_viewport_size({"width": 1400, "height": 2600})
    link.click()
    page.wait_for_url(re.compile(r".*/token_attributions\?.*pair=\d+"), timeout=SAFETY_MS)
    wait_idle(page, rerun=True)
    assert_no_errors(page, "token_attributions (from words)")
    assert f"pair={pair}" in page.url and "benchmark=demo" in page.url and "model=smollm2-135m" in page.url
    assert page.locator("h3", has_text=f"Pair {pair} ").count() == 1
    sentences = [t for t in page.locator('[data-testid="stText"]').all_inner_texts()
                 if t.startswith(("more-biased:", "less-biased:"))]  # shown literally (st.text)
    assert len(sentences) == 2 and any(word in t.casefold() for t in sentences), (word, sentences)
    page.close()
