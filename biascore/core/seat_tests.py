"""SEAT / WEAT tests from the data directory (``seat/<name>.jsonl``) and the gender word lists.

Each SEAT file (May et al. 2019, from the sent-bias repository) is one JSON object with ``targ1``,
``targ2``, ``attr1``, ``attr2``, each ``{"category": ..., "examples": [...]}``: X = targ1, Y = targ2,
A = attr1, B = attr2. In ``sent-*`` tests (and the Heilman tests whose examples are whole sentences)
the examples are sentences; in the others they are words or short phrases.

The gender word lists (``wordlists/gender_{female,male}.txt``, paired by line, and
``gender_stereotype.txt``; Kaneko & Bollegala's context-debias lists, as used by the attention-head
bias paper) are read here too.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from biascore.core import settings

ROLES = ("targ1", "targ2", "attr1", "attr2")

#: Semantically bleached context sentences for word-level tests (in the style of May et al.'s
#: templates); a word's embedding is averaged over these contexts.
WORD_TEMPLATES = (
    "This is {}.",
    "That is {}.",
    "There is {}.",
    "Here is {}.",
    "{} is here.",
    "{} is there.",
    "It is {}.",
    "The word is {}.",
)

_SENTENCE_END = re.compile(r"[.!?]\s*$")


class SeatTestError(ValueError):
    """A SEAT test is missing or malformed."""


@dataclass(frozen=True)
class SeatTest:
    name: str
    categories: dict  # role -> category name
    examples: dict  # role -> tuple[str, ...]
    content_hash: str

    @property
    def sentence_level(self) -> bool:
        """True when the examples are sentences (``sent-*`` tests, Heilman sentence tests)."""
        if self.name.startswith("sent-"):
            return True
        items = [e for role in ROLES for e in self.examples[role]]
        return any(_SENTENCE_END.search(e) for e in items)

    def describe(self) -> str:
        c = self.categories
        return f"{c['targ1']} vs {c['targ2']} × {c['attr1']} vs {c['attr2']}"


def seat_dir(data_dir: str | Path | None = None) -> Path:
    return settings.data_dir(data_dir) / "seat"


def list_seat_tests(data_dir: str | Path | None = None) -> list[str]:
    """Names of the SEAT tests in the data directory (file stems), sorted."""
    folder = seat_dir(data_dir)
    return sorted(p.stem for p in folder.glob("*.jsonl")) if folder.is_dir() else []


def load_seat_test(name: str, data_dir: str | Path | None = None) -> SeatTest:
    """Read ``seat/<name>.jsonl`` (a path to a .jsonl file works too) and check its four roles."""
    path = Path(name)
    if not (path.suffix == ".jsonl" and path.is_file()):
        path = seat_dir(data_dir) / f"{name}.jsonl"
    if not path.is_file():
        known = ", ".join(list_seat_tests(data_dir)) or "none"
        raise SeatTestError(f"SEAT test {name!r} not found at {path}; available: {known}")
    raw = path.read_bytes()
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:
        raise SeatTestError(f"{path} is not one JSON object: {exc}") from exc
    examples, categories = {}, {}
    for role in ROLES:
        part = obj.get(role)
        if not isinstance(part, dict) or not isinstance(part.get("examples"), list):
            raise SeatTestError(f"{path}: missing {role}.examples")
        items = tuple(str(e).strip() for e in part["examples"] if str(e).strip())
        if len(items) < 2:
            raise SeatTestError(f"{path}: {role} needs at least 2 examples, has {len(items)}")
        examples[role] = items
        categories[role] = str(part.get("category", role))
    return SeatTest(path.stem, categories, examples, hashlib.sha256(raw).hexdigest())


@dataclass(frozen=True)
class GenderWordLists:
    female: tuple[str, ...]
    male: tuple[str, ...]
    stereotype: tuple[str, ...]
    content_hash: str

    def counterparts(self) -> dict[str, str]:
        """Lower-cased attribute word -> its counterpart of the other gender (both directions)."""
        out = {}
        for f, m in zip(self.female, self.male):
            out.setdefault(f.lower(), m.lower())
            out.setdefault(m.lower(), f.lower())
        return out


def load_gender_wordlists(data_dir: str | Path | None = None) -> GenderWordLists:
    folder = settings.data_dir(data_dir) / "wordlists"
    h = hashlib.sha256()
    lists = {}
    for part in ("female", "male", "stereotype"):
        path = folder / f"gender_{part}.txt"
        if not path.is_file():
            raise FileNotFoundError(f"gender word list {path} not found")
        raw = path.read_bytes()
        h.update(raw)
        lists[part] = tuple(w.strip() for w in raw.decode("utf-8-sig").splitlines() if w.strip())
    if len(lists["female"]) != len(lists["male"]):
        raise ValueError(f"gender_female.txt ({len(lists['female'])} words) and gender_male.txt "
                         f"({len(lists['male'])}) must be paired line by line")
    return GenderWordLists(lists["female"], lists["male"], lists["stereotype"], h.hexdigest())
