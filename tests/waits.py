"""How long a test waits for an event before it gives up: a safety net, never a schedule.

Tests wait for the event itself (a line from a process, a file, an element on the page); the limit below only
stops a test that would otherwise hang, so it is generous: CI machines are shared and a busy one may take many
times as long as an idle one (the suite also runs its waiting tests once more with both cores loaded, .ci/run).
``BIASCORE_TEST_SAFETY_S`` changes it.
"""
from __future__ import annotations

import os
import time
from typing import Callable

SAFETY_S = float(os.environ.get("BIASCORE_TEST_SAFETY_S", "900"))
SAFETY_MS = SAFETY_S * 1000


def wait_until(condition: Callable[[], object], what: str, *, timeout: float = SAFETY_S, poll: float = 0.1,
               alive: Callable[[], object] | None = None) -> object:
    """Return ``condition()``'s first true value, looking every ``poll`` seconds; AssertionError naming ``what``
    after ``timeout`` seconds, or as soon as ``alive()`` (e.g. a process still running) turns false."""
    end = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if alive is not None and not alive():
            value = condition()  # the last look after the process ended
            if value:
                return value
            raise AssertionError(f"gave up waiting for {what}: the process it depends on ended")
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(poll)


# --------------------------------------------------------------------------------------------- a Streamlit page
#: Added to every page of the session's Chromium (tests/conftest.py, ``browser``) before its scripts run: it keeps
#: count, from the page's WebSocket, of the script runs the page asks for (a click, Enter, a page link; not a
#: fragment's timer, whose request the server may drop) and of the runs the server starts and ends
#: (Streamlit's BackMsg ``rerun_script`` = field 11, its ``is_auto_rerun`` = 6; ForwardMsg ``new_session`` = 4,
#: ``script_finished`` = 6 (2: stopped early for an ``st.rerun``), ``session_status_changed`` = 9).
RUNS_JS = r"""(() => {
  if (window.__runs) return;
  const runs = window.__runs = {asked: 0, answered: 0, seen: 0, running: true, rerun: false, idleChecks: 0};
  const varint = (b, i) => {
    let v = 0, m = 1, x;
    do { x = b[i++]; v += (x & 127) * m; m *= 128; } while (x & 128);
    return [v, i];
  };
  const each = (b, i, end, fn) => {  // fn(field number, varint value or [start, end] of a length-delimited one)
    while (i < end) {
      let t, v; [t, i] = varint(b, i);
      if ((t & 7) === 0) [v, i] = varint(b, i);
      else if ((t & 7) === 2) { let n; [n, i] = varint(b, i); v = [i, i + n]; i += n; }
      else if ((t & 7) === 1) { i += 8; continue; } else if ((t & 7) === 5) { i += 4; continue; } else return;
      fn(t >> 3, v);
    }
  };
  const bytes = d => d instanceof ArrayBuffer ? new Uint8Array(d) : ArrayBuffer.isView(d) ?
    new Uint8Array(d.buffer, d.byteOffset, d.byteLength) : null;
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', event => {
        const b = bytes(event.data);
        if (!b) return;
        each(b, 0, b.length, (field, v) => {
          if (field === 4) { runs.answered = runs.asked; runs.running = true; runs.rerun = false; }
          else if (field === 6) runs.rerun = v === 2;
          else if (field === 9) {
            let on = false;
            each(b, v[0], v[1], (f, x) => { if (f === 2) on = !!x; });
            runs.running = on;
          }
        });
      });
    }
    send(data) {
      const b = bytes(data);
      if (b) each(b, 0, b.length, (field, v) => {
        if (field !== 11) return;
        let auto = false; each(b, v[0], v[1], (f, x) => { if (f === 6) auto = !!x; });
        if (!auto) runs.asked += 1;
      });
      return super.send(data);
    }
  };
})();"""

#: true once the page is idle: every run it asked for has started (with ``rerun``: and it has asked for one since
#: the last wait), none is running or about to rerun (an ``st.rerun`` ends a run "early" and starts the next), the
#: page shows "not running" (or its script's syntax error) with no spinner or skeleton, and all this at two
#: animation frames in a row (the page draws what it received before the second)
IDLE_JS = """rerun => {
  const runs = window.__runs, app = document.querySelector('[data-testid="stApp"]');
  const idle = app && (!rerun || runs.asked > runs.seen) && !runs.running && !runs.rerun &&
    runs.answered === runs.asked &&
    ['notRunning', 'compilationError'].includes(app.getAttribute('data-test-script-state')) &&
    !document.querySelector('[data-testid="stSpinner"], [data-testid="stSkeleton"], [data-testid="stSkeletonElement"]');
  runs.idleChecks = idle ? runs.idleChecks + 1 : 0;
  if (runs.idleChecks < 2) return false;
  runs.seen = runs.asked;
  return true;
}"""


def wait_idle(page, *, rerun: bool = False, timeout: float = SAFETY_S) -> None:
    """Wait until the Streamlit page has run every script run it asked for (a page load, a click, Enter, a page
    link) to its end, reruns included, and drawn it (:data:`IDLE_JS`). ``rerun=True`` after an action that must
    start a run (a button, Enter in a text box, a page link, a selection): first wait for the page to ask for it
    (Streamlit may send it a few frames after the event). A page that reruns itself later on a timer (a fragment
    watching a run) is idle between those runs: wait for what that run shows."""
    start = time.monotonic()
    assert page.evaluate("() => window.__runs ? (window.__runs.idleChecks = 0, true) : false"), \
        "wait_idle: the page was not opened through the session's browser fixture (tests/conftest.py)"
    page.wait_for_function(IDLE_JS, arg=rerun, polling="raf", timeout=timeout * 1000)
    if os.environ.get("BIASCORE_E2E_TIMING"):
        import sys

        print(f"idle after {time.monotonic() - start:.1f}s: {page.url}", file=sys.stderr)


class RunsBrowser:
    """The session's Chromium, with :data:`RUNS_JS` added to every page it opens (for :func:`wait_idle`)."""

    def __init__(self, browser):
        self._browser = browser

    def new_context(self, **kwargs):
        context = self._browser.new_context(**kwargs)
        context.add_init_script(RUNS_JS)
        return context

    def new_page(self, **kwargs):
        page = self._browser.new_page(**kwargs)
        page.context.add_init_script(RUNS_JS)  # (the page's own context: tabs it opens get it too)
        return page

    def __getattr__(self, name):
        return getattr(self._browser, name)
