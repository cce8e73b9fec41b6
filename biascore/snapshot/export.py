"""Write an offline snapshot: the selected cached results of every registered method, the data they refer to, a
manifest (docs/dashboard.md, "Workshops: offline snapshots": what is exported, what is left out and why).

Each result is copied byte for byte after a verified footer read, with its input's data files
(:attr:`InputKind.files`) and any other data the method reads (:meth:`Method.data_files`), when its input can
still be loaded by name with the same content; derived frames (``<method>.derived/``) are derived here for the
default options when missing. A model scored from a folder or .gguf file is stored under a display name
(:func:`biascore.models.names.display_name`, or ``names``) and its fingerprint, its results re-keyed to that name
(metadata rewritten, data unchanged); no other path is stored. Intermediate caches are not exported: no page
reads them.
"""
from __future__ import annotations

import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from biascore.version import ENGINE_VERSION
from biascore.runs import runner
from biascore import settings
from biascore.store.cache import ResultCache, rekey_file
from biascore.store.hashing import file_sha256
from biascore.errors import one_line
from biascore.contract.method import Method
from biascore.contract.result import check_out
from biascore.inputs.datasets import registry
from biascore.inputs.shipped import data_file, shipped_files
from biascore.methods import discover
from biascore.models.names import display_name, is_local_path, redact_paths
from biascore.snapshot.manifest import FORMAT, FORMAT_VERSION, MANIFEST, SnapshotError, dumps, package_versions


class _Skip(Exception):
    """One cached result cannot be exported; the message says why."""


@dataclass
class _Plan:
    data_dir: Path
    cache: ResultCache
    models: set[str] | None
    benchmarks: set[str] | None
    entries: list[tuple[Path, dict]] = field(default_factory=list)  # (cache file, key metadata)
    data: dict[str, tuple[Path, set[str]]] = field(default_factory=dict)  # member -> (source, used by)
    skipped: list[str] = field(default_factory=list)
    digests: dict[str, set[str]] = field(default_factory=dict)  # cache folder -> exported digests
    inputs: dict = field(default_factory=dict)  # (input kind, name) -> loaded input
    matched: set[str] = field(default_factory=set)  # the --benchmarks names some cached result matched
    seen: set[str] = field(default_factory=set)  # the inputs of the cached results of the selected models

    def member(self, path: Path) -> str:
        """The zip member of a data file: its path relative to the data directory (or to ``data/`` of the
        project for a built-in benchmark)."""
        path = Path(os.path.abspath(path))  # symbolic links inside the data directory are followed when read
        if not path.is_file():
            raise _Skip(f"its data file {path} is missing")
        for base in (Path(os.path.abspath(self.data_dir)), Path(os.path.abspath(settings.PROJECT_DATA))):
            if path.is_relative_to(base):
                return "data/" + path.relative_to(base).as_posix()
        raise _Skip(f"its data file {path} is outside the data directory")


def _wanted(values: set[str] | None, *candidates: str | None) -> bool:
    if values is None:
        return True
    return any(v is not None and (v in values or Path(v).name in values) for v in candidates)


def _input_of(plan: _Plan, method: Method, meta: dict):
    """The input a result was computed on, loaded by name now (cut to its pair count), or a _Skip saying why
    it cannot be shown from a snapshot."""
    kind = method.input_kind
    name = str(meta.get("input", ""))
    key = (kind.name, name)
    if key not in plan.inputs:
        try:
            plan.inputs[key] = kind.load(name, plan.data_dir)
        except (ValueError, FileNotFoundError, KeyError, OSError) as exc:
            plan.inputs[key] = _Skip(f"its {kind.noun} {name!r} cannot be loaded from the data directory "
                                     f"({one_line(exc, with_type=True, public=False)})")
    loaded = plan.inputs[key]
    if isinstance(loaded, _Skip):
        raise loaded
    if kind.name == "pairs":
        if name not in registry():
            raise _Skip(f"it was computed on a CSV file ({name!r}) that is not a registered benchmark")
    if kind.first is not None and meta.get("n_pairs") is not None:
        loaded = kind.first(loaded, int(meta["n_pairs"]))
    if loaded.content_hash != meta.get("input_hash"):
        raise _Skip(f"the {kind.noun} {name!r} changed since it was computed (stale)")
    return loaded


def _usable(plan: _Plan, folder: str, entry: runner.Stored) -> bool:
    meta = entry.meta
    label = f"{folder}/{entry.path.name}"
    if meta.get("engine_version") != ENGINE_VERSION:
        plan.skipped.append(f"{label}: made by engine {meta.get('engine_version')}, not {ENGINE_VERSION}")
        return False
    if not entry.named_by_its_key:
        plan.skipped.append(f"{label}: its key does not match its file name (foreign or damaged file)")
        return False
    return True


def _plan(cache: ResultCache, data_dir: Path, models: Sequence[str] | None,
          benchmarks: Sequence[str] | None, methods: list[Method]) -> _Plan:
    plan = _Plan(data_dir, cache, set(models) if models else None, set(benchmarks) if benchmarks else None)
    for method in methods:
        folder = method.cache_folder
        for entry in runner.stored(method, cache=cache):
            meta = entry.meta
            if not _wanted(plan.models, meta.get("model"), meta.get("model_label")):
                continue
            if not _usable(plan, folder, entry):
                continue
            kind, given = method.input_kind.name, str(meta.get("input", ""))
            names = (given, f"{kind}:{given}", f"{kind}-{given}")  # e.g. en, labdet:en, labdet-en
            if method.input_kind.selectable:
                plan.seen.add(names[0])
                plan.matched |= {v for v in plan.benchmarks or () if _wanted({v}, *names)}
            try:
                loaded = _input_of(plan, method, meta)
                if method.input_kind.selectable and not _wanted(plan.benchmarks, *names):
                    continue  # (fixed data of a method, e.g. the counter-stereotype sentences, follows --models)
                options = method.Options.from_meta(meta)
                files = method.input_kind.files(loaded, plan.data_dir) + method.data_files(loaded, options, plan.data_dir)
                members = {plan.member(p): Path(os.path.abspath(p)) for p in files}
            except _Skip as exc:
                plan.skipped.append(f"{folder}/{Path(meta['path']).name}: {exc}")
                continue
            for member, source in members.items():
                plan.data.setdefault(member, (source, set()))[1].add(method.name)
            plan.entries.append((Path(meta["path"]), meta))
            plan.digests.setdefault(folder, set()).add(meta["digest"])
    return plan


def _add_shipped(plan: _Plan) -> None:
    """Every file shipped with the project (:mod:`biascore.inputs.shipped`: the demo pairs, the gender word lists…)
    goes into every snapshot, the data directory's copy where it has one: pages read them beside the results
    (Try a pair offers the demo pairs; Attention heads keys its counter-stereotype results by the word lists)."""
    for f in shipped_files():
        path = data_file(f.path, plan.data_dir)
        plan.data.setdefault(plan.member(path), (path, set()))[1].add("shipped")


def _add_derived(plan: _Plan, methods: list[Method]) -> None:
    """The derived frames of the exported results (derived now, for the default options, when missing)."""
    for method in methods:
        if not method.cache_derived:
            continue
        exported = plan.digests.get(method.cache_folder, set())
        for entry in runner.stored(method, cache=plan.cache):
            if entry.digest in exported:
                try:  # derives into the cache if missing
                    runner.open_stored(method, entry, cache=plan.cache, data_dir=plan.data_dir)
                except runner.UnreadableResult:
                    continue
        folder = f"{method.cache_folder}.derived"
        for entry in runner.stored(method, cache=plan.cache, derived=True):
            if entry.meta.get("run") in exported and _usable(plan, folder, entry):
                plan.entries.append((entry.path, entry.meta))


def _display_names(entries: list[tuple[Path, dict]], given: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Each exported model's name → (stored name, where it came from). ``given`` maps a model (as scored, or a
    folder's last component) to a name chosen at export. Two models with different weights may not share one."""
    out: dict[str, tuple[str, str]] = {}
    for _, meta in entries:
        name = meta.get("model")
        if name is None or name in out:
            continue
        chosen = given.get(name) or given.get(display_name(name))
        if chosen:
            out[name] = (chosen, "given at export")
        elif is_local_path(name):
            out[name] = (display_name(name), "the name of the folder or file it was scored from")
        else:
            out[name] = (name, "as scored (an alias or hub id)")
    unused = set(given) - set(out) - {display_name(n) for n in out}
    if unused:
        raise SnapshotError(f"--name names a model with no exported result: {sorted(unused)[0]}")
    prints: dict[str, set] = {}
    for _, meta in entries:
        if meta.get("model") is not None:
            prints.setdefault(out[meta["model"]][0], set()).add(meta.get("model_fingerprint"))
    clash = next((shown for shown, fps in prints.items() if len(fps) > 1), None)
    if clash is not None:
        raise SnapshotError(f"two models with different weights would both be stored as {clash!r}: give them "
                            "names with --name MODEL=NAME")
    return out


def _rekey(entries: list[tuple[Path, dict]], names: dict[str, tuple[str, str]],
           scratch: Path) -> list[tuple[Path, dict]]:
    """The entries with every model named by its stored name: a result whose key changes is rewritten (same data,
    new key in its metadata, named by the new digest) into ``scratch``; the keys of derived results (``run``)
    and the results a computation recorded that it read (``info.uses``) follow their renamed results."""
    renamed: dict[str, str] = {}  # old digest -> new digest
    out = []
    for path, meta in entries:  # stored results come before the frames derived from them
        changes = {}
        if "model" in meta:
            changes["model"] = names[meta["model"]][0]
        if meta.get("run") in renamed:
            changes["run"] = renamed[meta["run"]]
        info = dict(meta.get("info") or {})
        if info.get("uses"):
            info["uses"] = {name: renamed.get(digest, digest) for name, digest in info["uses"].items()}
        key = runner.key_of(meta, **changes)
        if key.digest == meta["digest"] and info == dict(meta.get("info") or {}):
            out.append((path, meta))
            continue
        renamed[meta["digest"]] = key.digest
        target = scratch / meta["scorer"] / f"{key.digest}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        rekey_file(path, key, target, info)
        out.append((target, {**key.meta, "digest": key.digest, "info": info, "path": str(target)}))
    return out


def _model_facts(entries: list[tuple[Path, dict]], names: dict[str, tuple[str, str]]) -> dict[str, dict]:
    """Per model (by its stored name): the identity its results were keyed with (what a page's stand-in model
    needs), and where its name came from."""
    sources = {shown: origin for shown, origin in names.values()}
    models: dict[str, dict] = {}
    for _, meta in entries:
        name = meta.get("model")
        if name is None:
            continue
        facts = models.setdefault(name, {"fingerprint": meta.get("model_fingerprint", ""),
                                         "kind": meta.get("model_kind", ""), "dtype": meta.get("dtype", ""),
                                         "device": meta.get("device", "")})
        if meta.get("tokenizer_specials") and "special_tokens" not in facts:  # a causal model's prefix facts
            facts["special_tokens"] = dict(meta["tokenizer_specials"])
        if name in sources:
            facts["name"] = sources[name]
    return models


def export_snapshot(out: str | os.PathLike, *, models: Sequence[str] | None = None,
                    benchmarks: Sequence[str] | None = None, cache: ResultCache | None = None,
                    data_dir: str | os.PathLike | None = None, names: dict[str, str] | None = None,
                    overwrite: bool = False) -> dict:
    """Write the snapshot zip to ``out`` (atomically) and return its manifest.

    Every exported result is read back and its key checked before it is copied; a result that cannot be
    exported is listed in the manifest's ``skipped`` with the reason. Models are stored by display name and
    fingerprint (``names``: model as scored, or a folder's last component → the name to store; see the module
    docstring). Raises :class:`SnapshotError` when ``out`` exists (unless ``overwrite``), when a name in
    ``benchmarks`` matches no cached result, when nothing matches the selection, or when two models with
    different weights would be stored under one name.
    """
    check_out(out)
    if Path(out).expanduser().exists() and not overwrite:
        raise SnapshotError(f"{out} already exists; choose another name or replace it with --force")
    cache = cache or ResultCache()
    data_dir = settings.data_dir(data_dir)
    methods = discover()
    plan = _plan(cache, data_dir, models, benchmarks, methods)
    unmatched = sorted(set(benchmarks or ()) - plan.matched)
    if unmatched:
        known = sorted(plan.seen)
        raise SnapshotError(f"--benchmarks: no cached result on {', '.join(unmatched)}"
                            + (f"; cached inputs: {', '.join(known[:20])}" + (" …" if len(known) > 20 else "")
                               if known else "; the cache holds no result of the selected models"))
    if not plan.entries:
        raise SnapshotError(f"nothing to export: no cached result in {cache.root} matches the selection"
                            + (f" ({len(plan.skipped)} left out, e.g. {plan.skipped[0]})" if plan.skipped else ""))
    _add_shipped(plan)
    _add_derived(plan, methods)
    stored_names = _display_names(plan.entries, dict(names or {}))
    out = Path(out).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    members: dict[str, dict] = {}
    entries = []
    scratch = tempfile.TemporaryDirectory(prefix="biascore-export-")
    plan.entries = _rekey(plan.entries, stored_names, Path(scratch.name))
    try:
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
            for path, meta in plan.entries:
                member = f"cache/{meta['scorer']}/{path.name}"
                runner.verify_file(path)  # a result that cannot be read back is not shipped
                zf.write(path, member)
                members[member] = {"sha256": file_sha256(path), "size": path.stat().st_size}
                entries.append({"member": member, "scorer": meta["scorer"],
                                "key": {k: v for k, v in meta.items() if k not in ("path", "info")}})
            data = []
            for member, (path, used_by) in sorted(plan.data.items()):
                zf.write(path, member)
                members[member] = {"sha256": file_sha256(path), "size": path.stat().st_size}
                data.append({"member": member, "used_by": sorted(used_by)})
            manifest = {
                "format": FORMAT, "format_version": FORMAT_VERSION, "engine_version": ENGINE_VERSION,
                "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"), "packages": package_versions(),
                "selection": {"models": sorted({display_name(m) for m in plan.models}) if plan.models else None,
                              "benchmarks": sorted(plan.benchmarks) if plan.benchmarks else None},
                "models": _model_facts(plan.entries, stored_names), "entries": entries, "data": data,
                "members": members, "skipped": [redact_paths(reason) for reason in plan.skipped]}
            zf.writestr(MANIFEST, dumps(manifest))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
        scratch.cleanup()
    return manifest
