"""SEAT / WEAT test files and the gender word lists: the one loader every method uses.

A test file is one JSON object with ``targ1``, ``targ2``, ``attr1``, ``attr2``, each
``{"category": ..., "examples": [...]}``: X = targ1, Y = targ2 (targets), A = attr1, B = attr2
(attributes). Files (pretty-printed JSON despite the ``.jsonl`` extension; docs/data.md says where each comes
from): ``seat/<name>.jsonl`` (the shipped ``demo-weat6`` too: :mod:`biascore.inputs.shipped`) and the Bangla
categories C1–C9, ``bangla/ceat_categories/ceat<i>.jsonl``, named ``bangla-c<i>``.

Rules (the attention-head page and the association page read every file the same way):

* **Items**: each example is stripped; empty ones are dropped; repeats are dropped, first occurrence
  kept (WEAT's X, Y, A, B are *sets*: a repeated word would count twice in a mean). The Bangla files
  repeat one attribute word each in C1–C3; no English file has a repeat.
* **Minimum size**: each target set needs at least 2 items and each attribute set at least 1 (the
  effect size divides by the standard deviation of s(w, A, B) over X ∪ Y and needs a mean over A and B).
* **Sentence tests**: a test is sentence-level (SEAT: each item embedded as a sentence) when its name
  starts with ``sent-`` or any item ends with ``.``, ``!`` or ``?`` (the Heilman double-bind tests hold
  sentences without the prefix); otherwise its items are words or short phrases (WEAT).
* **Names** are file stems (letters, digits, ``_+-``) or ``bangla-c1`` … ``bangla-c9``; a path to an
  existing ``.jsonl`` file is read as is (CLI and tests). Nothing else reaches the file system.
* **content_hash** is the SHA-256 of the file's bytes (part of every cache key that uses the test).

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

from biascore import settings
from biascore.store.hashing import bytes_sha256
from biascore.inputs.shipped import data_file, shipped_stems

ROLES = ("targ1", "targ2", "attr1", "attr2")
MIN_ITEMS = {"targ1": 2, "targ2": 2, "attr1": 1, "attr2": 1}

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
_BANGLA = re.compile(r"^bangla-c([1-9])$")
_NAME = re.compile(r"[A-Za-z0-9_+\-]+")


class SeatTestError(ValueError):
    """A SEAT test is malformed or its name is not a test name."""


class SeatTestNotFound(SeatTestError, FileNotFoundError):
    """No file for this test name."""


@dataclass(frozen=True)
class SeatTest:
    name: str
    categories: dict  # role -> category name
    examples: dict  # role -> tuple[str, ...]
    content_hash: str
    language: str = "en"  # "en" or "bn"

    @property
    def sentence_level(self) -> bool:
        """True when the examples are sentences (see the module's rules)."""
        if self.name.startswith("sent-"):
            return True
        return any(_SENTENCE_END.search(e) for role in ROLES for e in self.examples[role])

    @property
    def kind(self) -> str:
        """``"sentences"`` (SEAT) or ``"words"`` (WEAT / CEAT)."""
        return "sentences" if self.sentence_level else "words"

    @property
    def X(self) -> tuple[str, ...]:  # noqa: N802 - the papers' names
        return self.examples["targ1"]

    @property
    def Y(self) -> tuple[str, ...]:  # noqa: N802
        return self.examples["targ2"]

    @property
    def A(self) -> tuple[str, ...]:  # noqa: N802
        return self.examples["attr1"]

    @property
    def B(self) -> tuple[str, ...]:  # noqa: N802
        return self.examples["attr2"]

    def describe(self) -> str:
        c = self.categories
        return f"{c['targ1']} vs {c['targ2']} × {c['attr1']} vs {c['attr2']}"


def _language(name: str) -> str:
    return "bn" if _BANGLA.match(name) else "en"


def list_seat_tests(data_dir: str | Path | None = None, language: str | None = None,
                    kind: str | None = None) -> list[str]:
    """Names of the tests in the data directory (English first, natural order, then Bangla).

    ``kind`` (``"sentences"`` / ``"words"``) reads each file to apply the sentence rule; a malformed file
    stays in the list, so loading it reports what is wrong.
    """
    root = settings.data_dir(data_dir)
    found = {p.stem for p in (root / "seat").glob("*.jsonl")}  # none when the folder is absent
    names = sorted(found | set(shipped_stems("seat", ".jsonl", data_dir)),  # in natural order: sent-6 before sent-10
                   key=lambda name: [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)])
    names += [f"bangla-c{i}" for i in range(1, 10) if (root / "bangla" / "ceat_categories" / f"ceat{i}.jsonl").is_file()]
    names = [n for n in names if language is None or _language(n) == language]
    if kind is not None:
        names = [n for n in names if _kind(n, data_dir) in (kind, None)]
    return names


def _kind(name: str, data_dir: str | Path | None) -> str | None:
    try:
        return load_seat_test(name, data_dir).kind
    except SeatTestError:
        return None


def seat_test_path(name: str, data_dir: str | Path | None) -> Path:
    """The file of SEAT/WEAT test ``name``: a ``.jsonl`` path as given, else ``seat/<name>.jsonl`` or the Bangla
    category file in the data directory (only safe names reach the file system)."""
    path = Path(name)
    if path.suffix == ".jsonl" and path.is_file():
        return path
    m = _BANGLA.match(name)
    if m:
        return settings.data_dir(data_dir) / "bangla" / "ceat_categories" / f"ceat{m.group(1)}.jsonl"
    if not _NAME.fullmatch(name):
        raise SeatTestError(f"not a test name: {name!r}")
    return data_file(f"seat/{name}.jsonl", data_dir)


def load_seat_test(name: str, data_dir: str | Path | None = None) -> SeatTest:
    """Read one test by name (or .jsonl path) under the module's rules.

    Raises :class:`SeatTestNotFound` (a FileNotFoundError) for a missing file and :class:`SeatTestError`
    (a ValueError) for a bad name or a malformed file, naming the path and what is wrong.
    """
    path = seat_test_path(name, data_dir)
    if not path.is_file():
        known = ", ".join(list_seat_tests(data_dir)) or "none"
        raise SeatTestNotFound(f"SEAT test {name!r} not found at {path}; available: {known}")
    raw = path.read_bytes()
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:
        raise SeatTestError(f"{path} is not one JSON object: {exc}") from exc
    if not isinstance(obj, dict):
        raise SeatTestError(f"{path} is not one JSON object")
    examples, categories = {}, {}
    for role in ROLES:
        part = obj.get(role)
        if not isinstance(part, dict) or not isinstance(part.get("examples"), list):
            raise SeatTestError(f"{path}: missing {role}.examples")
        items = tuple(dict.fromkeys(str(e).strip() for e in part["examples"] if str(e).strip()))
        if len(items) < MIN_ITEMS[role]:
            raise SeatTestError(f"{path}: {role} needs at least {MIN_ITEMS[role]} distinct examples, has {len(items)}")
        examples[role] = items
        categories[role] = str(part.get("category", role))
    test_name = name if _BANGLA.match(name) else path.stem
    return SeatTest(test_name, categories, examples, bytes_sha256(raw), _language(test_name))


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


def gender_wordlist_path(part: str, data_dir: str | Path | None = None) -> Path:
    """``wordlists/gender_<part>.txt`` (part: female, male, stereotype): the data directory's, else the copy
    shipped with the project (MIT; an unchanged copy of the downloadable file)."""
    return data_file(f"wordlists/gender_{part}.txt", data_dir)


def load_gender_wordlists(data_dir: str | Path | None = None) -> GenderWordLists:
    h = hashlib.sha256()
    lists = {}
    for part in ("female", "male", "stereotype"):
        path = gender_wordlist_path(part, data_dir)
        if not path.is_file():
            raise FileNotFoundError(f"gender word list {path} not found")
        raw = path.read_bytes()
        h.update(raw)
        lists[part] = tuple(w.strip() for w in raw.decode("utf-8-sig").splitlines() if w.strip())
    if len(lists["female"]) != len(lists["male"]):
        raise ValueError(f"gender_female.txt ({len(lists['female'])} words) and gender_male.txt "
                         f"({len(lists['male'])}) must be paired line by line")
    return GenderWordLists(lists["female"], lists["male"], lists["stereotype"], h.hexdigest())
