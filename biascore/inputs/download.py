"""``python -m biascore data download``: fetch the public benchmark files into the data directory (docs/cli.md).

The files are described in ``data/downloads.json`` (relative path, public URL, SHA-256, size, licence, a note on
the URL). Each is streamed into ``<data dir>/.download-partial/``, its SHA-256 checked, and only then moved into
place with ``os.replace``: no partial or wrong file is ever where the engine reads. A mirror (``--mirror URL`` or
``BIASCORE_DOWNLOAD_MIRROR``) replaces every public URL with ``<mirror>/<relative path>``.
"""
from __future__ import annotations

import contextlib
import fnmatch
import hashlib
import http.client
import json
import os
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable
from urllib.parse import quote

from biascore.version import ENGINE_VERSION
from biascore import settings
from biascore.store.hashing import file_sha256
from biascore.progress import ProgressFn

MANIFEST_PATH = settings.PROJECT_DATA / "downloads.json"
MIRROR_ENV = "BIASCORE_DOWNLOAD_MIRROR"
PARTIAL_DIR = ".download-partial"
_CHUNK = 1 << 16


class DownloadError(ValueError):
    """A file could not be fetched or verified; the message names the URL and what to do."""


@dataclass(frozen=True)
class RemoteFile:
    path: str  # relative to the data directory, "/"-separated
    url: str | None  # public source; None = no public copy (mirror only)
    sha256: str
    size: int
    licence: str
    note: str


@dataclass(frozen=True)
class Outcome:
    path: str
    status: str  # downloaded | present | failed | differs | unavailable
    message: str = ""
    warning: bool = False  # installed or kept, but something the user should read (e.g. --no-verify)

    @property
    def ok(self) -> bool:
        return self.status in ("downloaded", "present", "unavailable")


def load_manifest(path: str | Path = MANIFEST_PATH) -> list[RemoteFile]:
    """The downloadable files, in manifest order."""
    entries = json.loads(Path(path).read_text(encoding="utf-8"))["files"]
    return [RemoteFile(path=e["path"], url=e.get("url"), sha256=e["sha256"], size=int(e["size"]),
                       licence=e.get("licence", ""), note=e.get("note", "")) for e in entries]


def select(files: list[RemoteFile], only: list[str] | None) -> list[RemoteFile]:
    """Files matching any of ``only``: a group (``crows_pairs``, ``seat``...), a benchmark name
    (``crows-tl``), a relative path, or a glob (``seat/weat*.jsonl``). ``None`` selects everything."""
    if not only:
        return list(files)
    from biascore.inputs.datasets import registry
    benchmarks = {name: spec["file"] for name, spec in registry().items() if not spec.get("builtin")}
    chosen: set[str] = set()
    for name in only:
        pattern = benchmarks.get(name, name).strip("/")
        hits = {f.path for f in files if f.path.split("/", 1)[0] == pattern or fnmatch.fnmatchcase(f.path, pattern)}
        if not hits:
            groups = sorted({f.path.split("/", 1)[0] for f in files})
            raise DownloadError(f"--only {name!r} matches no downloadable file; use a group ({', '.join(groups)}), "
                                f"a benchmark ({', '.join(benchmarks)}), a path or a glob from {MANIFEST_PATH}")
        chosen |= hits
    return [f for f in files if f.path in chosen]


def _fetch(url: str, out, *, timeout: float, on_bytes) -> tuple[str, int]:
    """Stream ``url`` into the open binary file ``out``; return (sha256, byte count). Any failure, a truncated
    transfer included, raises :class:`DownloadError` naming the URL."""
    request = urllib.request.Request(url, headers={"User-Agent": f"biascore/{ENGINE_VERSION}"})
    h, count = hashlib.sha256(), 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            announced = response.headers.get("Content-Length")
            for block in iter(lambda: response.read(_CHUNK), b""):
                out.write(block)
                h.update(block)
                count += len(block)
                on_bytes(len(block))
    except urllib.error.HTTPError as exc:
        raise DownloadError(f"HTTP {exc.code} {exc.reason} from {url}") from exc
    except urllib.error.URLError as exc:
        raise DownloadError(f"cannot reach {url}: {exc.reason} (check the network, or use --mirror)") from exc
    except (OSError, http.client.HTTPException) as exc:  # timeouts, resets, IncompleteRead
        raise DownloadError(f"download from {url} failed after {count} bytes: {exc!r}") from exc
    if announced is not None and announced.isdigit() and int(announced) != count:
        raise DownloadError(f"incomplete download from {url}: received {count} of {announced} bytes")
    return h.hexdigest(), count


def download_file(entry: RemoteFile, data_dir: Path, *, mirror: str | None = None, force: bool = False,
                  verify: bool = True, timeout: float = 60.0, on_bytes=lambda n: None) -> Outcome:
    """Fetch one file into ``data_dir`` (atomically, verified); never raises for a per-file failure."""
    dest = data_dir / entry.path
    if dest.exists() and not force:
        if file_sha256(dest) == entry.sha256:
            return Outcome(entry.path, "present", "already present, checksum ok")
        if verify:
            return Outcome(entry.path, "differs",
                           f"{dest} is present but its sha256 differs from the published file; left untouched "
                           f"(rerun with --force to replace it)")
        return Outcome(entry.path, "present", "already present (checksum differs; kept because of --no-verify)",
                       warning=True)
    url = mirror.rstrip("/") + "/" + quote(entry.path, safe="/") if mirror else entry.url
    if url is None:
        return Outcome(entry.path, "unavailable", f"no public source — {entry.note}")
    partial = data_dir / PARTIAL_DIR
    partial.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=Path(entry.path).name + ".", suffix=".part", dir=partial)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            digest, count = _fetch(url, out, timeout=timeout, on_bytes=on_bytes)
            out.flush()
            os.fsync(out.fileno())
        note = ""
        if digest != entry.sha256:
            if verify:
                raise DownloadError(
                    f"checksum mismatch for {entry.path} from {url}: expected sha256 {entry.sha256} "
                    f"({entry.size} bytes), got {digest} ({count} bytes). The file was NOT installed. If the "
                    f"source changed it on purpose, inspect it and rerun with --no-verify to accept it.")
            note = f" (checksum differs from the manifest: {digest}; installed because of --no-verify)"
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, dest)
        return Outcome(entry.path, "downloaded", f"{count} bytes from {url}{note}", warning=bool(note))
    except DownloadError as exc:
        return Outcome(entry.path, "failed", str(exc))
    finally:
        tmp.unlink(missing_ok=True)


def download_all(data_dir: str | Path | None = None, only: list[str] | None = None, *, force: bool = False,
                 verify: bool = True, mirror: str | None = None, timeout: float = 60.0,
                 progress: ProgressFn | None = None, on_outcome: Callable[[Outcome], None] | None = None
                 ) -> list[Outcome]:
    """Fetch every selected file of the manifest into the data directory; one :class:`Outcome` per file.

    ``progress(done, total)`` follows the bytes; ``on_outcome(outcome)`` gets each file's outcome as it happens."""
    target = settings.data_dir(data_dir)
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    files = select(load_manifest(), only)
    target.mkdir(parents=True, exist_ok=True)
    outcomes = []
    total, done = sum(f.size for f in files), [0]

    def on_bytes(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)

    for entry in files:
        before = done[0]
        outcome = download_file(entry, target, mirror=mirror, force=force, verify=verify, timeout=timeout,
                                on_bytes=on_bytes)
        on_bytes(max(0, entry.size - (done[0] - before)))  # skipped/failed files count as done
        outcomes.append(outcome)
        if on_outcome is not None:
            on_outcome(outcome)
    with contextlib.suppress(OSError):  # an empty partial folder is removed (rmdir refuses one that is not)
        (target / PARTIAL_DIR).rmdir()
    return outcomes


def licence_lines(outcomes: list[Outcome]) -> list[str]:
    """The licences of the files the ``outcomes`` fetched or found in place, so that a user sees what they may do
    with what they now have (docs/data.md): ``<licence>: <paths>`` per licence (manifest order), the paths of a
    folder shortened to a glob when they are all of that folder's files."""
    have = {o.path for o in outcomes if o.status in ("downloaded", "present")}
    groups: dict[str, list[str]] = {}
    for entry in load_manifest():
        if entry.path in have:
            groups.setdefault(entry.licence or "not stated", []).append(entry.path)
    return [f"{licence}: {', '.join(_shorten(paths))}" for licence, paths in groups.items()]


def _shorten(paths: list[str]) -> list[str]:
    """``a/x, a/y`` → ``a/*`` when x and y are every file of the group folder ``a`` that the paths name."""
    folders: dict[str, list[str]] = {}
    for path in paths:
        folders.setdefault(path.rsplit("/", 1)[0] if "/" in path else "", []).append(path)
    out = []
    for folder, members in folders.items():
        out.extend([f"{folder}/* ({len(members)} files)"] if folder and len(members) > 2 else members)
    return out
