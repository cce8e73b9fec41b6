"""The Ray executor: one Ray task per model × input, on a local Ray instance or an existing cluster (docs/sweeps.md,
"On Ray": resources, retries, what every node must see).

``address=None`` starts a local instance (``ray.init(num_cpus=..., include_dashboard=False)``) and shuts it down at
the end; an address (``auto``, ``ray://head:10001``, ``head:6379``) joins that cluster; an instance already
initialised in this process (a notebook, a test) is used and left running. A task whose worker dies is retried by
Ray (``max_retries``) and resumes from its shards; one that fails by itself returns its error
(:func:`biascore.sweep.tasks.run_task`). Every failed task comes back by name with its error; none is dropped.
"""
from __future__ import annotations

import os

from biascore import settings
from biascore.errors import one_line
from biascore.progress import Bar
from biascore.sweep.spec import Task
from biascore.sweep.tasks import TaskResult, run_task


def _remote_task(task: Task, cache_dir: str, data_dir: str | None, limit: int | None, method_options: dict,
                 status) -> TaskResult:
    """What a Ray worker runs (a module-level function, so workers import it from this package); the task
    carries its model's frozen description, parsed once by the driver."""
    return run_task(task, cache_dir=cache_dir, data_dir=data_dir, limit=limit, method_options=method_options,
                    status=status)


def task_options(cluster_gpus: float, retries: int, cache_dir: str, data_dir: str | None) -> dict:
    """Ray options of every task: one CPU; one GPU when the cluster has any; retried ``retries`` times when its
    worker dies, never for an error of its own; the workers' environment (this checkout on ``PYTHONPATH``, the
    cache and data directories)."""
    path = [str(settings.REPO_ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    env = {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path)), "BIASCORE_CACHE_DIR": cache_dir}
    if data_dir:
        env["BIASCORE_DATA_DIR"] = data_dir
    return {"num_cpus": 1, "num_gpus": 1 if cluster_gpus >= 1 else 0, "max_retries": retries,
            "retry_exceptions": False, "runtime_env": {"env_vars": env}}


def run_ray(tasks: list[Task], *, address: str | None, cache_dir: str, data_dir: str | None,
            limit: int | None = None, method_options: dict | None = None, status=None, retries: int = 2,
            num_cpus: int | None = None, show_progress: bool = True) -> list[TaskResult]:
    import ray
    started_here = not ray.is_initialized()
    if started_here:
        if address:
            ray.init(address=address)
        else:
            ray.init(num_cpus=num_cpus or os.cpu_count(), include_dashboard=False)
    refs: dict = {}
    try:
        remote = ray.remote(_remote_task)
        options = task_options(ray.cluster_resources().get("GPU", 0), retries, cache_dir, data_dir)
        for task in tasks:
            ref = remote.options(name=task.name, **options).remote(task, cache_dir, data_dir, limit,
                                                                   method_options or {}, status)
            refs[ref] = task
        results: dict[Task, TaskResult] = {}
        with Bar("sweep (ray)", unit="task", disable=not show_progress) as bar:
            bar(0, len(tasks))
            pending = list(refs)
            while pending:
                ready, pending = ray.wait(pending, num_returns=1)
                for ref in ready:
                    task = refs[ref]
                    try:
                        results[task] = ray.get(ref)
                    except ray.exceptions.RayError as exc:  # the worker died on every attempt
                        error = one_line(RuntimeError(f"{type(exc).__name__}: the worker running it died "
                                                      f"({retries + 1} attempt(s)); {one_line(exc, public=False)}"),
                                         public=False)
                        results[task] = TaskResult.of(task, error=error, attempt=retries + 1)
                        if status is not None:
                            status.task(task.name, "failed", error=results[task].error)
                    failed = sum(not r.ok for r in results.values())
                    bar(len(results), len(tasks), f"sweep (ray, {failed} failed)" if failed else None)
        return [results[t] for t in tasks]
    except KeyboardInterrupt:
        for ref in refs:
            ray.cancel(ref, force=True)
        raise
    finally:
        if started_here:
            ray.shutdown()
