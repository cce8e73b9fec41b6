"""A model whose first load waits for the test: a "GGUF file" whose conversion the test holds.

Loading a ``.gguf`` file that has not been converted on this cache takes the conversion's file lock
(:func:`biascore.models.loading.load_model`), so while the test holds that lock every run of the model stays in
"converting the model" — as long as the test needs, with no sleep and no timing. :meth:`GatedGguf.convert` then
puts a converted folder in place (a saved hermetic model, as another process's conversion would) and releases
the lock: the waiting loads read that folder, exactly as a second loader reads the first one's conversion.
The file's bytes are random, so its fingerprint (and every cache key) is the test's own.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from biascore.store.locks import file_lock


class GatedGguf:
    def __init__(self, folder: Path, cache_dir: Path, converted_from: Path):
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / "gated.gguf"
        self.path.write_bytes(os.urandom(4096))
        fingerprint = hashlib.sha256(self.path.read_bytes()).hexdigest()
        self.converted = Path(cache_dir) / "models" / f"gguf-{fingerprint[:16]}"
        self.source = Path(converted_from)
        self.lock = file_lock(self.converted.with_name(self.converted.name + ".lock"))

    def __enter__(self) -> "GatedGguf":
        self.lock.acquire(timeout=0)
        return self

    def convert(self) -> None:
        """Put the converted folder in place (atomically) and let the waiting loads go on."""
        tmp = self.converted.with_name(self.converted.name + ".tmp")
        shutil.copytree(self.source, tmp)
        os.replace(tmp, self.converted)
        self.lock.release()

    def __exit__(self, *exc) -> None:
        if self.lock.is_locked:
            self.lock.release()
