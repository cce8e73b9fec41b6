"""The local executor: one process, one model loaded at a time, a progress bar over tasks and within each.

Tasks arrive grouped by model (:meth:`biascore.sweep.spec.SweepSpec.tasks`); the model is loaded by the
first of its tasks that needs it, shared by the rest, and released before the next model's tasks start.
"""
from __future__ import annotations

import sys
from itertools import groupby

from biascore.sweep.spec import Task
from biascore.sweep.tasks import ModelSource, TaskResult, run_task


def run_local(tasks: list[Task], *, cache_dir: str, data_dir: str | None, limit: int | None = None,
              load_options: dict | None = None, numerics: str = "exact", status=None,
              show_progress: bool = True) -> list[TaskResult]:
    from tqdm import tqdm

    results: list[TaskResult] = []
    outer = tqdm(total=len(tasks), unit="task", desc="sweep", file=sys.stderr, disable=not show_progress)
    for model, group in groupby(tasks, key=lambda t: t.model):
        source = ModelSource(model, **(load_options or {}))
        try:
            for task in group:
                inner = tqdm(total=0, unit="pair", desc=task.name, leave=False, file=sys.stderr,
                             disable=not show_progress)

                def progress(done: int, total: int, bar=inner) -> None:
                    bar.total, bar.n = total, done
                    bar.refresh()

                results.append(run_task(task, cache_dir=cache_dir, data_dir=data_dir, limit=limit, source=source,
                                        numerics=numerics, status=status, progress=progress))
                inner.close()
                outer.update(1)
                outer.set_postfix(failed=sum(not r.ok for r in results))
        finally:
            source.release()
    outer.close()
    return results
