"""The ``shared`` marker (tests/conftest.py), in fresh pytest processes: a test that needs the shared files skips
with one line naming ``python -m biascore data download`` where they are absent; under
``BIASCORE_REQUIRE_SHARED=1`` (CI, where ../shared is present) it errors at set-up instead, and a ``shared`` test
skipped for any reason fails the session and is listed in ``BIASCORE_SKIPPED_SHARED_FILE``."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

NEEDS_DATA = "tests/inputs/test_datasets.py::test_gender_so_subset_split_and_curly_apostrophe"
SKIPS_ITSELF = '''import pytest


@pytest.mark.shared("data")
def test_skips_for_another_reason():
    pytest.skip("some other reason")
'''


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess:
    full = {**os.environ, "BIASCORE_DATA_DIR": "/nonexistent/data", "BIASCORE_SHARED": "/nonexistent",
            "BIASCORE_REQUIRE_SHARED": "0", **env}
    return subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-rs", "-p", "no:cacheprovider", *args],
                          cwd=REPO, env=full, capture_output=True, text=True, timeout=600)


def test_without_the_shared_files_a_shared_test_skips_with_one_line(processes):
    done = _pytest(NEEDS_DATA)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "1 skipped" in done.stdout
    (line,) = [l for l in done.stdout.splitlines() if l.startswith("SKIPPED")]
    assert "needs the benchmark data" in line and "`python -m biascore data download`" in line
    assert "BIASCORE_SHARED" in line  # where the tiny MLM and the reference outputs come from


def test_where_they_are_required_a_missing_file_fails_the_test(processes):
    done = _pytest(NEEDS_DATA, BIASCORE_REQUIRE_SHARED="1")
    assert done.returncode == 1 and "1 error" in done.stdout, done.stdout[-2000:]  # at set-up, before any fixture
    assert "BIASCORE_REQUIRE_SHARED=1 but this test needs the benchmark data" in done.stdout


def test_where_they_are_required_a_skipped_shared_test_fails_the_session(tmp_path, processes):
    from tests.conftest import _public_data_files

    data = tmp_path / "data"  # every public benchmark file present (empty): the marker lets the test run
    for rel in _public_data_files():
        (data / rel).parent.mkdir(parents=True, exist_ok=True)
        (data / rel).touch()
    test = tmp_path / "test_skips_itself.py"
    test.write_text(SKIPS_ITSELF)
    listing = tmp_path / "skipped.txt"
    args = ["-p", "tests.conftest", "-c", str(REPO / "pytest.ini"), "--rootdir", str(REPO), str(test)]
    relaxed = _pytest(*args, BIASCORE_DATA_DIR=str(data))
    assert relaxed.returncode == 0 and "1 skipped" in relaxed.stdout, relaxed.stdout[-2000:]
    done = _pytest(*args, BIASCORE_DATA_DIR=str(data), BIASCORE_REQUIRE_SHARED="1",
                   BIASCORE_SKIPPED_SHARED_FILE=str(listing))
    assert done.returncode == 1 and "1 skipped" in done.stdout, done.stdout[-2000:]
    assert "1 test(s) marked shared were skipped" in done.stdout
    assert listing.read_text().strip().endswith("test_skips_for_another_reason")
