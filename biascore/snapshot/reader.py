"""Open a snapshot: verify it, unpack it once into a private read-only folder, point the engine at it.

:func:`verify` checks that the file is a zip with a biascore manifest, the engine version, that the members are
exactly those the manifest lists (safe relative names, never unpacked past their listed size) and every member's
SHA-256; a failure is one line (:class:`SnapshotError`) and leaves nothing on disk. :func:`activate` does the same
while unpacking into ``<tmp>/biascore-snapshot-XXXX`` (mode 0700, files 0444, folders 0555, removed at exit) and
calls :func:`biascore.settings.use_snapshot`; opening is memoised per file (path, size, mtime).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import stat
import tempfile
import threading
import zipfile
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path

from biascore import settings
from biascore.snapshot.manifest import MANIFEST, SnapshotError, check_engine, check_format, safe_member

_CHUNK = 1 << 20


@dataclass(frozen=True)
class OpenedSnapshot:
    """A verified, unpacked snapshot."""

    file: Path
    root: Path  # the unpacked folder: root/cache, root/data
    manifest: dict

    @property
    def label(self) -> str:
        return self.file.name

    def model_names(self, scorer: str | tuple[str, ...] | None = None) -> list[str]:
        """Models with results in the snapshot (of those methods' cache folders when given), in manifest order."""
        if scorer is None:
            return list(self.manifest["models"])
        wanted = {scorer} if isinstance(scorer, str) else set(scorer)
        names = [e["key"].get("model") for e in self.manifest["entries"] if e["scorer"] in wanted]
        return [m for m in self.manifest["models"] if m in names]

    def model_facts(self, name: str) -> dict | None:
        return self.manifest["models"].get(name)

    def describe(self) -> str:
        m = self.manifest
        return (f"{self.label}: {len(m['entries'])} cached results of {len(m['models'])} model(s), "
                f"engine {m['engine_version']}, made {m.get('created_at', '?')}")


def _read_manifest(zf: zipfile.ZipFile, label: str) -> dict:
    try:
        raw = zf.read(MANIFEST)
    except KeyError:
        raise SnapshotError(f"{label} is not a biascore snapshot (no {MANIFEST} inside)") from None
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise SnapshotError(f"{label} is not a biascore snapshot ({MANIFEST} is not JSON)") from None
    manifest = check_format(manifest, label)
    check_engine(manifest, label)
    return manifest


def _check_members(zf: zipfile.ZipFile, manifest: dict, label: str) -> list[zipfile.ZipInfo]:
    listed = manifest["members"]
    infos = [i for i in zf.infolist() if i.filename != MANIFEST and not i.is_dir()]
    names = [i.filename for i in infos]
    unsafe = next((n for n in list(listed) + names if not safe_member(n)), None)
    if unsafe is not None:
        raise SnapshotError(f"{label} is refused: member name {unsafe!r} would unpack outside its folders")
    extra = sorted(set(names) - set(listed))
    if extra or len(names) != len(set(names)):
        raise SnapshotError(f"{label} is refused: member {extra[0] if extra else 'duplicates'!s} is not listed in "
                            "its manifest (the file was altered)")
    missing = sorted(set(listed) - set(names))
    if missing:
        raise SnapshotError(f"{label} is damaged: member {missing[0]} listed in its manifest is missing")
    return infos


def _copy_hashed(src, dst, limit: int) -> str | None:
    """SHA-256 of ``src`` (copied to ``dst`` when given); None as soon as it holds more than ``limit`` bytes."""
    h, n = hashlib.sha256(), 0
    for block in iter(lambda: src.read(_CHUNK), b""):
        n += len(block)
        if n > limit:  # more than the manifest says: refuse before filling the disk
            return None
        h.update(block)
        if dst is not None:
            dst.write(block)
    return h.hexdigest()


def _walk(path: Path, label: str, target: Path | None) -> dict:
    """Verify ``path`` (and unpack it into ``target`` when given); the manifest on success."""
    if not path.is_file():
        raise SnapshotError(f"snapshot file not found: {path}")
    if not zipfile.is_zipfile(path):
        raise SnapshotError(f"{label} is not a biascore snapshot (not a zip file)")
    try:
        with zipfile.ZipFile(path) as zf:
            manifest = _read_manifest(zf, label)
            for info in _check_members(zf, manifest, label):
                expected = manifest["members"][info.filename]
                if info.file_size != expected.get("size"):
                    raise SnapshotError(f"{label} is damaged or was altered: {info.filename} is not the size its "
                                        "manifest gives (refused)")
                dest = None if target is None else target / info.filename
                if dest is not None:
                    dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(info) as src, open(dest, "wb") if dest is not None else nullcontext() as out:
                    digest = _copy_hashed(src, out, int(expected["size"]))
                if digest != expected.get("sha256"):
                    raise SnapshotError(f"{label} is damaged or was altered: the checksum of {info.filename} does "
                                        "not match its manifest (refused)")
    except zipfile.BadZipFile as exc:
        raise SnapshotError(f"{label} is damaged: {exc}") from None
    return manifest


def verify(path: str | os.PathLike) -> dict:
    """Check a snapshot without unpacking it; its manifest, or :class:`SnapshotError` (one line)."""
    path = Path(path).expanduser()
    return _walk(path, path.name, None)


def _make_read_only(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            os.chmod(os.path.join(dirpath, name), stat.S_IRUSR | stat.S_IRGRP)
    for dirpath, _, _ in sorted(os.walk(root), key=lambda t: -len(t[0])):
        os.chmod(dirpath, stat.S_IRUSR | stat.S_IXUSR)


def _remove(root: Path) -> None:
    if not root.exists():
        return
    for dirpath, _, _ in os.walk(root):
        os.chmod(dirpath, stat.S_IRWXU)
    shutil.rmtree(root, ignore_errors=True)


_lock = threading.Lock()
_opened: dict[tuple, OpenedSnapshot] = {}
_active: OpenedSnapshot | None = None


def open_snapshot(path: str | os.PathLike) -> OpenedSnapshot:
    """Verify and unpack ``path`` once per process (again if the file changes); :class:`SnapshotError` if bad."""
    path = Path(path).expanduser().resolve()
    try:
        st = path.stat()
    except OSError:
        raise SnapshotError(f"snapshot file not found: {path}") from None
    memo = (str(path), st.st_size, st.st_mtime_ns)
    with _lock:
        if memo in _opened:
            return _opened[memo]
        root = Path(tempfile.mkdtemp(prefix="biascore-snapshot-"))
        try:
            (root / "cache").mkdir()
            (root / "data").mkdir()
            manifest = _walk(path, path.name, root)
        except BaseException:
            _remove(root)
            raise
        _make_read_only(root)
        atexit.register(_remove, root)
        opened = OpenedSnapshot(path, root.resolve(), manifest)
        _opened[memo] = opened
        return opened


def activate(path: str | os.PathLike) -> OpenedSnapshot:
    """Open ``path`` and serve results and benchmark data from it for the rest of the process."""
    global _active
    opened = open_snapshot(path)
    settings.use_snapshot(opened.root)
    _active = opened
    return opened


def deactivate() -> None:
    """Back to the normal cache and data directory (the unpacked folder stays until the process exits)."""
    global _active
    settings.use_snapshot(None)
    _active = None


def active() -> OpenedSnapshot | None:
    """The snapshot in use, or None."""
    return _active if _active is not None and settings.snapshot_root() == _active.root else None
