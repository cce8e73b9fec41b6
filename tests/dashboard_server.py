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
from typing import Callable

from waits import SAFETY_S

REPO = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("BIASCORE_CHROMIUM", "/usr/bin/chromium")
LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def dashboard(log_path: Path, *, drop_env: tuple[str, ...] = (), command: Callable[[int], list[str]] | None = None,
              cwd: Path = REPO, **env_overrides: str):
    """The dashboard's URL while the block runs: ``streamlit run app.py`` on 127.0.0.1 with this process's
    environment plus ``env_overrides`` (minus ``drop_env``); its output goes to the file ``log_path``.
    ``command(port)`` replaces the streamlit command line (e.g. ``python -m biascore snapshot serve``); ``cwd``: the
    checkout it runs in (default: this one).
    Raises RuntimeError (with the log's tail) when the process ends, or does not answer its health check within
    the tests' safety limit (tests/waits.py)."""
    with dashboard_process(log_path, drop_env=drop_env, command=command, cwd=cwd, **env_overrides) as (url, _):
        yield url


@contextlib.contextmanager
def dashboard_process(log_path: Path, *, drop_env: tuple[str, ...] = (),
                      command: Callable[[int], list[str]] | None = None, cwd: Path = REPO, poll_s: float = 0.5,
                      **env_overrides: str):
    """As :func:`dashboard`, yielding ``(url, process)`` (the server's ``subprocess.Popen``, e.g. to read its
    CPU time); the health check is asked every ``poll_s`` seconds (a benchmark timing the start asks more often)."""
    port = free_port()
    env = {**os.environ, "BROWSER_PATH": CHROMIUM, **env_overrides}
    for name in drop_env:
        env.pop(name, None)
    log_path = Path(log_path)
    log = log_path.open("w")
    argv = command(port) if command else [
        sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
        "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SAFETY_S
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
            time.sleep(poll_s)
        yield url, proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
