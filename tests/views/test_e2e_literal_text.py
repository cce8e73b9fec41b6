"""Text stays text, in a real browser: benchmark sentences holding markdown, HTML and KaTeX are shown as the
literal characters on Overview, Token attributions and Try a pair, and nothing makes the browser fetch a URL.

A loopback HTTP server counts the requests it gets (the sentences point their images and links at it), and
the browser logs every request that leaves the dashboard's own server: both must stay at zero. The sentences
live in a temporary data directory as the crows-en-gso file (scored into the test cache first); the
dashboard is started by tests/views/test_e2e_browser.py's helper, driven by Debian's Chromium.
"""
from __future__ import annotations

import csv
import http.server
import threading
import time

import pytest

from dashboard_server import dashboard
from waits import SAFETY_MS, wait_idle
from test_e2e_browser import assert_no_errors
from test_e2e_browser import pytestmark  # noqa: F401 (skips without Chromium)


class CountingHandler(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server's name)
        CountingHandler.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def trap():
    """A loopback HTTP server that records every request it receives."""
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), CountingHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    CountingHandler.hits.clear()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def hostile_pairs(trap: str) -> list[tuple[str, str, str]]:
    """(more, less, bias type): minimal pairs whose shared text is markdown, HTML and a formula."""
    return [
        (f"Women see ![p]({trap}/md.png) and **bold** and $x^2$ and [a link]({trap}/md-link) today.",
         f"Men see ![p]({trap}/md.png) and **bold** and $x^2$ and [a link]({trap}/md-link) today.",
         "gender"),
        (f'Women <img src="{trap}/html.png"> say <a href="{trap}/html-link">click</a> <b>loudly</b>.',
         f'Men <img src="{trap}/html.png"> say <a href="{trap}/html-link">click</a> <b>loudly</b>.',
         f"<b>gender</b> ![t]({trap}/type.png)"),
    ]


@pytest.fixture(scope="module")
def hostile_server(smollm, trap, tmp_path_factory, processes):
    import torch

    from biascore.runs import runner
    from biascore.methods import get

    data = tmp_path_factory.mktemp("hostile_data")
    (data / "crows_pairs").mkdir()
    pairs = hostile_pairs(trap)
    with (data / "crows_pairs" / "crowspairs_en_gender_so.csv").open("w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["", "sent_more_bias", "sent_less_bias", "bias_type"])
        for i, row in enumerate(pairs):
            writer.writerow([i, *row])
    torch.set_num_threads(1)
    frame = runner.run(get("attribution"), smollm, "crows-en-gso", data_dir=data).frame
    assert (frame.skipped_reason == "").all()
    log = tmp_path_factory.mktemp("streamlit_hostile") / "streamlit.log"
    with dashboard(log, BIASCORE_DATA_DIR=str(data)) as url:
        yield {"url": url, "pairs": pairs}


def outside_requests(page, url: str) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda req: seen.append(req.url) if not req.url.startswith((url, "data:", "blob:")) else None)
    return seen


def assert_rendered_nothing(page, trap: str) -> None:
    """No element the markdown or HTML would have produced: image, link to the trap, bold text, formula."""
    assert page.locator(f'img[src^="{trap}"]').count() == 0
    assert page.locator(f'a[href^="{trap}"]').count() == 0
    assert page.locator(".katex").count() == 0
    assert page.locator("strong", has_text="bold").count() == 0 and page.locator("b", has_text="loudly").count() == 0
    assert page.locator(".js-plotly-plot a").count() == 0  # plotly turns <a href> in labels into links


def test_benchmark_text_shows_literally_and_fetches_nothing(browser, hostile_server, trap):
    url, pairs = hostile_server["url"], hostile_server["pairs"]
    page = browser.new_page(viewport={"width": 1400, "height": 2600})
    page.set_default_timeout(SAFETY_MS)
    outside = outside_requests(page, url)
    for pair_id, (more, less, bias_type) in enumerate(pairs):
        page.goto(f"{url}/token_attributions?benchmark=crows-en-gso&model=smollm2-135m&pair={pair_id}",
                  wait_until="domcontentloaded")
        page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
        wait_idle(page)
        assert_no_errors(page, f"token attributions, pair {pair_id}")
        page.locator(".js-plotly-plot").first.wait_for(timeout=SAFETY_MS)
        body = page.locator("body").inner_text()
        for text in (more, less, bias_type):
            assert text in body, f"not shown literally: {text!r}"
        assert_rendered_nothing(page, trap)

    page.goto(url, wait_until="domcontentloaded")  # Overview: bias types in the tables and the chart
    page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
    wait_idle(page)
    assert_no_errors(page, "overview")
    assert_rendered_nothing(page, trap)

    page.locator('[data-testid="stSidebarNav"] a', has_text="Try a pair").first.click()
    wait_idle(page, rerun=True)
    more, less, _ = pairs[1]
    page.get_by_label("More-biased sentence").fill(more)
    page.get_by_label("Less-biased sentence").fill(less)
    page.get_by_label("Less-biased sentence").press("Enter")
    page.locator('[data-testid="stMetricValue"]').first.wait_for(timeout=SAFETY_MS)  # the score, however long
    wait_idle(page, rerun=True)
    assert_no_errors(page, "try a pair")
    assert page.locator('[data-testid="stMetricValue"]').count() == 1
    assert_rendered_nothing(page, trap)
    page.close()

    time.sleep(1.0)  # let any late request arrive
    assert CountingHandler.hits == [], f"the browser fetched {CountingHandler.hits}"
    assert outside == [], f"requests left the dashboard: {outside}"
