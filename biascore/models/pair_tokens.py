"""Tokenise a sentence pair and find the unmodified tokens U, their character spans and word units.

Bias attribution score paper / published code: U are the tokens in the ``equal`` blocks of
``difflib.SequenceMatcher`` over the two token-id sequences, with ``autojunk=False`` (the heuristic only acts from
200 tokens on, where it made long pairs share "no tokens"; below that, every registered pair, the blocks are the
published ones). From :data:`LONG_PAIR` tokens on, the common prefix and suffix are shared as they are and the
matcher runs on the middle only (its cost grows with the square of repeated tokens). Special tokens are never
scored; the rest are the *modified* tokens. A masked LM's ids include the special tokens; a causal LM's are the
content tokens alone (the scorer puts a start token in front).

**Words**, the engine's one definition (attribution ``words``/``word_bu``, the word level, semantic fields, the
minimal-pair check; docs/methods.md, "Words"): a run of letters or digits with their combining marks and inner
hyphens or apostrophes, every other visible character a unit of its own (:data:`WORD_RE`, :func:`word_spans`).
Without spaces between words: each Chinese/Japanese character is a word, a run of Thai letters is cut by PyThaiNLP's
dictionary segmenter (``newmm``), a run of Lao, Khmer or Myanmar stays one unit. Tokens join words by character
offsets, never by "##"/"Ġ"/"▁"; a word a modified token overlaps is **modified**, never scored.
"""
from __future__ import annotations

import difflib
import itertools
import os
from dataclasses import dataclass, field
from typing import Sequence

import regex

from biascore.models.loading import LanguageModel


@dataclass
class SentenceTokens:
    text: str  # the original sentence
    ids: list[int]  # the model's input ids (masked: with special tokens; causal: content only)
    content: list[int]  # positions in ids of content (non-special) tokens
    tokens: list[str]  # token strings of the content positions
    spans: list[tuple[int, int]]  # char spans in text of the content tokens (leading whitespace stripped)
    truncated: bool = False


@dataclass
class PairTokens:
    more: SentenceTokens
    less: SentenceTokens
    shared_more: list[int] = field(default_factory=list)  # positions in more.ids of the U tokens, in order
    shared_less: list[int] = field(default_factory=list)  # matching positions in less.ids

    @property
    def truncated(self) -> bool:
        return self.more.truncated or self.less.truncated


def max_input_length(lm: LanguageModel) -> int:
    """The longest input the model takes: the smaller of the tokenizer's and the position embeddings' limits."""
    limits = [getattr(lm.tokenizer, "model_max_length", None), getattr(lm.config, "max_position_embeddings", None),
              getattr(lm.config, "n_positions", None)]
    limits = [int(x) for x in limits if isinstance(x, int) and 0 < x < 1_000_000]
    return min(limits) if limits else 512


def tokenize_sentences(lm: LanguageModel, texts: Sequence[str]) -> list[SentenceTokens]:
    """Tokenise sentences for ``lm`` (lower-cased for an uncased model), keeping offsets into each text. One batched
    tokenizer call for all of them (the fast tokenizers encode a batch in parallel, outside the Python loop); a sentence
    over the model's input limit is re-encoded alone with the tokenizer's own truncation, which keeps the closing
    special tokens."""
    tok = lm.tokenizer
    masked = lm.kind == "masked"
    limit = max_input_length(lm) - (0 if masked else 1)  # causal: room for the start token
    kwargs = dict(add_special_tokens=masked, return_offsets_mapping=True, return_special_tokens_mask=True)
    prepared = [lm.prepare_text(t) for t in texts]
    if not prepared:
        return []
    encoded = _encode_batch(tok, prepared, masked)
    out = []
    for k, text in enumerate(texts):
        ids, offsets, special, names = encoded[k]
        truncated = len(ids) > limit
        if truncated:
            one = tok(prepared[k], truncation=True, max_length=limit, **kwargs)
            ids, offsets, special = one["input_ids"], one["offset_mapping"], one["special_tokens_mask"]
            names = tok.convert_ids_to_tokens(list(ids))
        ids = list(ids)
        content = [i for i, s in enumerate(special) if not s]
        spans = [(int(end - len(text[start:end].lstrip())), int(end)) for start, end in (offsets[i] for i in content)]
        tokens = [names[i] for i in content]
        out.append(SentenceTokens(text=text, ids=ids, content=content, tokens=tokens, spans=spans, truncated=truncated))
    return out


def _encode_batch(tok, texts: list[str], add_special: bool) -> list[tuple[list, list, list, list]]:
    """(ids, offsets, special-token mask, token strings) per text, in one batched call. A fast tokenizer is called
    through its Rust backend (what ``tok(texts, ...)`` does, without building a Python dict per sentence); a tokenizer
    without one goes through its own ``__call__``."""
    backend = getattr(tok, "backend_tokenizer", None) if getattr(tok, "is_fast", False) else None
    if backend is not None and backend.truncation is None and backend.padding is None:
        return [(e.ids, e.offsets, e.special_tokens_mask, e.tokens)
                for e in backend.encode_batch(texts, add_special_tokens=add_special)]
    enc = tok(texts, add_special_tokens=add_special, return_offsets_mapping=True, return_special_tokens_mask=True)
    return [(ids, offsets, special, tok.convert_ids_to_tokens(list(ids)))
            for ids, offsets, special in zip(enc["input_ids"], enc["offset_mapping"], enc["special_tokens_mask"])]


#: difflib's autojunk threshold: from this many tokens on, common prefix and suffix are aligned first
LONG_PAIR = 200


def shared_positions(ids_a: list[int], ids_b: list[int]) -> tuple[list[int], list[int]]:
    """Positions of the tokens in the ``equal`` blocks of difflib.SequenceMatcher over two id sequences (no
    autojunk heuristic; pairs of :data:`LONG_PAIR` tokens or more: common prefix and suffix, then the
    matcher on the middle — see the module docstring)."""
    a, b = [str(x) for x in ids_a], [str(x) for x in ids_b]
    head = tail = 0
    if max(len(a), len(b)) >= LONG_PAIR:  # (os.path.commonprefix compares any sequences item by item)
        head = len(os.path.commonprefix([a, b]))
        tail = len(os.path.commonprefix([a[head:][::-1], b[head:][::-1]]))
    matcher = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail], autojunk=False)
    pos_a, pos_b = list(range(head)), list(range(head))
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            pos_a += range(head + a0, head + a1)
            pos_b += range(head + b0, head + b1)
    pos_a += range(len(a) - tail, len(a))
    pos_b += range(len(b) - tail, len(b))
    return pos_a, pos_b


def pair_of(more: SentenceTokens, less: SentenceTokens) -> PairTokens:
    """The pair of two tokenised sentences with its shared tokens U (content tokens of the equal blocks)."""
    pos_more, pos_less = shared_positions(more.ids, less.ids)
    content_more, content_less = set(more.content), set(less.content)
    pairs = [(a, b) for a, b in zip(pos_more, pos_less) if a in content_more and b in content_less]
    return PairTokens(more=more, less=less, shared_more=[a for a, _ in pairs], shared_less=[b for _, b in pairs])


def shares_only_punctuation(pt: PairTokens) -> bool:
    """True when the pair shares tokens but none of them holds a letter or a digit (e.g. only the final "."). Such a
    pair is not a minimal pair ("Poor people are lazy." / "Quantum chromodynamics describes gluons."): S_JSD would be
    b(".") alone. The text of a shared token is its character span in the more-biased sentence."""
    index = {pos: k for k, pos in enumerate(pt.more.content)}
    texts = (pt.more.text[slice(*pt.more.spans[index[pos]])] for pos in pt.shared_more)
    return bool(pt.shared_more) and not any(ch.isalnum() for text in texts for ch in text)


_HAN, _SEA = r"\p{Han}\p{Hiragana}\p{Katakana}", r"\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}"
_LETTERS = rf"(?:(?![{_HAN}{_SEA}])[\w\p{{M}}])+"
#: A word (letters/digits with their marks, inner hyphens or apostrophes: "mag-aaral", "don't"), one Han/kana
#: character, a run of Thai/Lao/Khmer/Myanmar (Thai cut further by :func:`word_spans`), or one other visible character.
WORD_RE = regex.compile(rf"{_LETTERS}(?:[-'’]{_LETTERS})*|[{_HAN}]\p{{M}}*|[{_SEA}][{_SEA}\p{{M}}]*|[^\w\p{{M}}\s]")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words and punctuation marks of ``text``, in order (:data:`WORD_RE`; a Thai run cut
    into words by PyThaiNLP's ``newmm``)."""
    out = []
    for m in WORD_RE.finditer(text):
        ends = [m.end()]
        if regex.match(r"\p{Thai}", m.group()):
            from pythainlp.tokenize import word_tokenize

            ends = [m.start() + e for e in itertools.accumulate(map(len, word_tokenize(m.group(), engine="newmm")))]
        out += zip([m.start(), *ends[:-1]], ends)
    return out


def split_words(text: str) -> list[str]:
    """The words and punctuation marks of ``text``, in order (whitespace dropped)."""
    return [text[s:e] for s, e in word_spans(text)]


def flatten_spans(spans) -> list[int]:
    """``[(s0, e0), (s1, e1), …]`` → ``[s0, e0, s1, e1, …]``: how the cache and the result frames store spans."""
    return [int(x) for span in spans for x in span]


def unflatten_spans(flat) -> list[tuple[int, int]]:
    """``[s0, e0, s1, e1, …]`` → ``[(s0, e0), (s1, e1), …]`` (inverse of :func:`flatten_spans`)."""
    flat = [int(x) for x in flat]
    return list(zip(flat[0::2], flat[1::2]))
