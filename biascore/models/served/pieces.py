"""Character spans of a text's tokens from the tokenizer's own token strings, without asking the server.

vLLM's ``/tokenize`` gives the token strings (``return_token_strs``): for a byte-level BPE tokenizer (GPT-2,
Llama 3, SmolLM, Qwen) each character of a string stands for one byte (GPT-2's ``bytes_to_unicode`` table, ``Ġ``
for a space); for a SentencePiece tokenizer (Llama 2, Gemma, Mistral) ``▁`` is a space and ``<0xNN>`` one byte.
When every token decodes on its own to whole characters and the pieces put together give back the text exactly
(SentencePiece: after its leading dummy space), the spans are the pieces' running offsets, as an echo's
``text_offset`` gives them; anything else returns None and the caller asks the server (one echo). So a sentence
is tokenised without a forward pass, and the one echo it gets is the one that scores it.
"""
from __future__ import annotations

import re
from functools import lru_cache

_BYTE = re.compile(r"<0x([0-9A-Fa-f]{2})>")


@lru_cache(maxsize=1)
def _byte_decoder() -> dict[str, int]:
    """GPT-2's ``bytes_to_unicode`` table, reversed: the byte each character stands for."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode
    return {c: b for b, c in bytes_to_unicode().items()}


def _byte_level(strs: list[str]) -> list[str] | None:
    table = _byte_decoder()
    out = []
    for s in strs:
        if not s or any(ch not in table for ch in s):
            return None
        try:
            out.append(bytes(table[ch] for ch in s).decode("utf-8"))
        except UnicodeDecodeError:  # a character split over tokens: let the server say where it falls
            return None
    return out


def _sentencepiece(strs: list[str]) -> list[str] | None:
    out = []
    for s in strs:
        if _BYTE.fullmatch(s):
            try:
                out.append(bytes([int(_BYTE.fullmatch(s).group(1), 16)]).decode("utf-8"))
            except UnicodeDecodeError:
                return None
        elif s:
            out.append(s.replace("▁", " "))
        else:
            return None
    return out


def token_spans(text: str, strs: list[str] | None) -> list[tuple[int, int]] | None:
    """(start, end) in ``text`` of each token string, or None when the strings do not spell ``text`` exactly."""
    if not strs:
        return None
    for decode in (_byte_level, _sentencepiece):
        pieces = decode(strs)
        if pieces is None:
            continue
        joined = "".join(pieces)
        shift = 0 if joined == text else 1 if joined == " " + text else None
        if shift is None:
            continue
        spans, at = [], -shift
        for piece in pieces:
            spans.append((max(0, at), max(0, at + len(piece))))
            at += len(piece)
        return spans
    return None
