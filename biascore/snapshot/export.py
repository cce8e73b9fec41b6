"""Write an offline snapshot: the selected cached results of every scorer, the data they refer to, a manifest.

What is exported, per cache scorer (each result byte for byte, after a verified read):

* ``attribution`` — per-pair log-probabilities of a model on a registered benchmark (B, S_JSD, b(u) and the
  CrowS PLL score all derive from them) + the benchmark file; a run on an edited benchmark file (stale) or
  on a user's own CSV file is left out (the dashboard cannot show it either);
* ``attribution_frame`` — the derived per-pair frame of each exported run (computed here when missing, so
  the laptop does not derive 12,089 pairs on first view);
* ``semantic_tags`` — USAS tags of the exported runs' sentences + the lexicon files (their hashes key it);
* ``heads`` — attention-head scores + the SEAT test file; ``heads-counter`` — counter-stereotype attentions +
  the CrowS-Pairs files and gender word lists; ``heads-masking`` — targeted-masking tables + SEAT test and
  CrowS-Pairs (held-out sentences); ``labdet`` — LABDet items and summaries + the
  language's train/test/template files; ``association`` — WEAT/SEAT, CEAT (default corpus) and
  log-probability results + the test files (and the corpus file).

Models are stored by a display name and their fingerprint, never by a local path: a model scored from a folder
(or a .gguf file) is stored under the folder's name (:func:`biascore.core.model_names.display_name`) or a name
given at export (``names``, ``--name MODEL=NAME``); its results are re-keyed to that name (each such file is
rewritten with the new key in its metadata, the data unchanged), and the manifest says per model where its name
came from. An alias or hub id stays as it is, and so does every other result, byte for byte. No other path is
stored either: the reasons a result was left out name files by their last component.

Intermediate caches (sentence features, parsed lexicons, converted models) are not exported: no page reads
them. ``--models`` keeps results of those models (full name or last path component); ``--benchmarks`` keeps
results on those benchmarks, where a result's benchmark is its pair benchmark (attribution, semantic tags),
SEAT test (heads), association test, or ``labdet-<lang>``; counter-stereotype attentions, which belong to a model
rather than a benchmark, follow ``--models`` only.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Sequence

import pyarrow.parquet as pq

from biascore import ENGINE_VERSION
from biascore.core import settings
from biascore.core.cache import CacheKey, ResultCache, rekey_file
from biascore.core.model_names import display_name, is_local_path, redact_paths
from biascore.snapshot.manifest import FORMAT, FORMAT_VERSION, MANIFEST, SnapshotError, dumps, package_versions

#: cache scorers whose results go into a snapshot, in the order they are planned
EXPORTED_SCORERS = ("attribution", "attribution_frame", "semantic_tags", "heads", "heads-counter", "heads-masking",
                    "labdet", "association")


class _Skip(Exception):
    """One cached result cannot be exported; the message says why."""


@dataclass
class _Deps:
    """What one cached result refers to: its benchmark (for ``--benchmarks``), data files, semantic-tag keys."""

    subject: str = ""
    files: list[Path] = field(default_factory=list)
    tag_keys: set[tuple[str, str]] = field(default_factory=set)


@dataclass
class _Plan:
    data_dir: Path
    cache: ResultCache
    models: set[str] | None
    benchmarks: set[str] | None
    entries: list[tuple[Path, dict]] = field(default_factory=list)  # (cache file, key metadata)
    data: dict[str, tuple[Path, set[str]]] = field(default_factory=dict)  # member -> (source, used by)
    skipped: list[str] = field(default_factory=list)
    digests: dict[str, set[str]] = field(default_factory=dict)  # scorer -> exported digests
    tag_keys: set[tuple[str, str]] = field(default_factory=set)  # (language, sentences hash) of exported runs
    memo: dict = field(default_factory=dict)

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

    def once(self, key, make: Callable):
        if key not in self.memo:
            self.memo[key] = make()
        return self.memo[key]


def _wanted(values: set[str] | None, value: str | None) -> bool:
    if values is None:
        return True
    return value is not None and (value in values or Path(value).name in values)


def _stale(what: str) -> _Skip:
    return _Skip(f"the {what} changed since it was computed (stale)")


# --------------------------------------------------------------------------- per-scorer data dependencies
def _attribution(plan: _Plan, meta: dict) -> _Deps:
    from biascore.core.datasets import benchmark_path, registry
    from biascore.methods.attribution.results import cached_runs
    from biascore.methods.fields.scorer import row_languages
    from biascore.methods.fields import tagging

    name = meta.get("benchmark", "")
    if name not in registry():
        raise _Skip(f"it was computed on a CSV file ({name!r}) that is not a registered benchmark")
    runs = plan.once("runs", lambda: cached_runs(plan.cache, plan.data_dir).set_index("path"))
    run = runs.loc[meta["path"]]
    if bool(run["stale"]):
        raise _stale(f"benchmark file of {name!r}")
    deps = _Deps(name, [benchmark_path(name, plan.data_dir)])
    # the semantic-tags cache keys the fields page will ask for: one per language with a USAS lexicon
    bench = plan.once(("bench", name), lambda: _benchmark(name, plan.data_dir))
    frame = bench.frame.head(int(meta.get("n_pairs", len(bench.frame))))
    langs = row_languages(frame, bench.language)
    for lang in sorted(set(langs)):
        if tagging.has_lexicon(lang):
            unique = list(dict.fromkeys(frame.loc[langs == lang, "sent_more"].astype(str)))
            deps.tag_keys.add((lang, tagging.sentences_hash(unique)))
    return deps


def _benchmark(name: str, data_dir: Path):
    from biascore.core.datasets import load_benchmark

    return load_benchmark(name, data_dir)


def _attribution_frame(plan: _Plan, meta: dict) -> _Deps:
    if meta.get("run") not in plan.digests.get("attribution", set()):
        raise _Skip("its attribution run is not exported")
    return _Deps()


def _semantic_tags(plan: _Plan, meta: dict) -> _Deps:
    from biascore.methods.fields import tagging

    lang = meta.get("language", "")
    if (lang, meta.get("sentences")) not in plan.tag_keys:
        raise _Skip("it tags sentences of no exported attribution run")
    if meta.get("single") != plan.once(("lexicon", lang), lambda: tagging.lexicon_fingerprint(lang, plan.data_dir)
                                       ).get("single"):
        raise _stale("USAS lexicon")
    return _Deps(files=[plan.data_dir / rel for rel in (tagging.LEXICONS[lang]["single"],
                                                        tagging.LEXICONS[lang]["mwe"], tagging.FIELD_NAMES_FILE)])


def _heads(plan: _Plan, meta: dict) -> _Deps:
    from biascore.core.seat_tests import load_seat_test, seat_dir

    name = str(meta.get("seat_test", ""))
    path = seat_dir(plan.data_dir) / f"{name}.jsonl"
    if not path.is_file():
        raise _Skip(f"its SEAT test {name!r} is not a file of the data directory")
    if load_seat_test(name, plan.data_dir).content_hash != meta.get("seat_hash"):
        raise _stale(f"SEAT test {name!r}")
    return _Deps(name, [path])


def _heads_counter(plan: _Plan, meta: dict) -> _Deps:
    """The counter-stereotype attentions: the CrowS-Pairs sources they came from and the gender word lists."""
    from biascore.core.datasets import benchmark_path
    from biascore.core.seat_tests import load_gender_wordlists

    if load_gender_wordlists(plan.data_dir).content_hash != meta.get("wordlists"):
        raise _stale("gender word lists")
    files = [plan.data_dir / "wordlists" / f"gender_{part}.txt" for part in ("female", "male", "stereotype")]
    for name, content_hash in dict(meta.get("sources") or {}).items():
        bench = plan.once(("bench", name), lambda name=name: _benchmark(name, plan.data_dir))
        if bench.content_hash != content_hash:
            raise _stale(f"benchmark file of {name!r}")
        files.append(benchmark_path(name, plan.data_dir))
    return _Deps("", files)


def _heads_masking(plan: _Plan, meta: dict) -> _Deps:
    """A targeted-masking table: its SEAT test and CrowS-Pairs (the held-out perplexity sentences)."""
    from biascore.core.datasets import benchmark_path

    deps = _heads(plan, meta)
    deps.files.append(benchmark_path("crows-en", plan.data_dir))
    return deps


def _labdet(plan: _Plan, meta: dict) -> _Deps:
    from biascore.methods.labdet.scorer import load_labdet

    lang = str(meta.get("lang", ""))
    if meta.get("part") == "summary":
        if meta.get("items") not in plan.digests.get("labdet", set()):
            raise _Skip("its LABDet items are not exported")
        return _Deps(f"labdet-{lang}")
    data = plan.once(("labdet", lang), lambda: load_labdet(lang, plan.data_dir))
    if data.content_hash != meta.get("data"):
        raise _stale(f"LABDet data of {lang!r}")
    root = plan.data_dir / "labdet"
    return _Deps(f"labdet-{lang}", [root / "train" / f"{lang}.json", root / "test" / f"{lang}.json",
                                    root / "Templates" / f"{lang}_template.json"])


def _association(plan: _Plan, meta: dict) -> _Deps:
    from biascore.core import seat_tests
    from biascore.methods.association import logprob_bias, scorer

    test, kind = str(meta.get("test", "")), meta.get("kind")
    if kind in ("logprob", "logprob-effects"):
        t = logprob_bias.load_logprob_test(test, plan.data_dir)
        if t.content_hash != meta.get("content"):
            raise _stale(f"log-probability test {test!r}")
        spec = json.loads((settings.PROJECT_DATA / "logprob_tests.json").read_text(encoding="utf-8"))[test]
        return _Deps(test, [plan.data_dir / spec["bangla_traits"]] if "bangla_traits" in spec else [])
    t = seat_tests.load_seat_test(test, plan.data_dir)
    if t.content_hash != meta.get("content"):
        raise _stale(f"association test {test!r}")
    deps = _Deps(test, [seat_tests.seat_test_path(test, plan.data_dir)])
    if kind == "ceat":
        _, text = plan.once(("corpus", t.language), lambda: scorer.default_corpus(t.language, plan.data_dir))
        if hashlib.sha256(text.encode("utf-8")).hexdigest()[:16] != meta.get("corpus"):
            raise _Skip("its CEAT corpus is a user's file, not the default corpus the dashboard uses")
        if t.language == "bn":
            deps.files.append(plan.data_dir / "bangla" / "sample_corpus_porjotonlipi.bn")
        else:
            from biascore.core.datasets import benchmark_path
            deps.files.append(benchmark_path("crows-en", plan.data_dir))
    return deps


RESOLVERS: dict[str, Callable[[_Plan, dict], _Deps]] = {
    "attribution": _attribution, "attribution_frame": _attribution_frame, "semantic_tags": _semantic_tags,
    "heads": _heads, "heads-counter": _heads_counter, "heads-masking": _heads_masking, "labdet": _labdet,
    "association": _association}


# --------------------------------------------------------------------------- planning
def _key_of(meta: dict) -> CacheKey:
    parts = {k: v for k, v in meta.items() if k not in ("scorer", "digest", "path")}
    return CacheKey(meta["scorer"], tuple(sorted(parts.items())))


def _plan(cache: ResultCache, data_dir: Path, models: Sequence[str] | None,
          benchmarks: Sequence[str] | None) -> _Plan:
    plan = _Plan(data_dir, cache, set(models) if models else None, set(benchmarks) if benchmarks else None)
    for scorer in EXPORTED_SCORERS:
        # LABDet summaries refer to their items: items first
        for meta in sorted(cache.entries(scorer), key=lambda m: m.get("part") == "summary"):
            path = Path(meta["path"])
            label = f"{scorer}/{path.name}"
            if "model" in meta and not _wanted(plan.models, meta["model"]):
                continue
            if meta.get("engine_version") != ENGINE_VERSION:
                plan.skipped.append(f"{label}: made by engine {meta.get('engine_version')}, not {ENGINE_VERSION}")
                continue
            if _key_of(meta).digest != meta.get("digest") or path.stem != meta.get("digest"):
                plan.skipped.append(f"{label}: its key does not match its file name (foreign or damaged file)")
                continue
            try:
                deps = RESOLVERS[scorer](plan, meta)
                if deps.subject and not _wanted(plan.benchmarks, deps.subject):
                    continue
                members = {plan.member(p): Path(os.path.abspath(p)) for p in deps.files}
            except _Skip as exc:
                plan.skipped.append(f"{label}: {exc}")
                continue
            except (ValueError, FileNotFoundError, KeyError) as exc:  # the data it refers to cannot be read
                plan.skipped.append(f"{label}: {type(exc).__name__}: {exc}")
                continue
            for member, source in members.items():
                plan.data.setdefault(member, (source, set()))[1].add(scorer)
            plan.tag_keys |= deps.tag_keys
            plan.entries.append((path, meta))
            plan.digests.setdefault(scorer, set()).add(meta["digest"])
    return plan


def _add_builtin_benchmarks(plan: _Plan) -> None:
    """The project's built-in benchmarks (the demo pairs) go into every snapshot: Try a pair offers them."""
    from biascore.core.datasets import registry

    for spec in registry().values():
        if spec.get("builtin"):
            path = settings.PROJECT_DATA / spec["file"]
            plan.data.setdefault(plan.member(path), (path, set()))[1].add("builtin")


def _derive_missing_frames(plan: _Plan, scratch: ResultCache) -> None:
    """Add the derived attribution frame (reference JSD) of every exported run that has none cached."""
    from biascore.methods.attribution.results import load_run

    have = {meta.get("run") for _, meta in plan.entries if meta["scorer"] == "attribution_frame"}
    for path, meta in list(plan.entries):
        if meta["scorer"] == "attribution" and meta["digest"] not in have:
            load_run(path, meta["benchmark"], data_dir=plan.data_dir, cache=scratch)
    for derived in scratch.entries("attribution_frame"):
        plan.entries.append((Path(derived["path"]), derived))


#: key fields that hold another result's digest (which changes when that result is re-keyed to a display name)
_DIGEST_REFERENCES = ("run", "items")


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
    new key in its metadata, named by the new digest) into ``scratch``; references to re-keyed results follow."""
    renamed: dict[str, str] = {}  # old digest -> new digest
    out = []
    for path, meta in entries:  # results come before what refers to them (EXPORTED_SCORERS order)
        parts = {k: v for k, v in meta.items() if k not in ("scorer", "digest", "path")}
        if "model" in parts:
            parts["model"] = names[parts["model"]][0]
        for ref in _DIGEST_REFERENCES:
            if parts.get(ref) in renamed:
                parts[ref] = renamed[parts[ref]]
        key = CacheKey(meta["scorer"], tuple(sorted(parts.items())))
        if key.digest == meta["digest"]:
            out.append((path, meta))
            continue
        renamed[meta["digest"]] = key.digest
        target = scratch / meta["scorer"] / f"{key.digest}.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        rekey_file(path, key, target)
        out.append((target, {**key.meta, "digest": key.digest, "path": str(target)}))
    return out


def _model_facts(entries: list[tuple[Path, dict]], names: dict[str, tuple[str, str]] | None = None
                 ) -> dict[str, dict]:
    """Per model (by its stored name): what an identity-only model needs so the pages' cache keys match (first
    result wins), and where its name came from."""
    sources = {shown: origin for shown, origin in (names or {}).values()}
    models: dict[str, dict] = {}
    for _, meta in entries:
        name = meta.get("model")
        if name is None:
            continue
        facts = models.setdefault(name, {"fingerprint": meta.get("model_fingerprint") or meta.get("fingerprint")})
        if name in sources:
            facts["name"] = sources[name]
        for field_name, key in (("kind", "model_kind"), ("dtype", "dtype"), ("device", "device")):
            if meta.get(key) and field_name not in facts:
                facts[field_name] = meta[key]
        if meta["scorer"] == "labdet" and meta.get("part") == "items" and "neutral_filler" not in facts:
            facts["neutral_filler"] = meta.get("filler")
    return models


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --------------------------------------------------------------------------- entry point
def export_snapshot(out: str | os.PathLike, *, models: Sequence[str] | None = None,
                    benchmarks: Sequence[str] | None = None, cache: ResultCache | None = None,
                    data_dir: str | os.PathLike | None = None, names: dict[str, str] | None = None) -> dict:
    """Write the snapshot zip to ``out`` (atomically) and return its manifest.

    Every exported result is read back and its key checked before it is copied; a result that cannot be
    exported is listed in the manifest's ``skipped`` with the reason. Models are stored by display name and
    fingerprint (``names``: model as scored, or a folder's last component → the name to store; see the module
    docstring). Raises :class:`SnapshotError` when nothing matches the selection, or when two models with
    different weights would be stored under one name.
    """
    cache = cache or ResultCache()
    data_dir = settings.data_dir(data_dir)
    plan = _plan(cache, data_dir, models, benchmarks)
    _add_builtin_benchmarks(plan)
    if not any(meta["scorer"] != "attribution_frame" for _, meta in plan.entries):
        raise SnapshotError(f"nothing to export: no cached result in {cache.root} matches the selection"
                            + (f" ({len(plan.skipped)} left out, e.g. {plan.skipped[0]})" if plan.skipped else ""))
    out = Path(out).expanduser().resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    with tempfile.TemporaryDirectory(prefix="biascore-export-") as scratch_dir:
        _derive_missing_frames(plan, ResultCache(scratch_dir))
        stored_names = _display_names(plan.entries, dict(names or {}))
        plan.entries = _rekey(plan.entries, stored_names, Path(scratch_dir) / "renamed")
        members: dict[str, dict] = {}
        entries = []
        try:
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as zf:
                for path, meta in plan.entries:
                    member = f"cache/{meta['scorer']}/{path.name}"
                    pq.read_table(path)  # a result that cannot be read back is not shipped
                    zf.write(path, member)
                    members[member] = {"sha256": _sha256(path), "size": path.stat().st_size}
                    entries.append({"member": member, "scorer": meta["scorer"],
                                    "key": {k: v for k, v in meta.items() if k != "path"}})
                data = []
                for member, (path, used_by) in sorted(plan.data.items()):
                    zf.write(path, member)
                    members[member] = {"sha256": _sha256(path), "size": path.stat().st_size}
                    data.append({"member": member, "used_by": sorted(used_by)})
                manifest = {
                    "format": FORMAT, "format_version": FORMAT_VERSION, "engine_version": ENGINE_VERSION,
                    "created_at": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                    "packages": package_versions(),
                    "selection": {"models": sorted({display_name(m) for m in plan.models}) if plan.models else None,
                                  "benchmarks": sorted(plan.benchmarks) if plan.benchmarks else None},
                    "models": _model_facts(plan.entries, stored_names), "entries": entries, "data": data,
                    "members": members, "skipped": [redact_paths(reason) for reason in plan.skipped]}
                zf.writestr(MANIFEST, dumps(manifest))
            os.replace(tmp, out)
        finally:
            tmp.unlink(missing_ok=True)
    return manifest
