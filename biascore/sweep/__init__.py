"""Sweeps: every model × benchmark (× the metrics that share its forward passes), resumable, local or on Ray."""
from biascore.sweep.status import SweepProgress, read_sweeps

__all__ = ["SweepProgress", "read_sweeps"]
