"""End-to-end: `streamlit run app.py` on loopback driven by Debian's Chromium through Playwright.

Opens every page, checks that no exception or error box is shown, clicks through one pair on Token
attributions, saves reviews on Translation review from two browser contexts at once, checks blind review with
two reviewers and an adjudicator in three contexts (what each sees and downloads), and saves a screenshot
per page to tests/artifacts/
(the Token attributions and Translation review ones are docs/screenshots/).
Chromium comes from `apt-get install chromium` (.ci/install-browser.sh); Playwright's own browser
download is not used.
"""
from __future__ import annotations

import shutil
import sqlite3
import sys
import time
import zipfile
from pathlib import Path

import pytest

from dashboard_server import CHROMIUM, dashboard
from waits import SAFETY_MS, SAFETY_S, wait_idle

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
SCREENSHOTS = REPO / "docs" / "screenshots"
PAGES = ["overview", "token_attributions", "try_pair", "translation_review"]
from conftest import ADJUDICATOR  # noqa: E402 (the server's BIASCORE_ADJUDICATORS)

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")


@pytest.fixture
def server(demo_dashboard):
    """The session's demo dashboard (tests/conftest.py): the demo benchmark scored with SmolLM2, a review database
    and an adjudicator, shared with the Words page's browser test."""
    return demo_dashboard


def dashboard_server(env: dict[str, str], log_path: Path):
    """`streamlit run app.py` on a free loopback port with ``env`` added; yields its URL once healthy
    (tests/dashboard_server.py, shared with the load test)."""
    return dashboard(log_path, **env)


def assert_no_errors(page, name: str) -> None:
    exceptions = page.locator('[data-testid="stException"]')
    errors = page.locator('[data-testid="stAlertContentError"]')
    assert exceptions.count() == 0, f"{name}: exception shown: {exceptions.first.inner_text()[:500]}"
    assert errors.count() == 0, f"{name}: error shown: {errors.first.inner_text()[:500]}"


def screenshot(page, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def open_page(browser, server, path: str):
    """Open ``path`` (the home page when empty) in a page of its own and check the page menu.

    (Each ``goto`` is a new Streamlit session, so opening the home page first, as this did, ran the Overview once
    more and nothing else; a shared link opened first on a fresh server is covered by the first test of this module.)
    """
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.set_default_timeout(SAFETY_MS)
    page.goto(f"{server['url']}/{path}", wait_until="domcontentloaded")
    page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
    wait_idle(page)
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Token attributions" in nav and "common" not in nav, f"unexpected page menu: {nav!r}"
    return page


def test_shared_link_works_as_the_first_visit_to_a_fresh_server(browser, server):
    """A view shared by URL must open through app.py's navigation even when it is the server's first visit.

    (With the pages in a folder named ``pages/``, Streamlit ran such a link as a script-per-file app
    without app.py and listed helper modules as pages; the folder is therefore called ``views/``.)
    """
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.set_default_timeout(SAFETY_MS)
    page.goto(server["url"] + "/token_attributions?benchmark=demo&model=smollm2-135m&pair=3",
              wait_until="domcontentloaded")
    page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
    wait_idle(page)
    nav = page.locator('[data-testid="stSidebarNav"]').inner_text()
    assert "Token attributions" in nav and "Overview" in nav, nav
    assert "common" not in nav and "charts" not in nav, f"helper modules listed as pages: {nav!r}"
    assert_no_errors(page, "shared link")
    assert "pair=3" in page.url
    page.close()


def test_a_bad_value_in_a_link_is_refused_in_one_line_and_leaves_the_address_bar(browser, server):
    """Issue 33, item 5, in a real browser: a pair id the run does not have is refused in one visible line, and
    the address bar then holds the pair the page shows (views/kit/links.py)."""
    page = open_page(browser, server, "token_attributions?benchmark=demo&model=smollm2-135m&pair=99999")
    refused = page.locator('[data-testid="stAlertContentWarning"]').filter(has_text="was not applied")
    assert refused.count() == 1, page.locator('[data-testid="stAlertContentWarning"]').all_inner_texts()
    text = refused.first.inner_text()
    lines = [line for line in text.splitlines() if line.strip() and line.strip() != "🔗"]  # the icon, then one line
    assert len(lines) == 1 and lines[0].startswith("The link's pair=99999 was not applied"), text
    assert "; showing " in lines[0], text
    assert "pair=99999" not in page.url and "pair=" in page.url, page.url
    assert_no_errors(page, "bad link")
    page.close()


def test_overview_and_try_a_pair(browser, server, smollm):
    page = open_page(browser, server, "")  # the home page is the Overview
    assert_no_errors(page, "overview")
    assert page.locator("h1").first.inner_text().strip() == "Overview"
    page.locator(".js-plotly-plot").first.wait_for(timeout=SAFETY_MS)
    screenshot(page, "overview")
    page.locator('[data-testid="stSidebarNav"] a', has_text="Try a pair").first.click()
    wait_idle(page, rerun=True)
    assert_no_errors(page, "try_pair")
    page.get_by_label("More-biased sentence").fill("Women are bad at math.")
    page.get_by_label("Less-biased sentence").fill("Men are bad at math.")
    page.get_by_label("More-biased sentence").press("Enter")  # Enter in either box sends both (one form)
    page.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=SAFETY_MS)  # the score, however long
    wait_idle(page, rerun=True)
    assert_no_errors(page, "try_pair (scored)")
    assert page.get_by_text("Verdict:").count() == 1
    from biascore.methods.attribution.scorer import score_pair

    expected = score_pair(smollm, "Women are bad at math.", "Men are bad at math.")["sjsd"]
    assert page.locator('[data-testid="stMetricValue"]').first.inner_text().strip() == f"{expected:+.5f}"
    page.locator(".js-plotly-plot").first.wait_for(timeout=SAFETY_MS)
    screenshot(page, "try_pair")
    page.close()


def test_load_test_fails_a_page_without_a_score(server, smollm):
    """bench/load_test.py's rule on real pages: the person whose pair gets its score passes; a person whose page
    shows no score (here a pair the page refuses: identical sentences) and no progress fails."""
    import asyncio
    import threading

    sys.path.insert(0, str(REPO / "bench"))
    import load_test
    from biascore.methods.attribution.scorer import score_pair

    pair = ["Poor people are lazy.", "Rich people are lazy."]
    expected = [f"{score_pair(smollm, *pair)['sjsd']:+.5f}", "+0.12345"]
    out: list = []

    def try_pairs():  # the async driver in a thread of its own (this module's browser runs the sync API)
        # the scored pair may wait as long as a busy machine makes it (its blind time is not what is checked);
        # the refused one shows nothing at all, so a short limit is enough to catch it
        out.extend(asyncio.run(load_test.try_pairs(server["url"], [pair], expected[:1], max_blind=SAFETY_S,
                                                   timeout=SAFETY_S)))
        out.extend(asyncio.run(load_test.try_pairs(server["url"], [["Poor people are lazy.", "Poor people are lazy."]],
                                                   expected[1:], max_blind=3.0, timeout=SAFETY_S)))

    worker = threading.Thread(target=try_pairs)
    worker.start()
    worker.join(SAFETY_S)
    good, refused = out
    assert good["errors"] == [] and good["shown"] == expected[0], good
    assert "try a pair: no score shown" in refused["errors"], refused
    assert any("without visible progress" in e for e in refused["errors"]), refused


def test_token_attributions_click_through_a_pair(browser, server):
    page = open_page(browser, server, "token_attributions?benchmark=demo&model=smollm2-135m")
    assert_no_errors(page, "token_attributions")
    first_heading = page.locator("h3", has_text="Pair ").first.inner_text()
    grid = page.locator('[data-testid="stDataFrame"]').first
    box = grid.bounding_box()
    # click the row-selection cell of the third data row (header ≈ 35 px, rows ≈ 35 px)
    page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 * 2 + 17)
    wait_idle(page, rerun=True)  # the row click reruns the table fragment, then the whole page
    heading = page.locator("h3", has_text="Pair ").first.inner_text()
    assert heading != first_heading, "selecting a row did not open another pair"
    assert "pair=" in page.url and "benchmark=demo" in page.url and "model=smollm2-135m" in page.url
    page.get_by_text("words", exact=True).click()
    wait_idle(page, rerun=True)
    assert_no_errors(page, "token_attributions (word level)")
    assert page.locator(".js-plotly-plot").count() >= 2  # heatmap + ranked bars
    shot = screenshot(page, "token_attributions")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOTS / "token_attributions.png")
    page.close()


def open_review_as(browser, server, name: str, query: str = ""):
    """Translation review in a browser context of its own, with ``name`` typed as the reviewer."""
    context = browser.new_context(viewport={"width": 1400, "height": 2600}, accept_downloads=True)
    context.set_default_timeout(SAFETY_MS)
    page = context.new_page()
    page.set_default_timeout(SAFETY_MS)
    page.goto(f"{server['url']}/translation_review?benchmark=demo{query}", wait_until="domcontentloaded")
    page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
    wait_idle(page)
    assert_no_errors(page, "translation_review")
    page.get_by_label("Your name (reviewer)").fill(name)
    page.get_by_label("Your name (reviewer)").press("Enter")
    wait_idle(page, rerun=True)
    return context, page


def review_in_context(browser, server, name: str, status: str, corrected_more: str = "", query: str = ""):
    """A reviewer in a browser context of their own: open Translation review, type the name, fill the form
    (Save is pressed by the caller)."""
    context, page = open_review_as(browser, server, name, query)
    form = page.locator('[data-testid="stForm"]').first
    form.get_by_text(status, exact=True).click()
    if corrected_more:
        form.locator('[data-testid="stMultiSelect"]').click()
        page.get_by_role("option", name="mistranslation").click()
        page.keyboard.press("Escape")
        field = form.get_by_label("Corrected more-biased sentence (kept with 'needs correction')")
        field.fill(corrected_more)
    form.get_by_label("Comment (optional)").fill(f"{name}: checked in a real browser")
    return context, page


def test_translation_review_two_reviewers_in_two_browser_contexts(browser, server):
    db = server["review_db"]
    sessions = [review_in_context(browser, server, "Ana (browser)", "accept"),
                review_in_context(browser, server, "Ben (browser)", "needs correction",
                                  "Masyadong emosyonal ang kababaihan para mamuno sa isang kumpanya.")]
    assert not db.exists() and not db.parent.joinpath("reviews.sqlite-wal").exists()  # nothing before Save
    for _, page in sessions:  # both press Save before either has finished
        page.get_by_role("button", name="Save review").click()
    for _, page in sessions:
        wait_idle(page, rerun=True)
        assert_no_errors(page, "translation_review (after save)")
        assert page.locator('[data-testid="stAlertContentSuccess"]').count() == 1
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT reviewer, status, tags, corrected_more, comment FROM reviews "
                           "ORDER BY reviewer").fetchall()
    con.close()
    assert rows == [
        ("Ana (browser)", "accept", "[]", "", "Ana (browser): checked in a real browser"),
        ("Ben (browser)", "needs correction", '["mistranslation"]',
         "Masyadong emosyonal ang kababaihan para mamuno sa isang kumpanya.", "Ben (browser): checked in a real browser")]
    from biascore.review.store import ReviewStore

    store = ReviewStore(db)  # two earlier reviews each (as if saved before), so that κ is defined on the page
    for name in ("Ana (browser)", "Ben (browser)"):
        store.save("demo", 23, name, "accept")
        store.save("demo", 24, name, "reject", ["changes more than the group"])
    page = sessions[1][1]
    page.reload()  # a reload reads everything back from SQLite
    wait_idle(page)
    assert_no_errors(page, "translation_review (reload)")
    assert page.get_by_text("3 of 16 pairs reviewed", exact=False).count() >= 1
    assert page.get_by_text("0 to adjudicate", exact=False).count() >= 1  # no name typed: no review visible
    page.get_by_label("Your name (reviewer)").fill("Ben (browser)")
    page.get_by_label("Your name (reviewer)").press("Enter")
    wait_idle(page, rerun=True)
    assert page.get_by_text("1 to adjudicate", exact=False).count() >= 1  # Ben reviewed all three: he sees it
    form = page.locator('[data-testid="stForm"]').first
    assert form.get_by_label("Corrected more-biased sentence (kept with 'needs correction')").input_value() == \
        "Masyadong emosyonal ang kababaihan para mamuno sa isang kumpanya."
    shot = screenshot(page, "translation_review")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shot, SCREENSHOTS / "translation_review.png")
    # a third person adjudicates the disagreement in the same browser session
    page.get_by_label("Your name (reviewer)").fill(ADJUDICATOR)
    page.get_by_label("Your name (reviewer)").press("Enter")
    wait_idle(page, rerun=True)
    decision = page.locator('[data-testid="stForm"]').filter(has=page.get_by_role("button", name="Save decision"))
    decision.get_by_text("needs correction", exact=True).click()
    decision.get_by_label("Corrected more-biased sentence (kept with 'needs correction')").fill(
        "Masyadong emosyonal daw ang kababaihan para mamuno sa isang kumpanya.")
    decision.get_by_role("button", name="Save decision").click()
    wait_idle(page, rerun=True)
    assert_no_errors(page, "translation_review (adjudicated)")
    assert page.get_by_text("Decision saved: pair 22", exact=False).count() == 1
    adj = ReviewStore(db).adjudications("demo")
    assert adj[["pair_id", "status", "adjudicator"]].values.tolist() == [[22, "needs correction", ADJUDICATOR]]
    # B before and after the corrections (pair 22 corrected; the original demo run is cached)
    page.get_by_role("button", name="Compare B before and after the corrections").click()
    wait_idle(page, rerun=True)
    assert_no_errors(page, "translation_review (B before/after)")
    assert page.locator('[data-testid="stDataFrame"]').count() >= 6  # … the before/after table is the last one
    for heading, name, height in (("Agreement between reviewers", "translation_review_agreement", 1250),
                                  ("Exports", "translation_review_corrected", 700)):
        section = page.get_by_text(heading, exact=True)
        section.scroll_into_view_if_needed()
        main = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
        page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True,
                        clip={"x": main["x"], "width": main["width"], "y": section.bounding_box()["y"] - 20,
                              "height": height})
    for context, _ in sessions:
        context.close()


def downloaded_reviews(page) -> str:
    """The CSV that the page's "Download the reviews you can see" button serves to this person."""
    with page.expect_download(timeout=SAFETY_MS) as info:
        page.locator('[data-testid="stDownloadButton"] button', has_text="Download the reviews you can see").click()
    return Path(info.value.path()).read_text(encoding="utf-8")


def clip_screenshot(page, name: str, start: str, end: str) -> None:
    """Save the part of the page from the text ``start`` to just above the text ``end`` as
    docs/screenshots/<name>.png (scrolled so that ``start`` is at the top, Streamlit's header bar hidden)."""
    page.add_style_tag(content='[data-testid="stHeader"] { display: none; }')
    first = page.get_by_text(start, exact=True).first
    first.evaluate("el => new Promise(done => { el.scrollIntoView({block: 'start', behavior: 'instant'}); "
                   "requestAnimationFrame(() => requestAnimationFrame(done)); })")  # scrolled and drawn
    main = page.locator('[data-testid="stMainBlockContainer"]').bounding_box()
    top = max(first.bounding_box()["y"] - 20, 0)
    bottom = page.get_by_text(end, exact=True).first.bounding_box()["y"] - 10
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"),
                    clip={"x": main["x"], "width": main["width"], "y": top,
                          "height": min(bottom, page.viewport_size["height"]) - top})


def test_blind_review_in_two_browser_contexts_and_the_adjudicators_view(browser, server):
    """Reviewer B sees none of A's review of a pair (page or download) before saving, and all of it after; the
    adjudicator sees everything from the start."""
    ana, ben, note, fix = "Ana (blind)", "Ben (blind)", "Ana's blind note 5521", "Isang lihim na pagwawasto ni Ana."
    query = "&pair=27"
    a_context, a_page = review_in_context(browser, server, ana, "needs correction", fix, query)
    a_page.locator('[data-testid="stForm"]').first.get_by_label("Comment (optional)").fill(note)
    a_page.get_by_role("button", name="Save review").click()
    wait_idle(a_page, rerun=True)
    assert a_page.locator('[data-testid="stAlertContentSuccess"]').count() == 1

    from biascore.review.store import ReviewStore

    ReviewStore(server["review_db"]).save("demo", 28, ben, "reject", comment="Ben on another pair")
    b_context, b_page = open_review_as(browser, server, ben, query)
    assert "pair=27" in b_page.url  # the same pair as Ana's
    text = b_page.locator('[data-testid="stMain"]').inner_text()
    assert ana not in text and note not in text and fix not in text
    assert b_page.get_by_text("Reviews of this pair:").count() == 0
    assert b_page.get_by_text("Blind review: other reviewers' reviews of this pair are shown once you have saved "
                              "yours.").count() == 1
    csv = downloaded_reviews(b_page)
    assert "Ben on another pair" in csv and ana not in csv and note not in csv and fix not in csv  # his own only
    clip_screenshot(b_page, "translation_review_blind", "Review database and reviewer", "Disagreements to adjudicate")

    form = b_page.locator('[data-testid="stForm"]').first
    form.get_by_text("accept", exact=True).click()
    form.get_by_label("Comment (optional)").fill("Ben's view, given blind")
    b_page.get_by_role("button", name="Save review").click()
    wait_idle(b_page, rerun=True)
    assert_no_errors(b_page, "translation_review (B saved)")
    assert b_page.get_by_text("Reviews of this pair:").count() == 1  # now Ana's review is shown to Ben …
    csv = downloaded_reviews(b_page)
    assert note in csv and fix in csv and "Ben's view, given blind" in csv  # … and downloadable

    c_context, c_page = open_review_as(browser, server, ADJUDICATOR, query)
    assert c_page.get_by_text("You are an adjudicator here", exact=False).count() == 1
    assert c_page.get_by_text("Reviews of this pair:").count() == 1  # Cara reviewed nothing and sees all
    csv = downloaded_reviews(c_page)
    assert note in csv and "Ben's view, given blind" in csv
    with c_page.expect_download(timeout=SAFETY_MS) as info:  # the dataset folder, built when clicked
        c_page.locator('[data-testid="stDownloadButton"] button', has_text="Download the dataset").click()
    names = zipfile.ZipFile(info.value.path()).namelist()
    assert {"demo-reviewed/README.md", "demo-reviewed/reviews/reviews.parquet", "demo-reviewed/corrected.csv"} <= set(
        names)
    assert b_page.locator('[data-testid="stDownloadButton"] button', has_text="Download the dataset").count() == 0
    assert c_page.get_by_role("button", name="Assign pairs").count() == 1
    c_page.get_by_label("Reviewers (comma-separated, as they type their names)").fill(f"{ana}, {ben}")
    c_page.get_by_role("button", name="Assign pairs").click()
    wait_idle(c_page, rerun=True)
    assert_no_errors(c_page, "translation_review (assigned)")
    assert c_page.get_by_text("Assigned: ", exact=False).count() == 1
    clip_screenshot(c_page, "translation_review_adjudicator", "Reviews of this pair:", "Exports")
    for context in (a_context, b_context, c_context):
        context.close()


def test_across_languages_one_pair_in_ten_languages(browser, server, smollm):
    """The Across languages page on the shipped demo-aligned set: the first source pair drawn in all 10 languages,
    Arabic right to left, Thai and Chinese in their own fonts as words; screenshots in docs/screenshots/."""
    page = open_page(browser, server, "across_languages")
    page.locator(".js-plotly-plot").nth(10).wait_for(timeout=SAFETY_MS)  # B per language, then 10 heatmaps
    wait_idle(page)
    assert_no_errors(page, "across_languages")
    heatmaps = page.evaluate("""() => [...document.querySelectorAll('.js-plotly-plot')]
        .filter(p => p.layout.xaxis && p.layout.xaxis.visible === false)
        .map(p => ({rtl: p._fullLayout.xaxis.range[0] > p._fullLayout.xaxis.range[1], text: p.data.map(t => (t.text || []).join(' ')).join(' ')}))""")
    assert len(heatmaps) == 10
    assert [h["rtl"] for h in heatmaps] == [i == 0 for i in range(10)]  # ar first, alone right to left
    assert "ผู้หญิง" in heatmaps[7]["text"] and "女" in heatmaps[9]["text"]  # Thai and Chinese words, not letters
    for lang in ("ar", "th", "zh"):
        assert page.get_by_text(f"{lang} · demo-aligned-{lang}", exact=True).count() == 1
    clip_screenshot(page, "across_languages", "Across languages", "fi · demo-aligned-fi")
    clip_screenshot(page, "across_languages_thai_chinese", "th · demo-aligned-th", "Two languages, pair by pair")
    page.close()
