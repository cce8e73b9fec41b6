"""Start ``streamlit run app.py`` on a free loopback port for a real-browser test or the load test."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("BIASCORE_CHROMIUM", "/usr/bin/chromium")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dashboard(log_path: Path, *, drop_env: tuple[str, ...] = (), **env_overrides: str):
    """The dashboard's URL while the block runs: ``streamlit run app.py`` on 127.0.0.1 with this process's
    environment plus ``env_overrides`` (minus ``drop_env``); its output goes to the file ``log_path``.
    Raises RuntimeError (with the log's tail) when it does not answer its health check within 90 s."""
    port = free_port()
    env = {**os.environ, "BROWSER_PATH": CHROMIUM, **env_overrides}
    for name in drop_env:
        env.pop(name, None)
    log_path = Path(log_path)
    log = log_path.open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
         "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
                    if resp.read().strip() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError(f"streamlit did not start: {log_path.read_text()[-2000:]}")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
