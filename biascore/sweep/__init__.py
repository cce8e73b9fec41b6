"""Sweeps: every model × benchmark (× the metrics that share its forward passes), resumable, local or on Ray.

* :mod:`~biascore.sweep.spec` — what to run (CLI arguments or a YAML/TOML file) and its expansion into tasks
* :mod:`~biascore.sweep.tasks` — one task: the scorers' own cached entry points, nothing re-implemented
* :mod:`~biascore.sweep.status` — per-task status files in the cache directory (what the dashboard shows)
* :mod:`~biascore.sweep.local` — one process, one model loaded at a time
* :mod:`~biascore.sweep.ray_runner` — one Ray task per model × benchmark on a local instance or a cluster
* :mod:`~biascore.sweep.report` — the Overview table (the engine's :func:`summarize`) and the failures
* :mod:`~biascore.sweep.cli` — ``python -m biascore sweep``
"""
from biascore.sweep.status import SweepProgress, read_sweeps

__all__ = ["SweepProgress", "read_sweeps"]
