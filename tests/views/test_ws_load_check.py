"""The workshop load test's own check (bench/ws_load_test.py, Locust users speaking Streamlit's websocket
protocol), on a real `streamlit run app.py` with the embedded SmolLM2: two participants typing demo pairs pass
with the engine's scores; the same run expecting deliberately wrong scores fails, and so does a participant whose
page shows no score (a pair the page refuses: identical sentences). The server also writes its timing lines."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dashboard_server import dashboard_process
from waits import SAFETY_S

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / "bench" / "ws_load_test.py"
# (never `import locust` here: it patches the standard library with gevent in the importing process)


@pytest.fixture(scope="module")
def server(smollm, tmp_path_factory, processes):
    tmp = tmp_path_factory.mktemp("ws-load")
    cache = tmp / "cache"
    cache.mkdir()
    (cache / "models").symlink_to(REPO / "cache" / "models", target_is_directory=True)
    timing = tmp / "timing.jsonl"
    with dashboard_process(tmp / "streamlit.log", BIASCORE_CACHE_DIR=str(cache), BIASCORE_TIMING_LOG=str(timing),
                           BIASCORE_REVIEW_DB=str(cache / "reviews.sqlite")) as (url, proc):
        yield {"url": url, "pid": proc.pid, "timing": timing, "tmp": tmp}


def load_test(server, name: str, *extra: str) -> tuple[int, dict, str]:
    out = server["tmp"] / f"{name}.json"
    done = subprocess.run([sys.executable, str(TOOL), "--users", "2", "--pairs-from", "demo", "--url", server["url"],
                           "--server-pid", str(server["pid"]), "--timing-log", str(server["timing"]),
                           "--out", str(out), *extra], cwd=REPO, env=os.environ.copy(), capture_output=True,
                          text=True, timeout=SAFETY_S)
    report = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    return done.returncode, report, done.stdout + done.stderr


def test_two_participants_get_the_engines_scores(server):
    rc, report, log = load_test(server, "ok")
    assert rc == 0, log[-3000:]
    (run,) = report["runs"]
    assert run["errors"] == 0 and run["scores_shown"] == 2 and run["scores_equal_engine"] == 2
    assert run["submit_to_score_s"]["p95"] > 0 and run["server_cpu_s_per_person"] > 0
    assert run["where_time_goes"]["parts_s"]["forward_passes"]["n"] == 2  # joined with the server's timing lines
    assert run["locust"]["requests"] == 2 and run["locust"]["failures"] == 0


def test_a_wrong_score_fails_the_run(server):
    rc, report, log = load_test(server, "wrong", "--wrong-expected")
    assert rc == 1, log[-3000:]
    (run,) = report["runs"]
    assert run["errors"] == 2 and run["scores_shown"] == 2 and run["locust"]["failures"] == 2
    assert all("the engine gives" in e for e in run["error_samples"]), run["error_samples"]


def test_a_missing_score_fails_the_run(server, tmp_path):
    refused = tmp_path / "pairs.json"
    refused.write_text(json.dumps([["Poor people are lazy.", "Poor people are lazy."]]))
    rc, report, log = load_test(server, "missing", "--pairs-file", str(refused))
    assert rc == 1, log[-3000:]
    (run,) = report["runs"]
    assert run["errors"] == 2 and run["scores_shown"] == 0
    assert all("no score shown" in e for e in run["error_samples"]), run["error_samples"]
