"""The local executor: one process, one model loaded at a time, a progress bar over tasks and within each.

Tasks arrive grouped by model (a model loaded another way — quantized, split — is a model of its own) (:meth:`biascore.sweep.spec.SweepSpec.tasks`); the model is loaded by the
first of its tasks that needs it, shared by the rest, and released before the next model's tasks start.
"""
from __future__ import annotations

from itertools import groupby

from biascore.progress import Bar
from biascore.sweep.spec import Task
from biascore.models.handle import ModelHandle
from biascore.sweep.tasks import TaskResult, run_task


def run_local(tasks: list[Task], *, cache_dir: str, data_dir: str | None, limit: int | None = None,
              method_options: dict | None = None, status=None, show_progress: bool = True) -> list[TaskResult]:
    results: list[TaskResult] = []
    with Bar("sweep", unit="task", disable=not show_progress) as outer:
        outer(0, len(tasks))
        for _, group in groupby(tasks, key=lambda t: t.spec):
            group = list(group)
            handle = ModelHandle(group[0].spec)
            try:
                for task in group:
                    with Bar(task.name, unit="item", leave=False, disable=not show_progress) as inner:
                        results.append(run_task(task, cache_dir=cache_dir, data_dir=data_dir, limit=limit,
                                                source=handle, method_options=method_options, status=status,
                                                progress=inner))
                    failed = sum(not r.ok for r in results)
                    outer(len(results), len(tasks), f"sweep ({failed} failed)" if failed else None)
            finally:
                handle.release()
    return results
