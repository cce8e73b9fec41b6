"""tests/waits.py's ``wait_idle`` on a real Streamlit page in the session's Chromium: it returns only once the run
an action asked for has ended, through a chain of ``st.rerun`` calls (each one ends a run "early", and the page
says "not running" for a moment before the next), after a button and after Enter in a text box, even when the
browser sends the page's request late (as a busy one does, a few frames after the click or the key; simulated here
by holding each request back), and not before: what the last run draws is on the page when it returns. (Looking
only at the page's "not running" state, it returned at once and the test failed.)"""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from dashboard_server import CHROMIUM, dashboard
from waits import SAFETY_MS, wait_idle

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"Chromium not found at {CHROMIUM} (run .ci/install-browser.sh)")

#: a page whose button starts a slow run that reruns itself four times (the work a page does, simulated)
APP = textwrap.dedent("""\
    import time
    import streamlit as st

    step = st.session_state.setdefault("step", 0)
    if st.button("Go"):
        st.session_state.step = step = 1
    if 0 < step < 5:
        with st.spinner("working"):
            time.sleep(0.3)
        st.session_state.step = step + 1
        st.rerun()
    if step == 5:
        st.write(f"done after {st.session_state.step} steps")
    name = st.text_input("Name")
    if name:
        time.sleep(0.5)
        st.write(f"hello {name}")
""")

#: a busy browser: the page's requests (counted by tests/waits.py's RUNS_JS when sent) leave 300 ms late
LATE_SEND = """(() => { const send = WebSocket.prototype.send;
  WebSocket.prototype.send = function (data) { setTimeout(() => send.call(this, data), 300); }; })();"""


def test_wait_idle_waits_for_the_whole_chain_of_runs_an_action_starts(browser, tmp_path):
    (tmp_path / "app.py").write_text(APP)

    def serve(port: int) -> list[str]:
        return [sys.executable, "-m", "streamlit", "run", str(tmp_path / "app.py"), "--server.headless", "true",
                "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]

    with dashboard(tmp_path / "streamlit.log", command=serve, cwd=tmp_path) as url:
        page = browser.new_page()
        page.add_init_script(LATE_SEND)
        page.set_default_timeout(SAFETY_MS)
        page.goto(url, wait_until="domcontentloaded")
        wait_idle(page)
        assert page.get_by_role("button", name="Go").count() == 1
        for _ in range(2):  # twice: the second chain starts from a page that has been idle
            page.get_by_role("button", name="Go").click()
            wait_idle(page, rerun=True)
            assert page.get_by_text("done after 5 steps").count() == 1, page.locator("body").inner_text()
        page.get_by_label("Name").fill("Ana")
        page.get_by_label("Name").press("Enter")
        wait_idle(page, rerun=True)
        assert page.get_by_text("hello Ana").count() == 1, page.locator("body").inner_text()
        runs = page.evaluate("() => window.__runs")
        assert runs["asked"] == runs["answered"] == runs["seen"] == 4, runs  # the first run, Go twice, Enter
        page.close()
