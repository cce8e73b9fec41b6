"""One interpreter that runs `python -m biascore` commands one after another, for the tests whose point is what a
command prints, returns and stores, not that each gets a fresh interpreter: each command then costs its own work,
not another import of torch, transformers and pandas (3–5 s of CPU a process on a 2-core machine).

Each command runs as ``python -m biascore ARGS`` runs it (``runpy`` executes ``biascore/__main__.py`` with
``sys.argv`` set: its ``sys.exit(main())``), with its stdout and stderr captured, its exit status read from
``SystemExit``, and an exception that escapes printed as a traceback with status 1, as the interpreter would.
What a command leaves in memory (imported modules, a loaded model, the runner's memo of file reads, keyed by each
file's version) stays for the next; so a test whose point is what a new process finds on disk starts one. The
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

#: the interpreter's loop: one request (argv, extra environment) a line on stdin, one answer a line on the pipe whose
#: descriptor is its first argument. Each command starts as a fresh process would: descriptors 1 and 2 on files of
#: its own (so every writer is caught: print, logging's handlers, tqdm, C code), no root logging handler, every
#: warning shown again; the environment is restored after it.
LOOP = r"""
import json, logging, os, runpy, sys, tempfile, traceback, warnings
answers = os.fdopen(int(sys.argv[1]), "w")
for line in sys.stdin:
    request = json.loads(line)
    saved_env, saved_fds = dict(os.environ), (os.dup(1), os.dup(2))
    os.environ.update(request["env"])
    sys.argv = ["biascore", *request["argv"]]
    logging.root.handlers.clear()
    shown = list(warnings.filters)
    warnings.resetwarnings()  # forgets which warnings were shown
    warnings.filters[:] = shown
    warnings.onceregistry.clear()
    files = [tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") for _ in range(2)]
    with files[0] as out, files[1] as err:
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
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
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            for fd, saved in zip((1, 2), saved_fds):
                os.dup2(saved, fd)
                os.close(saved)
        os.environ.clear()
        os.environ.update(saved_env)
        out.seek(0)
        err.seek(0)
        answers.write(json.dumps({"returncode": code, "stdout": out.read(), "stderr": err.read()}) + "\n")
    answers.flush()
"""


class Shell:
    """``shell("run", "toy", "--scale", "3", BIASCORE_CACHE_DIR=...)``: the command's CompletedProcess; ``env``
    holds for every command, keywords for that one only. Close it (or use it as a context manager) to end the interpreter."""

    def __init__(self, cwd: Path, env: dict[str, str], timeout_s: float = 600):
        read, write = os.pipe()
        self.log = tempfile.TemporaryFile("w+")  # the interpreter's own output, between commands
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
