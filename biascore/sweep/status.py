"""Status files of a sweep in the cache directory, so that anyone reading that cache sees its progress.

Layout (every file written atomically: a temporary file in the same folder, then ``os.replace``)::

    <cache>/sweeps/<sweep id>/sweep.json           the driver: tasks, executor, started / finished
    <cache>/sweeps/<sweep id>/tasks/<slug>.json    one per task: pending → running → done | failed

A task's file is written by whichever process holds the task at that moment (the driver writes
``pending`` and a final ``failed`` for a task whose worker died more often than it may be retried; the
worker writes ``running``, ``done`` and ``failed``), so no two processes write one file at once and no lock
is needed. ``attempt`` counts the times a worker started the task (a retried task shows 2 or more).
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from biascore.store.hashing import bytes_sha256
from biascore.store.locks import pid_alive

STATES = ("pending", "running", "done", "failed")
SWEEPS_DIR = "sweeps"


def _write_json(path: Path, payload: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_text(json.dumps(payload, ensure_ascii=False, default=str), encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _read_json(path: Path) -> dict | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@dataclass(frozen=True)
class SweepStatus:
    """Writer for one sweep's status files (picklable: Ray workers get a copy)."""

    root: str       # <cache>/sweeps/<sweep id>

    @classmethod
    def create(cls, cache_root: str | os.PathLike, task_names: list[str], executor: str) -> "SweepStatus":
        sweep_id = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:6]
        status = cls(str(Path(cache_root) / SWEEPS_DIR / sweep_id))
        now = time.time()
        sweep = {"id": sweep_id, "started": now, "updated": now, "finished": None, "executor": executor,
                 "host": socket.gethostname(), "pid": os.getpid(), "tasks": task_names}
        _write_json(Path(status.root) / "sweep.json", sweep)
        for name in task_names:
            status.task(name, "pending", attempt=0)
        return status

    @property
    def id(self) -> str:
        return Path(self.root).name

    def task_path(self, task_name: str) -> Path:
        return Path(self.root) / "tasks" / f"{bytes_sha256(task_name)[:16]}.json"

    def read_task(self, task_name: str) -> dict:
        return _read_json(self.task_path(task_name)) or {}

    def task(self, task_name: str, state: str, **info) -> None:
        """Record ``state`` for a task; ``running`` counts one more attempt."""
        if state not in STATES:
            raise ValueError(f"unknown task state {state!r}")
        previous = self.read_task(task_name)
        record = {**previous, **info, "task": task_name, "state": state, "updated": time.time(),
                  "host": socket.gethostname(), "pid": os.getpid()}
        if state == "running":
            record["attempt"] = int(previous.get("attempt", 0)) + 1
            for stale in ("error", "pairs_done", "pairs_total"):
                record.pop(stale, None)
        _write_json(self.task_path(task_name), record)

    def progress(self, task_name: str, done: int, total: int) -> None:
        """Pairs done of a running task (the attempt is unchanged)."""
        record = {**self.read_task(task_name), "pairs_done": int(done), "pairs_total": int(total),
                  "updated": time.time()}
        _write_json(self.task_path(task_name), record)

    def finish(self, outcome: str = "complete") -> None:
        """The driver is done: ``complete`` (every task ran, failed ones included) or ``interrupted``."""
        sweep = _read_json(Path(self.root) / "sweep.json") or {}
        sweep["finished"] = sweep["updated"] = time.time()
        sweep["outcome"] = outcome
        _write_json(Path(self.root) / "sweep.json", sweep)


@dataclass
class SweepProgress:
    """What a reader of the cache sees of one sweep."""

    id: str
    started: float
    finished: float | None
    executor: str
    total: int
    counts: dict[str, int]
    failed: list[tuple[str, str]] = field(default_factory=list)     # (task, error)
    running: list[tuple[str, int | None, int | None]] = field(default_factory=list)  # (task, pairs done, of)
    updated: float = 0.0
    interrupted: bool = False   # stopped before every task ran (Ctrl-C, or its driver on this host is gone)

    @property
    def in_progress(self) -> bool:
        return self.finished is None and not self.interrupted


def read_sweeps(cache_root: str | os.PathLike, finished_since: float | None = None) -> list[SweepProgress]:
    """Every sweep recorded under ``cache_root``, newest first; with ``finished_since`` (a time stamp), sweeps
    that finished before it are left out without reading their task files."""
    out = []
    base = Path(cache_root) / SWEEPS_DIR
    for folder in sorted(base.glob("*/"), reverse=True):
        sweep = _read_json(folder / "sweep.json")
        if not sweep or not isinstance(sweep.get("tasks"), list):
            continue
        if finished_since is not None and sweep.get("finished") and float(sweep["finished"]) < finished_since:
            continue
        status = SweepStatus(str(folder))
        counts = dict.fromkeys(STATES, 0)
        failed, running, updated = [], [], float(sweep.get("updated") or 0)
        for name in sweep["tasks"]:
            rec = status.read_task(str(name))
            state = rec.get("state") if rec.get("state") in STATES else "pending"
            counts[state] += 1
            updated = max(updated, float(rec.get("updated") or 0))
            if state == "failed":
                failed.append((str(name), str(rec.get("error", ""))))
            elif state == "running":
                running.append((str(name), rec.get("pairs_done"), rec.get("pairs_total")))
        finished = sweep.get("finished")
        interrupted = sweep.get("outcome") == "interrupted" or (
            finished is None and sweep.get("host") == socket.gethostname()
            and not pid_alive(int(sweep.get("pid") or 0)))
        out.append(SweepProgress(str(sweep.get("id", folder.name)), float(sweep.get("started") or 0), finished,
                                 str(sweep.get("executor", "")), len(sweep["tasks"]), counts, failed, running,
                                 updated, interrupted))
    return out
