"""One sweep task: one model on one input with the methods that read that input, through the one runner.

Each method of a task (:class:`biascore.sweep.spec.Task`) runs through :func:`biascore.runs.runner.run`, so a sweep
stores exactly what ``biascore run`` and the dashboard store, and a cached task loads no model. ``pll`` is the
attribution method's second summary; ``lmeval`` its lm-eval-compatible score, from the run with lm-eval's prefix
token (a masked model gets a note). A method that does not apply is a note, not a failure.

:func:`run_task` never raises for a failure of the task itself: it returns a :class:`TaskResult` with the error.
Only the death of the process running it escapes (what Ray retries).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from biascore import settings
from biascore.errors import one_line
from biascore.models.handle import ModelHandle
from biascore.models.spec import ModelSpec
from biascore.contract.method import NotApplicable
from biascore.models.precision import Precision, precision_of
from biascore.progress import ProgressFn
from biascore.runs.runner import run
from biascore.store.cache import ResultCache
from biascore.sweep.spec import Task, resolve_metric


@dataclass
class TaskResult:
    """What a task sends back to the driver: small summaries only, the per-pair frames stay in the cache."""

    task: str
    #: the task's model (:attr:`Task.spec`): its label names it in the report
    spec: ModelSpec
    kind: str
    input: str
    metrics: tuple[str, ...]
    ok: bool
    error: str = ""
    seconds: float = 0.0
    model_loaded: bool = False
    #: metric → rows: attribution/pll the engine's summarize() rows, fields the field table, seat one row,
    #: labdet the per-nationality table
    summaries: dict[str, list[dict]] = field(default_factory=dict)
    #: metric → (summary column, name) of its headline when it is read per bias type (:meth:`Method.headline`)
    headlines: dict[str, tuple[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    attempt: int = 1
    #: the precision of the task's results, read from the stored result (None before one is read)
    precision: Precision | None = None

    @classmethod
    def of(cls, task: Task, **values) -> "TaskResult":
        """The result record of ``task`` (not run yet: ``ok=False`` unless ``values`` say otherwise)."""
        return cls(task.name, task.spec, task.kind, task.input, task.metrics, **{"ok": False, **values})


def _run_metrics(task: Task, handle: ModelHandle, cache, data_dir, limit, method_options: dict, progress,
                 out: TaskResult) -> None:
    for metric in task.metrics:
        method, summary_options = resolve_metric(metric)
        values = {**method_options.get(method.name, {}), **summary_options}
        try:
            result = run(method, handle, task.input, limit=limit if method.input_kind.first else None, cache=cache,
                         data_dir=data_dir, progress=progress, **values)
        except NotApplicable as exc:
            out.notes.append(f"{metric}: {one_line(exc)}")
            continue
        out.precision = out.precision or precision_of(result)
        out.summaries[metric] = method.summary(result).to_dict("records")  # Python scalars (pandas)
        headline = method.headline(result.options)
        if headline is not None and headline.group == "bias_type":
            out.headlines[metric] = (headline.column, headline.name)
        out.notes += [f"{metric}: {k} {v}" for k, v in result.conventions.items()
                      if k not in values and k not in ("jsd", "senses")]


def _reporting(progress: ProgressFn | None, status, task_name: str, every_s: float = 1.0) -> ProgressFn:
    """``progress`` plus the pairs done in the task's status file (at most once per ``every_s``, and at the end)."""
    last = [float("-inf")]

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done, total)
        now = time.monotonic()
        if status is not None and (now - last[0] >= every_s or done >= total):
            last[0] = now
            status.progress(task_name, done, total)

    return report


def run_task(task: Task, *, cache_dir: str, data_dir: str | None = None, limit: int | None = None,
             method_options: dict | None = None, source: ModelHandle | None = None, status=None, progress: ProgressFn | None = None) -> TaskResult:
    """Run one task into the cache at ``cache_dir`` and return its summaries (or its error).

    ``source`` lets a caller share one model handle across tasks (loaded at most once); ``method_options``
    maps a method name to its option values (e.g. ``{"labdet": {"n_boot": 500}}``); ``status`` (a
    :class:`biascore.sweep.status.SweepStatus`) records running / done / failed for readers of the cache.
    """
    source = source or ModelHandle(task.spec)
    loads_before = source.loads
    out = TaskResult.of(task)
    if status is not None:
        status.task(task.name, "running")
        out.attempt = int(status.read_task(task.name).get("attempt", 1))
    t0 = time.perf_counter()
    try:
        # explicit where the runner takes the directories, in the environment for helpers that read settings
        with settings.directories(data_dir, cache_dir):
            _run_metrics(task, source, ResultCache(cache_dir), data_dir, limit, method_options or {},
                         _reporting(progress, status, task.name), out)
        out.ok = True
    except Exception as exc:  # noqa: BLE001 - reported by name with its error, the sweep goes on
        out.error = one_line(exc, with_type=True, public=False)
    out.seconds = time.perf_counter() - t0
    out.model_loaded = source.loads > loads_before
    if status is not None:
        if out.ok:
            status.task(task.name, "done", seconds=round(out.seconds, 3), model_loaded=out.model_loaded)
        else:
            status.task(task.name, "failed", error=out.error, seconds=round(out.seconds, 3))
    return out
