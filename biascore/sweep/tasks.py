"""One sweep task: one model on one input, through the scorers' own cached, resumable entry points.

* pair benchmark → :func:`biascore.methods.attribution.scorer.score_benchmark` (attribution and pll come from
  its one set of forward passes, cached per model × benchmark and resumed from its shards; ``lmeval`` from the
  run with lm-eval's prefix token — the same one when the model's tokens agree; a masked model gets a note) and, for
  ``fields``, :func:`biascore.methods.fields.scorer.score_fields` on the same cached scores;
* SEAT test → :func:`biascore.methods.association.scorer.run_seat`;
* LABDet language → :func:`biascore.methods.labdet.scorer.score_labdet`.

A pair task whose result is cached is answered without loading the model when the model's identity can be
read from its files (local folders, embedded aliases: :func:`biascore.core.models.model_identity`), exactly as
``python -m biascore score`` does. SEAT and LABDet tasks load the model (their cache keys need it loaded).

:func:`run_task` never raises for a failure of the task itself: it returns a :class:`TaskResult` with the
error, so a bad model is reported by name and the other tasks go on. Only the death of the process running
it escapes (what Ray retries).
"""
from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field

from biascore.core import settings
from biascore.core.registry import ProgressFn
from biascore.sweep.spec import Task



@dataclass
class TaskResult:
    """What a task sends back to the driver: small summaries only, the per-pair frames stay in the cache."""

    task: str
    model: str
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
    notes: list[str] = field(default_factory=list)
    attempt: int = 1


class ModelSource:
    """One model, loaded on first use and kept until :meth:`release` (the local runner shares it across that
    model's tasks; a Ray task has its own). ``loads`` counts real loads."""

    def __init__(self, name: str, device: str = "auto", dtype: str = "auto", trust_remote_code: bool = False):
        self.name, self.device, self.dtype, self.trust_remote_code = name, device, dtype, trust_remote_code
        self._lm = None
        self._error: Exception | None = None
        self._identity, self._identity_read = None, False
        self.loads = 0

    def identity(self):
        """The model's cache identity from its files (None when only a load can tell), computed once."""
        if not self._identity_read:
            from biascore.core.models import model_identity
            self._identity = model_identity(self.name, device=self.device, dtype=self.dtype)
            self._identity_read = True
        return self._identity

    def load(self):
        """The loaded model; a model that failed to load fails again at once (no second download attempt)."""
        if self._error is not None:
            raise self._error
        if self._lm is None:
            from biascore.core.models import load_model
            try:
                self._lm = load_model(self.name, device=self.device, dtype=self.dtype,
                                      trust_remote_code=self.trust_remote_code)
            except Exception as exc:
                self._error = exc
                raise
            self.loads += 1
        return self._lm

    def release(self) -> None:
        """Drop the model (and the GPU memory it held) before the next model is loaded."""
        if self._lm is None:
            return
        self._lm = None
        gc.collect()
        try:
            import torch
            if torch.cuda.is_available():
                torch.cuda.empty_cache()
        except ImportError:  # pragma: no cover - torch is a hard dependency
            pass


def _records(frame) -> list[dict]:
    return [{k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()} for row in frame.to_dict("records")]


def _pair_task(task: Task, source: ModelSource, cache, data_dir, limit, numerics, progress,
               out: TaskResult) -> None:
    from biascore.core.datasets import load_benchmark
    from biascore.methods.attribution.scorer import METRICS as ATTRIBUTION_METRICS, score_benchmark, summarize

    bm = load_benchmark(task.input, data_dir)
    identity = source.identity()
    frame = score_benchmark(source.load, bm, limit=limit, progress=progress, cache=cache, identity=identity,
                            numerics=numerics)
    for metric in task.metrics:
        if metric in ATTRIBUTION_METRICS and metric != "lmeval":
            out.summaries[metric] = _records(summarize(frame, metric))
    if "lmeval" in task.metrics:  # issue 18: lm-eval's prefix; the same cached result when the tokens agree
        from biascore.methods.attribution.lmeval import LmevalUnavailable, require_causal
        try:
            require_causal(identity.kind if identity is not None else source.load().kind, task.model)
        except LmevalUnavailable as exc:
            out.notes.append(f"lmeval: {exc}")
        else:
            lm_frame = score_benchmark(source.load, bm, limit=limit, progress=progress, cache=cache,
                                       identity=identity, numerics=numerics, prefix="lmeval")
            out.summaries["lmeval"] = _records(summarize(lm_frame, "lmeval"))
    if "fields" in task.metrics:
        from biascore.methods.fields.scorer import score_fields
        from biascore.methods.fields.tagging import NoLexiconError
        try:
            res = score_fields(source.load, bm, limit=limit, cache=cache, identity=identity)
        except NoLexiconError as exc:
            out.notes.append(f"fields: {exc}")
        else:
            out.summaries["fields"] = _records(res.table)
            out.notes += [f"fields: {n} pair(s) in {lang} left out (no USAS lexicon)"
                          for lang, n in res.untagged.items()]


def _seat_task(task: Task, source: ModelSource, cache, out: TaskResult) -> None:
    from biascore.methods.association.scorer import run_seat
    out.summaries["seat"] = _records(run_seat(source.load(), task.input, cache=cache))


def _labdet_task(task: Task, source: ModelSource, cache, data_dir, out: TaskResult) -> None:
    from biascore.methods.labdet.scorer import OUTPUT_COLUMNS, score_labdet
    res = score_labdet(source.load(), task.input, data_dir=data_dir, cache=cache)
    out.summaries["labdet"] = _records(res.table[OUTPUT_COLUMNS])
    out.notes.append("labdet: held-out probe accuracy " + ", ".join(f"{k} {v:.3f}" for k, v in res.accuracy.items()))


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
    return text if len(text) <= 400 else text[:399] + "…"


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
             load_options: dict | None = None, numerics: str = "exact", source: ModelSource | None = None,
             status=None, progress: ProgressFn | None = None) -> TaskResult:
    """Run one task into the cache at ``cache_dir`` and return its summaries (or its error).

    ``source`` lets a caller share one loaded model across tasks; ``status`` (a
    :class:`biascore.sweep.status.SweepStatus`) records running / done / failed for readers of the cache.
    """
    from biascore.core.cache import ResultCache

    source = source or ModelSource(task.model, **(load_options or {}))
    loads_before = source.loads
    out = TaskResult(task.name, task.model, task.kind, task.input, task.metrics, ok=False)
    if status is not None:
        status.task(task.name, "running")
        out.attempt = int(status.read_task(task.name).get("attempt", 1))
    t0 = time.perf_counter()
    try:
        # explicit where the scorers take the directories, in the environment for helpers that read settings
        with settings.directories(data_dir, cache_dir):
            cache = ResultCache(cache_dir)
            if task.kind == "pairs":
                _pair_task(task, source, cache, data_dir, limit, numerics, _reporting(progress, status, task.name),
                           out)
            elif task.kind == "seat":
                _seat_task(task, source, cache, out)
            elif task.kind == "labdet":
                _labdet_task(task, source, cache, data_dir, out)
            else:
                raise ValueError(f"unknown task kind {task.kind!r}")
        out.ok = True
    except Exception as exc:  # noqa: BLE001 - reported by name with its error, the sweep goes on
        out.error = _one_line(exc)
    out.seconds = time.perf_counter() - t0
    out.model_loaded = source.loads > loads_before
    if status is not None:
        if out.ok:
            status.task(task.name, "done", seconds=round(out.seconds, 3), model_loaded=out.model_loaded)
        else:
            status.task(task.name, "failed", error=out.error, seconds=round(out.seconds, 3))
    return out
