"""Is a sentence pair a *minimal pair*? List what differs between two sentences and flag pairs whose difference is
more than the demographic word(s) (docs/review.md).

CrowS-Pairs (Nangia et al. 2020) and the bias attribution paper (Gamboa & Lee) assume the two sentences differ in
"one to three different words" naming the group; b(u) compares the shared units, so a translation that rephrased
the rest breaks it. :func:`diff_units` aligns the case-folded units with :class:`difflib.SequenceMatcher` (no junk
heuristic, as CrowS-Pairs finds modified tokens); :func:`check_pair` calls a pair *minimal* when neither sentence
is empty and they differ, each has at most ``max_diff_words`` (3) differing words (punctuation not counted), there
are at most ``max_diff_spans`` (3) distinct substitutions (one repeated verbatim counts once), and at least one
unit is shared. Heuristics: the result says which rule failed, for a reviewer to decide.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Sequence

from biascore.models.pair_tokens import split_words

_WORD_RE = re.compile(r"\w", re.UNICODE)

MAX_DIFF_WORDS = 3
MAX_DIFF_SPANS = 3


#: Words and punctuation marks of a text in order: the engine's one word definition.
split_units = split_words


def is_word(unit: str) -> bool:
    """True for a unit that contains a letter or digit (punctuation marks are not words)."""
    return bool(_WORD_RE.search(unit))


@dataclass(frozen=True)
class DiffSpan:
    """One place where the sentences differ: ``more[more_start:more_end]`` replaced by ``less[less_start:less_end]``
    (indices into the unit lists; one side may be empty for an insertion or deletion)."""

    more_start: int
    more_end: int
    less_start: int
    less_end: int
    more_units: tuple[str, ...]
    less_units: tuple[str, ...]


def diff_units(more: Sequence[str], less: Sequence[str]) -> list[DiffSpan]:
    """The runs where two unit sequences differ, aligned after case-folding (so "Women"/"women" match)."""
    a = [u.casefold() for u in more]
    b = [u.casefold() for u in less]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    return [DiffSpan(i1, i2, j1, j2, tuple(more[i1:i2]), tuple(less[j1:j2]))
            for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


@dataclass(frozen=True)
class MinimalPairCheck:
    """The outcome of :func:`check_pair`. ``minimal`` is False when ``problems`` is not empty."""

    minimal: bool
    problems: tuple[str, ...]
    spans: tuple[DiffSpan, ...] = field(default=())
    n_shared: int = 0

    @property
    def reason(self) -> str:
        """The problems joined into one sentence ("" for a minimal pair)."""
        return "; ".join(self.problems)

    def describe(self) -> str:
        """A one-line summary such as ``"women" → "men"`` (``∅`` for nothing)."""
        parts = [f"\"{' '.join(s.more_units) or '∅'}\" → \"{' '.join(s.less_units) or '∅'}\"" for s in self.spans]
        return ", ".join(parts) or "no difference"


def check_pair(sent_more: str, sent_less: str, *, more_units: Sequence[str] | None = None,
               less_units: Sequence[str] | None = None, max_diff_words: int = MAX_DIFF_WORDS,
               max_diff_spans: int = MAX_DIFF_SPANS) -> MinimalPairCheck:
    """Check that two sentences differ only in a few words (see the module docstring for the rules).
    ``more_units``/``less_units`` replace the default word/punctuation split (pass a tokenizer's tokens to check at
    sub-word level; then every differing token counts as a word unless it is pure punctuation)."""
    more_text, less_text = str(sent_more or "").strip(), str(sent_less or "").strip()
    if not more_text or not less_text:
        which = "both sentences are" if not more_text and not less_text else (
            "the more-biased sentence is" if not more_text else "the less-biased sentence is")
        return MinimalPairCheck(False, (f"{which} empty",))
    more = list(more_units) if more_units is not None else split_units(more_text)
    less = list(less_units) if less_units is not None else split_units(less_text)
    spans = tuple(diff_units(more, less))
    n_shared = len(more) - sum(s.more_end - s.more_start for s in spans)
    problems: list[str] = []
    if not spans:
        problems.append("the sentences are identical" if more_text == less_text
                        else "the sentences differ only in case or spacing")
    else:
        distinct = {(tuple(u.casefold() for u in s.more_units), tuple(u.casefold() for u in s.less_units))
                    for s in spans}
        n_more = sum(is_word(u) for m, _ in distinct for u in m)
        n_less = sum(is_word(u) for _, l in distinct for u in l)
        if max(n_more, n_less) > max_diff_words:
            problems.append(f"{max(n_more, n_less)} words differ (more than {max_diff_words}): the difference is "
                            "more than the demographic word(s)")
        if len(distinct) > max_diff_spans:
            problems.append(f"the sentences differ by {len(distinct)} distinct substitutions "
                            f"(more than {max_diff_spans})")
        if n_shared == 0:
            problems.append("the sentences share no words, so there is nothing to attribute")
    return MinimalPairCheck(not problems, tuple(problems), spans, n_shared)
