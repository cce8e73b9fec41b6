"""One interpreter that runs `python -m biascore` commands one after another, for the tests whose point is what a
command prints, returns and stores, not that each gets a fresh interpreter: each command then costs its own work,
not another import of torch, transformers and pandas (3–5 s of CPU a process on a 2-core machine).

Each command runs as ``python -m biascore ARGS`` runs it (``runpy`` executes ``biascore/__main__.py`` with
``sys.argv`` set: its ``sys.exit(main())``), with its stdout and stderr captured, its exit status read from
``SystemExit``, and an exception that escapes printed as a traceback with status 1, as the interpreter would. The
test sends one command, gets its :class:`subprocess.CompletedProcess`, looks at what it left, then sends the next.
"""
from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

#: the interpreter's loop: one request (argv, extra environment) a line on stdin, one answer a line on the pipe
#: whose descriptor is its first argument (stray output on descriptors 1 and 2 goes to a log file instead)
LOOP = r"""
import contextlib, io, json, os, runpy, sys, traceback
answers = os.fdopen(int(sys.argv[1]), "w")
for line in sys.stdin:
    request = json.loads(line)
    saved = dict(os.environ)
    os.environ.update(request["env"])
    sys.argv = ["biascore", *request["argv"]]
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("biascore", run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
            if isinstance(exc.code, str):
                print(exc.code, file=sys.stderr)
        except BaseException:
            traceback.print_exc()
            code = 1
    os.environ.clear()
    os.environ.update(saved)
    answers.write(json.dumps({"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}) + "\n")
    answers.flush()
"""


class Shell:
    """``shell("run", "toy", "--scale", "2", TOY_STOP_AT="20")``: the command's CompletedProcess; ``env`` holds for
    every command, keywords for that one only. Close it (or use it as a context manager) to end the interpreter."""

    def __init__(self, cwd: Path, env: dict[str, str], timeout_s: float = 600):
        read, write = os.pipe()
        self.log = tempfile.TemporaryFile("w+")  # a file, not a pipe: a chatty command never blocks on it
        self.proc = subprocess.Popen([sys.executable, "-c", LOOP, str(write)], cwd=cwd, env=env, text=True,
                                     stdin=subprocess.PIPE, stdout=self.log, stderr=subprocess.STDOUT,
                                     pass_fds=(write,))
        os.close(write)
        self.answers = os.fdopen(read)
        self.timeout_s = timeout_s

    def __call__(self, *argv: str, **env: str) -> subprocess.CompletedProcess:
        self.proc.stdin.write(json.dumps({"argv": list(argv), "env": env}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.answers], [], [], self.timeout_s)
        line = self.answers.readline() if ready else ""
        if not line:
            self.close()
            self.log.seek(0)
            raise AssertionError(f"the CLI shell gave no answer to {argv} ({'timed out' if not ready else 'ended'}): "
                                 f"{self.log.read()[-3000:]}")
        done = json.loads(line)
        return subprocess.CompletedProcess(["biascore", *argv], done["returncode"], done["stdout"], done["stderr"])

    def close(self) -> None:
        """End the interpreter: every command has answered, so nothing is left half-done (no wait for its exit)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.proc.stdin.close()
        self.answers.close()
        self.log.close()

    def __enter__(self) -> "Shell":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
