"""bench/load_test.py's rule without a browser: a page scripted poll by poll on a clock that moves only when the
harness sleeps, so the blind time is exact.

The page loop stops at the first poll past ``--max-blind`` seconds of showing nothing, so the blind time it keeps
is a hair over the limit; stored rounded to 2 decimals it read 3.0 and the person passed (CI caught it once, 1 run
in about 25, in tests/views/test_e2e_browser.py::test_load_test_fails_a_page_without_a_score)."""
from __future__ import annotations

import asyncio
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import load_test  # noqa: E402

DEMO_SCORE = "+0.31416"


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class Field:
    def __init__(self, page: "ScriptedPage") -> None:
        self.page = page

    async def fill(self, text: str) -> None:
        pass

    async def press(self, key: str) -> None:
        self.page.pressed = True


class Locator:
    async def inner_text(self) -> str:
        return "Cannot score this pair: the sentences are identical."

    async def count(self) -> int:
        return 0

    async def get_attribute(self, name: str) -> str:
        return "notRunning"


class ScriptedPage:
    """Try a pair as a browser sees it after Enter on a refused pair: the old score while the script runs for
    ``run_s`` seconds, then no score, no progress and no error box."""

    def __init__(self, clock: Clock, run_s: float) -> None:
        self.clock, self.run_s, self.pressed, self.pressed_at = clock, run_s, False, None

    def get_by_label(self, label: str) -> Field:
        return Field(self)

    def locator(self, selector: str) -> Locator:
        return Locator()

    async def evaluate(self, script: str) -> dict:
        self.clock.now += 0.0001  # one look at the page takes a tenth of a millisecond: polls every 0.1001 s
        if self.pressed and self.pressed_at is None:
            self.pressed_at = self.clock.now
        running = self.pressed_at is not None and self.clock.now - self.pressed_at < self.run_s
        score = DEMO_SCORE if self.pressed_at is None or running else None
        return {"score": score, "progress": False, "errors": [], "running": running, "server_s": None}


def refused_person(monkeypatch, run_s: float, max_blind: float = 3.0) -> dict:
    clock = Clock()  # load_test's own names only: the time and asyncio modules stay real for every other thread
    monkeypatch.setattr(load_test, "time", SimpleNamespace(perf_counter=clock, monotonic=clock))
    monkeypatch.setattr(load_test, "asyncio", SimpleNamespace(sleep=clock.sleep))
    person = load_test.Person(None, "http://127.0.0.1:1", 0, ["A b.", "A b."], "+0.12345", timeout=60,
                              max_blind=max_blind)
    person.page = ScriptedPage(clock, run_s)
    # in a thread of its own: a browser test's sync Playwright may hold a running event loop in this worker's thread
    worker = threading.Thread(target=asyncio.run, args=(person.phase_C(),))
    worker.start()
    worker.join(60)
    return person.result


def test_a_page_blind_just_past_the_limit_fails(monkeypatch):
    for run_s in (0.1, 0.5, 1.0):  # the loop stops at the first poll past 3 s: the 30th, 3.003 s after Enter
        result = refused_person(monkeypatch, run_s)
        assert 3.0 < result["longest_blind_s"] < 3.005, result
        assert result["errors"] == ["try a pair: no score shown",
                                    "try a pair: 3.00 s without visible progress or score (more than 3 s)"], result


def test_the_rule_of_judge():
    def person(longest, shown=None):
        return {"errors": [], "shown": shown, "expected": "+0.12345", "longest_blind_s": longest}

    assert load_test.judge(person(3.0, shown="+0.12345"), max_blind=3.0)["errors"] == []  # not more than the limit
    assert load_test.judge(person(None), max_blind=3.0)["errors"] == ["try a pair: no score shown"]
    assert load_test.judge(person(0.2, shown="+0.10000"), max_blind=3.0)["errors"] == [
        "try a pair: shows S_JSD +0.10000, the engine gives +0.12345"]
