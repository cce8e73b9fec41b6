"""Offline snapshots for workshops: cached results of every scorer plus the data they refer to, in one zip
(docs/dashboard.md, "Workshops: offline snapshots").

``biascore snapshot export`` writes it (:mod:`biascore.snapshot.export`: ``manifest.json``, ``cache/<scorer>/…``
byte for byte, ``data/…`` relative to the data directory); ``BIASCORE_SNAPSHOT=demo.zip`` serves the dashboard
read-only from it (:mod:`biascore.snapshot.reader`: verify, unpack once into a private read-only folder, point
:mod:`biascore.settings` at it); :mod:`biascore.snapshot.standin` gives pages an identity-only model whose cache keys
match the exported results.
"""
from __future__ import annotations

from biascore.snapshot.manifest import SnapshotError
from biascore.snapshot.reader import OpenedSnapshot, activate, active, deactivate, open_snapshot, verify
from biascore.snapshot.standin import standin_handle

__all__ = ["SnapshotError", "OpenedSnapshot", "activate", "active", "deactivate", "open_snapshot", "standin_handle",
           "verify"]
