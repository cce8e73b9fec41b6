"""Offline snapshots: what opening one costs, and what shipping the derived attribution frame saves.

Scores the tiny MLM on a registered benchmark (default crows-en, 1,508 pairs) into a throw-away cache,
exports a snapshot, then measures (best of ``REPEAT`` runs each, on this machine):

* open = verify every member's SHA-256 + unpack, against the machine's own baseline: SHA-256 of the same
  bytes plus copying them (``hashlib`` + file write) — the ratio says how much the snapshot format adds;
* the first view of the run on the laptop: reading the shipped derived frame vs deriving b(u), words and
  S_JSD from the log-probabilities (what the laptop would do if the export had not shipped it).

    BIASCORE_DATA_DIR=/path/to/data TINY_MLM=/path/to/tiny-trained-bert-mlm python bench/bench_snapshot.py [benchmark]
"""
from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from biascore.runs import runner  # noqa: E402
from biascore.store.cache import ResultCache  # noqa: E402
from biascore.methods import get  # noqa: E402
from biascore.inputs.datasets import load_benchmark  # noqa: E402
from biascore.models.loading import load_model  # noqa: E402
from biascore.methods.attribution.results import load_run  # noqa: E402
from biascore.methods.attribution.scorer import attribution_frame  # noqa: E402
from biascore.snapshot import reader  # noqa: E402
from biascore.snapshot.export import export_snapshot  # noqa: E402

TINY = os.environ.get("TINY_MLM", str(Path(__file__).resolve().parents[2] / "shared/models/tiny-trained-bert-mlm"))
REPEAT = 3


def best(fn) -> float:
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    import torch

    torch.set_num_threads(1)
    name = sys.argv[1] if len(sys.argv) > 1 else "crows-en"
    work = Path(tempfile.mkdtemp(prefix="snapshot-bench-"))
    cache = ResultCache(work / "cache")
    bench = load_benchmark(name)
    runner.run(get("attribution"), load_model(TINY), bench, cache=cache)
    manifest = export_snapshot(work / "snap.zip", cache=cache)
    size = sum(m["size"] for m in manifest["members"].values())

    def open_fresh():
        reader._opened.clear()  # measure a first open each time
        reader.open_snapshot(work / "snap.zip")

    def baseline():
        with zipfile.ZipFile(work / "snap.zip") as zf:
            for info in zf.infolist():
                raw = zf.read(info)
                hashlib.sha256(raw).hexdigest()
                (work / "copy.bin").write_bytes(raw)

    t_open, t_base = best(open_fresh), best(baseline)
    opened = reader.open_snapshot(work / "snap.zip")
    snap_cache = ResultCache(opened.root / "cache")
    entry = runner.stored(get("attribution"), cache=snap_cache)[0]
    t_shipped = best(lambda: load_run(entry, cache=snap_cache))
    t_derive = best(lambda: attribution_frame(bench, pq.read_table(entry.path).to_pandas()))
    print(f"{name}: {len(bench)} pairs, snapshot {size / 1e6:.2f} MB in {len(manifest['members'])} members "
          f"({(work / 'snap.zip').stat().st_size / 1e6:.2f} MB zipped)")
    print(f"open (verify + unpack): {t_open * 1000:.0f} ms; baseline unzip + SHA-256 + write: {t_base * 1000:.0f} ms; "
          f"ratio {t_open / t_base:.2f}")
    print(f"first view of the run: shipped derived frame {t_shipped * 1000:.0f} ms; deriving it "
          f"{t_derive * 1000:.0f} ms; {t_derive / t_shipped:.1f}x faster")


if __name__ == "__main__":
    main()
