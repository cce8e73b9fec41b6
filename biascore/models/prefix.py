"""The token put in front of a sentence when a causal LM scores it: the conventions, and which token each gives.

Which token it is changes the numbers (docs/scores.md, "The prefix token"), so every causal result stores it (id
and text) in its cache key and rows. The conventions:

* ``published`` (default for b(u), S_JSD and PLL; the published bias-attribution code): the BOS when the
  tokenizer adds one by itself (gemma, Llama-2), else the EOS (gpt2's ``<|endoftext|>``), else the BOS;
* ``lmeval`` (lm-evaluation-harness ≥ 0.4.2, ``HFLM.prefix_token_id``): the BOS when defined, else the EOS;
* ``bos`` / ``eos``: that token.

A tokenizer with neither is refused in one line (:class:`PrefixError`); masked LMs take no prefix. A causal
result's key also stores the tokenizer's BOS/EOS facts (:class:`SpecialTokens`), so an offline snapshot's
stand-in model (:mod:`biascore.snapshot.standin`) finds its results without a tokenizer.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

#: the conventions offered by ``--prefix``, the default first
PREFIX_CONVENTIONS: tuple[str, ...] = ("published", "lmeval", "bos", "eos")
DEFAULT_PREFIX = "published"
#: what each convention means, in a few words (CLI help, the Overview's caption)
PREFIX_HELP = {
    "published": "the published bias-attribution code's: BOS if the tokenizer adds one, else EOS (gpt2), else BOS",
    "lmeval": "lm-evaluation-harness's (≥ 0.4.2): BOS if the tokenizer defines one, else EOS",
    "bos": "the tokenizer's BOS token", "eos": "the tokenizer's EOS token",
}


class PrefixError(ValueError):
    """No token for the requested prefix convention; the message is one line."""


@dataclass(frozen=True)
class SpecialTokens:
    """The facts of a tokenizer that decide every prefix convention (obtainable without loading the weights)."""

    bos_id: int | None
    bos: str | None
    eos_id: int | None
    eos: str | None
    adds_bos: bool  # the tokenizer puts its BOS in front by itself (add_special_tokens=True)

    @classmethod
    def from_meta(cls, stored) -> "SpecialTokens | None":
        """Back from a cache entry's ``tokenizer_specials`` (a dict, or the list of pairs the key stores)."""
        if not stored:
            return None
        return cls(**dict(stored))

    @classmethod
    def of(cls, tokenizer) -> "SpecialTokens":
        bos_id, eos_id = tokenizer.bos_token_id, tokenizer.eos_token_id
        ids = tokenizer("a", add_special_tokens=True)["input_ids"]
        return cls(None if bos_id is None else int(bos_id), tokenizer.bos_token,
                   None if eos_id is None else int(eos_id), tokenizer.eos_token,
                   bool(bos_id is not None and ids and ids[0] == bos_id))


@dataclass(frozen=True)
class PrefixToken:
    """The token a causal result was computed with: its convention, id and text."""

    convention: str
    id: int
    text: str

    def key_parts(self, specials: SpecialTokens) -> dict:
        """What goes into the cache key: the token itself (id and text) and every convention that gives it for
        this tokenizer — not the requested convention's name, so conventions that give the same token share one
        result (gpt2: published = lmeval = <|endoftext|>), and a reader of the entry knows which it serves."""
        return {"prefix_token_id": self.id, "prefix_token": self.text,
                "prefix_conventions": conventions_giving(specials, self.id), "tokenizer_specials": asdict(specials)}


def prefix_token(specials: SpecialTokens, convention: str = DEFAULT_PREFIX, model: str = "the model") -> PrefixToken:
    """The token ``convention`` puts in front of a sentence for a tokenizer with ``specials`` (module docstring)."""
    if convention not in PREFIX_CONVENTIONS:
        raise PrefixError(f"unknown prefix convention {convention!r}; choose one of {', '.join(PREFIX_CONVENTIONS)}")
    bos = (specials.bos_id, specials.bos)
    eos = (specials.eos_id, specials.eos)
    order = {"published": [bos, eos, bos] if specials.adds_bos else [eos, bos],
             "lmeval": [bos, eos], "bos": [bos], "eos": [eos]}[convention]
    for tid, text in order:
        if tid is not None:
            return PrefixToken(convention, int(tid), str(text))
    if convention in ("bos", "eos"):
        raise PrefixError(f"{model}: its tokenizer defines no {convention.upper()} token (--prefix {convention})")
    raise PrefixError(f"{model}: its tokenizer defines neither a BOS nor an EOS token, so a causal LM has no token "
                      "to put in front of a sentence")


def untold_prefix_message(model: str, convention: str) -> str:
    """The one line for a served model whose server does not say the token ``convention`` needs."""
    return (f"{model}: the server does not say its tokenizer's BOS/EOS token that the {convention} prefix convention "
            "needs (vLLM: start it with --enable-tokenizer-info-endpoint), or choose another --prefix")


def conventions_giving(specials: SpecialTokens, token_id: int) -> list[str]:
    """The conventions whose token is ``token_id`` for a tokenizer with ``specials``."""
    out = []
    for convention in PREFIX_CONVENTIONS:
        try:
            if prefix_token(specials, convention).id == token_id:
                out.append(convention)
        except PrefixError:
            pass
    return out
