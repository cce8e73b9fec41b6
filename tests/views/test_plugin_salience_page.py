"""A plugin attribution method written outside the repository, installed as pip leaves one (an entry point in a
``*.dist-info`` on ``sys.path``: tests/contract/test_method_plugins.py), declares token salience per pair through
the kit's typed views (``PairTable`` whose rows open ``TokenSalience`` and ``RankedUnits``). With no change under
views/, its generated page in a real browser (Debian's Chromium through Playwright) offers the pair table of Token
attributions with its filters, and a row opens the pair's heatmap and ranked units, at sub-word and word level."""
from __future__ import annotations

from pathlib import Path

import pytest

from dashboard_server import CHROMIUM, dashboard
from tests.conftest import FIXTURE_DATA, REPO
from tests.contract.test_method_plugins import install
from tests.views.test_e2e_browser import assert_no_errors
from waits import SAFETY_MS, wait_idle

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")

#: per pair, each word's salience: minus its length over 10 when the other sentence has it too, NaN (modified) when
#: not, so that the shared words are scored and the differing ones are hatched as in Token attributions
SALIENCE_PLUGIN = '''"""A plugin attribution method: word-length salience of the shared words of each pair."""
import math
import re

import pandas as pd

from biascore.api import PairTable, RankedUnits, TokenSalience
from biascore.contract.method import Method
from biascore.contract.options import Options
from biascore.contract.schema import columns
from biascore.inputs.kinds import PAIRS


def _sentence(text, other):
    spans = [m.span() for m in re.finditer(r"\\w+", text)]
    theirs = set(re.findall(r"\\w+", other))
    return [list(s) for s in spans], [-len(text[a:b]) / 10 if text[a:b] in theirs else math.nan for a, b in spans]


class {cls}(Method):
    name = "{name}"
    summary_line = "word-length salience of each pair (a plugin)"
    paper = "none (a test plugin)"
    input_kind = PAIRS
    Options = Options
    schema = columns([("pair_id", "int64", "the pair"), ("bias_type", "str", "its bias type"),
                      ("sent_more", "str", "more-biased"), ("sent_less", "str", "less-biased"),
                      ("score", "float64", "mean salience"), ("more_spans", "list[list[int]]", "word spans"),
                      ("more_values", "list[float]", "salience per word"), ("less_spans", "list[list[int]]", "word spans"),
                      ("less_values", "list[float]", "salience per word")])
    needs_model = False
    one_row_per_input_row = True

    def compute(self, ctx, bench, options):
        rows = []
        for r in bench.frame.itertuples(index=False):
            ms, mv = _sentence(r.sent_more, r.sent_less)
            ls, lv = _sentence(r.sent_less, r.sent_more)
            scored = [v for v in mv if not math.isnan(v)]
            rows.append(dict(pair_id=int(r.pair_id), bias_type=str(r.bias_type), sent_more=r.sent_more,
                             sent_less=r.sent_less, score=sum(scored) / max(len(scored), 1), more_spans=ms,
                             more_values=mv, less_spans=ls, less_values=lv))
        return pd.DataFrame(rows)

    def drawn(self, result):
        frame = result.frame

        def detail(pair_id):
            r = frame.loc[frame.pair_id == pair_id].iloc[0]
            salience = TokenSalience.of_pair(
                r.sent_more, r.sent_less, ([tuple(s) for s in r.more_spans], list(r.more_values)),
                ([tuple(s) for s in r.less_spans], list(r.less_values)))
            return [salience, RankedUnits(salience)]

        return [PairTable(frame[["pair_id", "bias_type", "sent_more", "sent_less", "score"]], detail)]
'''


def test_a_plugin_declaring_token_salience_gets_the_token_attributions_views(tmp_path, browser, processes):
    site = tmp_path / "site"
    site.mkdir()
    install(site, "biascore-wordlen", "wordlen_plugin", "wordlen", "WordLength", "wordlen",
            source=SALIENCE_PLUGIN)
    assert not any("wordlen" in f.read_text() for f in (REPO / "views").rglob("*.py"))  # no view code of its own
    env = {"PYTHONPATH": f"{REPO}:{site}", "BIASCORE_CACHE_DIR": str(tmp_path / "cache"),
           "BIASCORE_DATA_DIR": str(FIXTURE_DATA)}
    with dashboard(tmp_path / "streamlit.log", **env) as url:
        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        page.set_default_timeout(SAFETY_MS)
        try:
            page.goto(f"{url}/wordlen?model=smollm2-135m&input=demo", wait_until="domcontentloaded")
            page.locator('[data-testid="stApp"]').wait_for(timeout=SAFETY_MS)
            wait_idle(page)
            assert "wordlen" in page.locator('[data-testid="stSidebarNav"]').inner_text()
            page.get_by_role("button", name="Score now").click()  # through the runner's door
            page.locator("h3", has_text="Pair ").first.wait_for(timeout=SAFETY_MS)
            wait_idle(page, rerun=True)
            assert_no_errors(page, "wordlen")
            for label in ("Bias type", "Search text", "Sort by"):  # Token attributions' filters (no verdict column)
                assert page.get_by_text(label, exact=True).count() >= 1, label
            assert "pairs match · click a row to open it" in page.inner_text("body")
            assert page.locator(".js-plotly-plot").count() >= 2  # the pair's heatmap and its ranked units
            assert "Shared units ranked" in page.locator(".js-plotly-plot").nth(1).inner_text()
            assert "modified token (not scored)" in page.locator(".js-plotly-plot").first.inner_text()
            first = page.locator("h3", has_text="Pair ").first.inner_text()
            box = page.locator('[data-testid="stDataFrame"]').first.bounding_box()
            page.mouse.click(box["x"] + 12, box["y"] + 35 + 35 * 2 + 17)  # the third row opens its pair
            wait_idle(page, rerun=True)  # the table fragment's run, then the whole page's
            heading = page.locator("h3", has_text="Pair ").first.inner_text()
            assert heading != first and "pair=" in page.url, "selecting a row did not open another pair"
            page.get_by_text("words", exact=True).click()
            wait_idle(page, rerun=True)
            assert_no_errors(page, "wordlen (word level)")
            assert page.locator(".js-plotly-plot").count() >= 2
        finally:
            page.close()
