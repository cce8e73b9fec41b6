"""Find a word in raw text — with its inflectional suffixes — and cut a segment of words around it (CEAT).

Bangla words take suffixes in running text (ছেলে → ছেলেরা, ছেলেদের …; Bangla context-length paper, appendix C):
:func:`word_pattern` matches the word and at most one suffix (``data/bangla_suffixes.txt``, a few English endings),
bounded by non-letters, so মা matches মায়ের and মাকে but not মানুষ; text and words are NFC-normalised. A *segment*
of length l is the window of l words centred on the occurrence (shifted at the edges); ``None`` ("all") is the
occurrence's whole line.
"""
from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from biascore import settings

#: Characters that continue a word: Bengali block, zero-width (non-)joiners, and any Unicode word char.
_BN_LETTER = r"\u0980-\u09FF\u200c\u200d"
ENGLISH_SUFFIXES = ("s", "es", "'s", "\u2019s")


@lru_cache(maxsize=1)
def bangla_suffixes() -> tuple[str, ...]:
    """Common Bangla noun/adjective suffixes (case, number, classifiers, emphasis), longest first."""
    path = settings.PROJECT_DATA / "bangla_suffixes.txt"
    items = [unicodedata.normalize("NFC", line.split("#")[0].strip())
             for line in path.read_text(encoding="utf-8").splitlines()]
    return tuple(sorted({s for s in items if s}, key=len, reverse=True))


@lru_cache(maxsize=1)
def bangla_suffix_overrides() -> dict[str, tuple[str, ...]]:
    """Per-word suffix lists for words the general list over-matches (``data/bangla_suffix_overrides.tsv``)."""
    out = {}
    path = settings.PROJECT_DATA / "bangla_suffix_overrides.tsv"
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            word, *sfx = [normalize(x.strip()) for x in line.split("\t") if x.strip()]
            out[word] = tuple(sorted(sfx, key=len, reverse=True))
    return out


def default_suffixes(language: str, word: str = "") -> tuple[str, ...]:
    """The suffixes tried after ``word``: its own list if it has one, else the language's list."""
    if language != "bn":
        return ENGLISH_SUFFIXES
    return bangla_suffix_overrides().get(normalize(word.strip()), bangla_suffixes())


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def word_pattern(word: str, language: str = "bn", suffixes: tuple[str, ...] | None = None) -> re.Pattern:
    """Regex for ``word`` plus an optional suffix, not inside a longer word (case-insensitive for English)."""
    word = normalize(word.strip())
    if not word:
        raise ValueError("empty word")
    sfx = default_suffixes(language, word) if suffixes is None else tuple(sorted(map(normalize, suffixes), key=len,
                                                                           reverse=True))
    alt = "|".join(re.escape(s) for s in sfx if s)
    body = re.escape(word) + (f"(?:{alt})?" if alt else "")
    edge = rf"[\w{_BN_LETTER}]"
    return re.compile(rf"(?<!{edge}){body}(?!{edge})", re.IGNORECASE if language == "en" else 0)


@dataclass(frozen=True)
class Context:
    text: str  # the segment
    start: int  # character span of the matched word (with its suffix) inside ``text``
    end: int


class Corpus:
    """A raw text indexed by whitespace-separated words and lines, for cutting segments quickly."""

    def __init__(self, text: str):
        self.text = normalize(text)
        self.tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", self.text)]
        self._starts = [s for s, _ in self.tokens]
        self._line_starts = [0] + [m.end() for m in re.finditer(r"\n", self.text)]

    def occurrences(self, word: str, language: str = "bn", suffixes: tuple[str, ...] | None = None) -> list[tuple[int, int]]:
        return [m.span() for m in word_pattern(word, language, suffixes).finditer(self.text)]

    def segment(self, span: tuple[int, int], length: int | None) -> Context:
        s, e = span
        if length is None:
            li = bisect.bisect_right(self._line_starts, s) - 1
            lo = self._line_starts[li]
            nl = self.text.find("\n", e)
            hi = len(self.text) if nl < 0 else nl
        else:
            if length < 1:
                raise ValueError("segment length must be positive")
            t = max(0, bisect.bisect_right(self._starts, s) - 1)
            first = min(max(0, t - (length - 1) // 2), max(0, len(self.tokens) - length))
            last = min(len(self.tokens), first + length) - 1
            lo, hi = min(self.tokens[first][0], s), max(self.tokens[last][1], e)
        piece = self.text[lo:hi].replace("\n", " ")
        return Context(piece, s - lo, e - lo)

    def contexts(self, word: str, length: int | None, language: str = "bn",
                 suffixes: tuple[str, ...] | None = None) -> list[Context]:
        """Every occurrence of ``word`` (with suffixes) as a segment of ``length`` words."""
        return [self.segment(sp, length) for sp in self.occurrences(word, language, suffixes)]
