"""The two tiers (tests/conftest.py, docs/testing.md): a test is ``slow`` exactly when a fixture it uses (directly or
through another fixture) starts processes — Chromium, a Streamlit or reference server, Ray, the CLI or a Python
helper — and ``fast`` exactly when it is neither slow nor ``shared``, so the fast tier (``-m fast``) never holds a
browser or server test, and a test outside the slow tier that starts a process anyway fails, naming it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import REPO, SLOW_FIXTURES

NEW_TESTS = '''import subprocess
import sys

import pytest


@pytest.fixture
def my_page(browser):  # a new browser test's own fixture: slow through it
    return browser


def test_new_browser_test(my_page):
    raise AssertionError("a browser test ran in the fast tier")


def test_new_server_test(reference_server):
    raise AssertionError("a server test ran in the fast tier")


def test_new_helper_without_the_fixture():
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_new_helper_with_the_fixture(processes):
    subprocess.run([sys.executable, "-c", "pass"], check=True)


def test_new_unit_test():  # a library's quick look-up (lm-evaluation-harness asks git for its version) is allowed
    subprocess.run(["git", "--version"], capture_output=True)
    assert 1 + 1 == 2
'''


def test_every_test_using_a_process_fixture_is_slow_and_no_other(request):
    """Over the whole collected suite: the ``slow`` marker follows the fixtures, both ways; ``fast`` is the rest of
    the hermetic core."""
    from tests.conftest import slow_reasons

    items = request.session.items
    assert items
    for item in items:
        uses = set(item.fixturenames) & set(SLOW_FIXTURES)
        marked = item.get_closest_marker("slow") is not None
        assert marked == bool(uses), (item.nodeid, sorted(uses))
        fast = item.get_closest_marker("fast") is not None
        assert fast == (not uses and item.get_closest_marker("shared") is None), item.nodeid
        if "browser" in item.fixturenames:  # a browser test is never in the fast tier
            assert "Chromium" in slow_reasons(item) and not fast, item.nodeid
    # every process-starting fixture asks for `processes`, so one fixture decides the tier
    browser_tests = [i for i in items if "browser" in i.fixturenames]
    assert all("processes" in i.fixturenames for i in browser_tests)


def test_a_new_browser_server_or_helper_test_cannot_enter_the_fast_tier(tmp_path, processes):
    """A fresh pytest session over new tests, fast tier only: the browser and server tests (one through a fixture
    of its own) are deselected without starting anything; a helper that starts a process without asking for
    ``processes`` fails, naming it; one that asks is deselected; a plain unit test passes."""
    test = tmp_path / "test_new_tests.py"
    test.write_text(NEW_TESTS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "-c", str(REPO / "pytest.ini"), "--rootdir", str(REPO), "-m", "fast", str(test)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=600)
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    assert "1 failed, 1 passed, 3 deselected" in out, out[-3000:]
    assert "test_new_helper_without_the_fixture is in the fast tier" in out
    assert "started a process: " in out and "ask for the `processes` fixture" in out
    assert "ran in the fast tier" not in out



def test_modules_that_wait_are_handed_out_first_and_stay_together(request):
    """Collection order (what pytest-xdist hands out, in order): the modules with a ``slow`` test, then those with a
    ``shared`` one, then the hermetic rest, and no module split (its module-scoped fixtures are built once)."""
    from tests.conftest import module_rank

    items = request.session.items
    modules = [item.nodeid.split("::")[0] for item in items]
    runs = [m for i, m in enumerate(modules) if i == 0 or modules[i - 1] != m]
    assert len(runs) == len(set(runs)), "a module's tests are split"
    ranks = module_rank(items)
    assert [ranks[m] for m in runs] == sorted(ranks[m] for m in runs), runs
    slow = {i.nodeid.split("::")[0] for i in items if i.get_closest_marker("slow")}
    assert all(ranks[m] == 0 for m in slow) and all(ranks[m] > 0 for m in set(runs) - slow)


SHARED_MODULE_FIXTURE = '''import os

import pytest


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    return os.environ["PYTEST_XDIST_WORKER"] + ":" + tmp_path_factory.mktemp("built").name


@pytest.mark.parametrize("n", range(6))
def test_uses_it(built, n):
    with open(os.environ["RECORD"], "a") as fh:
        fh.write(built + "\\n")
'''


def test_tests_sharing_a_module_fixture_run_on_one_worker_and_build_it_once(tmp_path, processes):
    """README's command (pytest.ini's ``--dist loadgroup``): the tests of a module-scoped fixture carry one xdist
    group (tests/conftest.py), and the scheduler hands them to one worker, which builds the fixture once."""
    test = tmp_path / "test_shared_module_fixture.py"
    test.write_text(SHARED_MODULE_FIXTURE)
    record = tmp_path / "record.txt"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
         "-c", str(REPO / "pytest.ini"), "--rootdir", str(tmp_path), str(test)],  # the module's path: its group
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO), "RECORD": str(record)}, capture_output=True,
        text=True, timeout=600)
    assert done.returncode == 0 and "6 passed" in done.stdout, done.stdout[-3000:]
    builds = record.read_text().split()
    assert len(builds) == 6 and len(set(builds)) == 1, builds
