"""The snapshot manifest: what a snapshot holds and what is needed to open it.

``manifest.json`` (the zip's one unchecked member; everything else is listed in it with its SHA-256)::

    format            "biascore-snapshot"        format_version  1
    engine_version    biascore.ENGINE_VERSION of the exporting engine (part of every cache key)
    created_at        UTC time of the export      packages        {name: version} of the exporting environment
    selection         {"models": [...] | null, "benchmarks": [...] | null}
    models            {name: {fingerprint, kind, dtype, device, neutral_filler}}  (identity-only models)
    entries           [{member, scorer, key}]   one per cached result; ``key`` is the cache key's metadata
    data              [{member, used_by}]       benchmark / test / lexicon files
    members           {member: {sha256, size}}  every member but the manifest itself
    skipped           ["reason", ...]           cached results left out, and why

The checksums detect a damaged or edited member; they are not a signature (whoever can rewrite the zip can
rewrite the manifest too).
"""
from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

from biascore.store.provenance import package_versions as versions
from biascore.version import ENGINE_VERSION

FORMAT = "biascore-snapshot"
FORMAT_VERSION = 1
MANIFEST = "manifest.json"
TOP_FOLDERS = ("cache", "data")
#: packages whose versions can change a number; recorded so a presenter can reproduce the environment
RECORDED_PACKAGES = ("numpy", "pandas", "pyarrow", "scipy", "scikit-learn", "torch", "transformers", "tokenizers",
                     "gguf", "spacy", "pymusas", "statsmodels", "streamlit")


class SnapshotError(ValueError):
    """A snapshot cannot be opened or written; the message is one line and says why."""


def package_versions() -> dict[str, str]:
    """The versions of Python, the engine and :data:`RECORDED_PACKAGES` that are installed
    (:func:`biascore.store.provenance.package_versions`, with the engine under ``biascore-engine``)."""
    out = versions(RECORDED_PACKAGES)
    out["biascore-engine"] = out.pop("biascore")
    return out


def _version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version)[:3]) or (0,)


def check_engine(manifest: dict, label: str) -> None:
    """Refuse a snapshot whose results this engine cannot find: every cache key holds the engine version."""
    made_by = str(manifest.get("engine_version", "?"))
    if made_by == ENGINE_VERSION:
        return
    if _version_tuple(made_by) > _version_tuple(ENGINE_VERSION):
        raise SnapshotError(f"{label} was made by biascore engine {made_by}; this is engine {ENGINE_VERSION}: "
                            f"install biascore {made_by} or newer to open it")
    raise SnapshotError(f"{label} was made by the older biascore engine {made_by}, whose cache keys this engine "
                        f"({ENGINE_VERSION}) does not read: export it again with engine {ENGINE_VERSION}, "
                        f"or open it with biascore {made_by}")


def check_format(manifest: object, label: str) -> dict:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise SnapshotError(f"{label} is not a biascore snapshot (its manifest.json is not one)")
    if int(manifest.get("format_version", 0)) > FORMAT_VERSION:
        raise SnapshotError(f"{label} uses snapshot format {manifest.get('format_version')}; this biascore reads "
                            f"format {FORMAT_VERSION}: install the biascore version that made it "
                            f"(engine {manifest.get('engine_version', '?')}) or newer")
    for field in ("members", "entries", "models"):
        if not isinstance(manifest.get(field), (dict, list)):
            raise SnapshotError(f"{label}: manifest.json has no {field!r}")
    return manifest


def safe_member(name: str) -> bool:
    """A member name that unpacks inside the target folder: relative, no '..', under cache/ or data/."""
    path = PurePosixPath(name)
    return (not path.is_absolute() and "\\" not in name and ".." not in path.parts and len(path.parts) >= 2
            and path.parts[0] in TOP_FOLDERS and all(p not in ("", ".") for p in path.parts))


def dumps(manifest: dict) -> bytes:
    return json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False).encode("utf-8")
