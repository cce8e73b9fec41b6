"""A faster drop-in for pymusas's wildcard multi-word-expression lookup, with identical results.

:meth:`MWELexiconCollection.mwe_match` tries every wildcard template of the n-gram's length for every n-gram
(about 50,000 regex calls per English sentence). Here each template is indexed by an *anchor*, the longest literal
prefix before a ``*`` in one of its tokens (``put*_*`` → ``put``); a wildcard never matches a space, so a template
can match only if each anchor is a prefix of the n-gram's token at its position. pymusas's own test runs on just
those candidates (and the templates with no literal text), in pymusas's order; anything unusual (whitespace in a
token, an n-gram starting with ``*``, a POS mapper) goes to pymusas's own method.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import List

from pymusas.lexicon_collection import LexiconType, MWELexiconCollection


_OTHER_WHITESPACE = re.compile(r"[^\S ]")


class IndexedMWELexiconCollection(MWELexiconCollection):
    """:class:`MWELexiconCollection` whose wildcard matching uses an anchor index (same matches, same order)."""

    _index = None  # built lazily, see _build_index
    MEMO_SIZE = 200_000  # n-gram → matches; the four spellings of an n-gram (token/lemma, lower-cased) often agree

    def __setitem__(self, key: str, value: List[str]) -> None:
        self._index = None
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self._index = None
        super().__delitem__(key)

    def _build_index(self) -> None:
        """Per n: ``{(position, "<"|">", anchor): [keys]}``, the keys without any literal text, and each key's
        rank in its pymusas bucket. ``<`` anchors are literal prefixes of a template token (before its first
        ``*``), ``>`` anchors literal suffixes (after its last ``*``, e.g. ``_PROPN`` of ``*_PROPN``)."""
        index, prefixes, suffixes = {}, set(), set()
        for n, buckets in self.mwe_regular_expression_lookup.items():
            anchored: dict = defaultdict(list)
            unanchored, order = [], {}
            for bucket in buckets.values():
                for rank, key in enumerate(bucket):
                    order[key] = rank
                    options = []
                    for position, raw in enumerate(key.split()):
                        options.append((len(raw.split("*", 1)[0]), position, "<", raw.split("*", 1)[0]))
                        if "*" in raw:
                            options.append((len(raw.rsplit("*", 1)[1]), position, ">", raw.rsplit("*", 1)[1]))
                    length, position, side, anchor = max(options, key=lambda o: o[0])
                    if length:
                        anchored[(position, side, anchor)].append(key)
                        (prefixes if side == "<" else suffixes).add(anchor)
                    else:
                        unanchored.append(key)
            index[n] = (dict(anchored), unanchored, order)
        self._index, self._prefixes, self._suffixes, self._memo, self._token_anchors = \
            index, prefixes, suffixes, {}, {}

    def _anchors_of(self, token: str) -> list[tuple[str, str]]:
        found = self._token_anchors.get(token)
        if found is None:
            found = [("<", token[:i]) for i in range(1, len(token) + 1) if token[:i] in self._prefixes]
            found += [(">", token[i:]) for i in range(len(token)) if token[i:] in self._suffixes]
            self._token_anchors[token] = found
        return found

    def mwe_match(self, mwe_template: str, mwe_type: LexiconType) -> List[str]:
        if (mwe_type != LexiconType.MWE_WILDCARD or self.pos_mapper or not mwe_template
                or mwe_template[0] == "*" or "  " in mwe_template or mwe_template[-1] == " "
                or _OTHER_WHITESPACE.search(mwe_template)):
            return super().mwe_match(mwe_template, mwe_type)
        if self._index is None:
            self._build_index()
        found = self._memo.get(mwe_template)
        if found is None:
            found = self._match(mwe_template)
            if len(self._memo) >= self.MEMO_SIZE:
                self._memo.clear()
                self._token_anchors.clear()
            self._memo[mwe_template] = found
        return list(found)

    def _match(self, mwe_template: str) -> tuple[str, ...]:
        tokens = mwe_template.split(" ")
        entry = self._index.get(len(tokens))
        if entry is None:
            return ()
        anchored, unanchored, order = entry
        candidates = set(unanchored)
        for position, token in enumerate(tokens):
            for side, anchor in self._anchors_of(token):
                keys = anchored.get((position, side, anchor))
                if keys:
                    candidates.update(keys)
        if not candidates:
            return ()
        first = mwe_template[0]
        buckets = self.mwe_regular_expression_lookup[len(tokens)]
        # pymusas tries the "*" bucket first, then the bucket of the n-gram's first character
        ordered = sorted((k for k in candidates if k[0] in ("*", first)), key=lambda k: (k[0] != "*", order[k]))
        matches = []
        for key in ordered:
            match = buckets[key[0]][key].match(mwe_template)
            if match is not None and match.start() == 0 and match.end() == len(mwe_template):
                matches.append(key)
        return tuple(matches)
