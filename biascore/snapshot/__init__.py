"""Offline snapshots for workshops: cached results of every scorer plus the data they refer to, in one zip.

A presenter scores models on a GPU box, then ``python -m biascore snapshot export --out demo.zip`` writes
one file (:mod:`biascore.snapshot.export`); ``BIASCORE_SNAPSHOT=demo.zip streamlit run app.py`` serves the
dashboard read-only from it on a laptop with no GPU, no network and no model files
(:mod:`biascore.snapshot.reader`: verify every member's SHA-256 and the engine version, unpack once into a
private read-only folder, point :mod:`biascore.settings` at it).

Layout of the zip::

    manifest.json                               format, engine and package versions, every member's SHA-256
    cache/<scorer>/<digest>.parquet             cached results, byte for byte as the engine wrote them
    data/<path relative to the data directory>  benchmark / test / lexicon files those results refer to

Pages need no model to show a cached result: :mod:`biascore.snapshot.standin` gives them an identity-only
model (name and fingerprint from the manifest) whose cache keys match the exported results.
"""
from __future__ import annotations

from biascore.snapshot.manifest import SnapshotError
from biascore.snapshot.reader import OpenedSnapshot, activate, active, deactivate, open_snapshot, verify
from biascore.snapshot.standin import standin_handle

__all__ = ["SnapshotError", "OpenedSnapshot", "activate", "active", "deactivate", "open_snapshot", "standin_handle",
           "verify"]
