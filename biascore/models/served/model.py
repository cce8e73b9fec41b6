"""A causal LM behind an OpenAI-compatible completions server, as a :class:`~biascore.models.loading.LanguageModel`.

The engine asks a causal model for its tokens (:func:`biascore.models.pair_tokens.tokenize_sentences`) and for
log P(gold | prefix token, tokens before) per scored token (:func:`biascore.models.lm_scoring.causal_gold_logprobs`).
A :class:`ServedModel` answers both from the server: tokens from its ``/tokenize`` (:meth:`ServedModel.encode`),
log-probabilities from one echoed token-id prompt ``[prefix id] + ids`` per sentence, checked before use (a small
bounded memo keyed by the exact ids answers a repeated prompt), the prefix token picked by
:mod:`biascore.models.prefix` from the server's BOS/EOS facts.

**Every scoring request proves itself**: the fingerprint probe's first ``PROOF_TOKENS`` ids (:mod:`.fingerprint`)
ride last in each request and must come back within ``DRIFT_TOLERANCE`` nats of the first ones measured at connection
at every token (a causal model's log P(token i) depends on tokens ≤ i only), else nothing of it is used and
:class:`ServedChanged` says what moved (docs/cli.md, "A model behind a server"). Its identity is ``<server's model
name> (served)`` with the measured fingerprint, dtype ``served`` and device ``server``.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from types import SimpleNamespace
from typing import Sequence

import numpy as np
import torch

from biascore.errors import ModelChanged
from biascore.models.loading import LanguageModel
from biascore.models.precision import SERVED_DTYPE
from biascore.models.prefix import PrefixError, PrefixToken, SpecialTokens, prefix_token, untold_prefix_message
from biascore.models.served.client import DEFAULT_CONCURRENCY, ServedClient, ServedError, ServedName
from biascore.models.served.conformance import check_conformance
from biascore.models.served.fingerprint import DRIFT_TOLERANCE, PROBE, PROOF_TOKENS, measure_probe
from biascore.models.served.pieces import token_spans

MEMO_SIZE = 20_000


class _NoWeights(torch.nn.Module):
    """The ``model`` of a served LM: its configuration only; calling it is refused (the weights are remote)."""

    def __init__(self, config: SimpleNamespace, name: str):
        super().__init__()
        self.config, self._served_name = config, name

    def forward(self, *args, **kwargs):  # noqa: D401
        raise ServedError(f"{self._served_name} is a served model: only prompt log-probabilities are available, "
                          "not its weights or hidden states")


class ServedTokenizer:
    """The parts of a HuggingFace tokenizer's interface the engine uses, answered by the server."""

    mask_token = mask_token_id = None

    def __init__(self, served: "ServedModel", max_length: int):
        self._served, self.model_max_length = served, max_length

    def __call__(self, texts, add_special_tokens: bool = False, truncation: bool = False, max_length: int | None = None,
                 **_ignored) -> dict:
        single = isinstance(texts, str)
        batch = [texts] if single else list(texts)
        encoded = self._served.encode_many(batch, add_special_tokens)
        cut = max_length if truncation else None
        rows = [(list(ids[:cut]), list(spans[:cut])) for ids, spans, _ in encoded]
        out = {"input_ids": [ids for ids, _ in rows], "offset_mapping": [spans for _, spans in rows],
               "special_tokens_mask": [[0] * len(ids) for ids, _ in rows]}
        if single:
            out = {k: v[0] for k, v in out.items()}
        return out

    def convert_ids_to_tokens(self, ids):
        """The token strings of ids met while tokenising (the tokenizer's own, ``Ġare``, where the server gives
        them; else the text each token decodes to)."""
        with self._served._lock:
            return [self._served._texts.get(int(i), "") for i in ids]


class ServedModel(LanguageModel):
    """A causal LM behind a completions server (module docstring); made by :func:`load_served`."""

    client: ServedClient

    def prefix_token(self, convention: str = "published") -> PrefixToken:
        try:
            return prefix_token(self.special_tokens(), convention, self.name)
        except PrefixError:  # the server may know the token but not say it
            raise PrefixError(untold_prefix_message(self.name, convention)) from None

    def encode(self, text: str, add_special_tokens: bool = False) -> tuple[list[int], list[tuple[int, int]], list[str]]:
        """(ids, character spans, token texts) of ``text`` as the server tokenises it: spans from the token strings
        (:mod:`.pieces`), or from an echo of the ids where the strings do not spell the text."""
        client = self.client
        ids, names = client.tokenize_with_strs(text, add_special_tokens)
        if not ids:
            return [], [], []
        spans = token_spans(text, names)
        texts = names
        if spans is None:
            got = client.echo(ids, as_ids=False)
            base = got.text_offset[0]
            spans = [(max(0, min(o - base, len(text))), max(0, min(o - base + len(t), len(text))))
                     for o, t in zip(got.text_offset, got.tokens)]
            texts = names or list(got.tokens)
        with self._lock:
            self._texts.update(zip(map(int, ids), texts))
        return ids, spans, list(texts)

    def encode_many(self, texts: list[str], add_special_tokens: bool = False) -> list[tuple]:
        """:meth:`encode` of each text, many per ``/tokenize`` request (up to the input length): joined by the EOS
        text, which the tokenizer splits off first. Used only where the request splits into one part per text, the
        first text sent again last comes out alike and each part's token strings spell its text; else one by one."""
        eos, eos_id = self.extra["special_tokens"].eos, self.extra["special_tokens"].eos_id
        groups: list[list[int]] = []
        used = first = budget = self.tokenizer.model_max_length
        for k, text in enumerate(texts if not add_special_tokens and eos and eos_id is not None else ()):
            size = len(text.encode()) + 2  # at most its bytes in tokens, a leading piece and the separator
            if used + size + first > budget:
                groups, used, first = [*groups, []], 0, size
            groups[-1].append(k)
            used += size
        groups = [g for g in groups if len(g) > 1]
        out: list = [None] * len(texts)
        for g, got in zip(groups, self.client.map(lambda g: self._joined([texts[k] for k in g], eos, eos_id), groups)):
            out[g[0]:g[-1] + 1] = got  # a group is a run of texts
        alone = [k for k, one in enumerate(out) if one is None]
        for k, one in zip(alone, self.client.map(lambda k: self.encode(texts[k], add_special_tokens), alone)):
            out[k] = one
        return out

    def _joined(self, group: list[str], eos: str, eos_id: int) -> list:
        """The (ids, spans, token strings) of each text of ``group`` from one ``/tokenize`` request, None where that
        request cannot say (:meth:`encode_many`)."""
        ids, names = self.client.tokenize_with_strs(eos.join([*group, group[0]]))
        cuts = [-1, *(k for k, t in enumerate(ids) if t == eos_id), len(ids)]
        if names is None or len(cuts) != len(group) + 2:
            return [None] * len(group)
        parts = [(ids[a + 1:b], names[a + 1:b]) for a, b in zip(cuts, cuts[1:])]
        if parts[0] != parts[-1]:
            return [None] * len(group)
        out = [(part, token_spans(text, strs) if part else None, strs) for text, (part, strs) in zip(group, parts)]
        out = [None if spans is None else (part, spans, strs) for part, spans, strs in out]
        with self._lock:
            self._texts.update(pair for one in out if one for pair in zip(one[0], one[2]))
        return out

    def _score(self, prompts: Sequence[tuple[int, ...]], progress, weights: dict) -> dict[tuple[int, ...], list]:
        """The checked ``token_logprobs`` of distinct token-id prompts: those not in the memo go to the server,
        ``client.batch`` per request (by length, so a request's prompts are alike), several requests at once."""
        with self._lock:
            out = {p: self._memo[p] for p in prompts if p in self._memo}
        todo = sorted((p for p in dict.fromkeys(prompts) if p not in out), key=len)
        size = max(1, self.client.batch - 1)  # room for the proof
        chunks = [todo[k:k + size] for k in range(0, len(todo), size)]
        total = sum(weights.get(p, 1) for p in prompts)
        done = total - sum(weights.get(p, 1) for p in todo)

        def one(chunk: list[tuple[int, ...]]) -> list[list]:
            sent = [*chunk, self.extra["probe"].ids[:PROOF_TOKENS]]  # the proof rides last (batch 1: beside it)
            got = self.client.echo_many(sent) if self.client.batch > 1 else [self.client.echo(p) for p in sent]
            self._prove(got[-1].logprobs, len(got))
            return [g.logprobs for g in got[:-1]]

        def tick(j: int) -> None:
            nonlocal done
            done += sum(weights.get(p, 1) for p in chunks[j])
            if progress:
                progress(done, total)

        for chunk, values in zip(chunks, self.client.map(one, chunks, tick)):
            out.update(zip(chunk, values))
        with self._lock:
            for p in todo:
                self._memo[p] = out[p]
                self._memo.move_to_end(p)
            while len(self._memo) > MEMO_SIZE:
                self._memo.popitem(last=False)
        return out

    def causal_gold_logprobs(self, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                             progress=None, start: int | None = None) -> list[np.ndarray]:
        """log P(s[p] | start, s[:p]) for each sequence s and p in its positions, from the server's prompt
        log-probabilities of ``[start] + s`` (what :func:`biascore.models.lm_scoring.causal_gold_logprobs` computes
        in-process); one prompt per distinct sequence."""
        start = self.start_token_id() if start is None else int(start)
        keep = [i for i, ps in enumerate(positions) if len(ps)]
        prompt = {i: (start, *(int(t) for t in sequences[i])) for i in keep}
        weights: dict[tuple[int, ...], int] = {}
        for i in keep:
            weights[prompt[i]] = weights.get(prompt[i], 0) + len(positions[i])
        values = self._score([prompt[i] for i in keep], progress, weights)
        out = [np.zeros(0, dtype=np.float64) for _ in sequences]
        for i in keep:
            out[i] = np.array([values[prompt[i]][p + 1] for p in positions[i]], dtype=np.float64)
        return out

    def _prove(self, logprobs: list, prompts: int) -> None:
        """The proof prompt's answer against the first of the measurement made on connecting (module docstring)."""
        probe = self.extra["probe"]
        moved = [(abs(a - b), k, a, b) for k, (a, b) in enumerate(zip(probe.logprobs[1:], logprobs[1:]), 1)]
        drift, at, was, now = max(moved, default=(0.0, 0, 0.0, 0.0))
        if drift > DRIFT_TOLERANCE:
            raise ServedChanged(
                f"the server at {self.client.name.base} no longer computes what it did when this run began: in a "
                f"request of {prompts} prompts, token {at} of the proof prompt got log P {now:.4g}, {was:.4g} on "
                f"connecting ({drift:.3g} nats apart, over {DRIFT_TOLERANCE}): another model answers some requests "
                "(a replica, new weights) or large batches differ; nothing of it is used or stored")


class ServedChanged(ServedError, ModelChanged):
    """A scoring request's proof prompt moved (see :meth:`ServedModel._prove`): nothing of it is used."""


def _special_tokens(client: ServedClient) -> SpecialTokens:
    """The tokenizer's BOS/EOS facts as the server tells them (``/tokenize`` with and without special tokens, vLLM's
    ``/tokenizer_info``)."""
    info = client.tokenizer_info()

    def text_of(key: str) -> str | None:
        value = (info or {}).get(key)
        if isinstance(value, dict):
            value = value.get("content")
        return value if isinstance(value, str) and value else None

    def id_of(text: str | None) -> int | None:
        if text is None:
            return None
        ids = client.tokenize(text, False)
        return ids[0] if len(ids) == 1 else None

    bos, eos = text_of("bos_token"), text_of("eos_token")
    bos_id, eos_id = id_of(bos), id_of(eos)
    plain, special = client.tokenize("a", False), client.tokenize("a", True)
    adds_bos = len(special) > len(plain) and special[-len(plain):] == plain
    if adds_bos and bos_id is None:  # the token it adds is its BOS; its text from an echo
        bos_id = special[0]
        bos = client.echo([bos_id, *plain], as_ids=False).tokens[0]
    adds_bos = bool(adds_bos and special[0] == bos_id)
    return SpecialTokens(bos_id, bos if bos_id is not None else None, eos_id, eos if eos_id is not None else None,
                         adds_bos)


def load_served(name: str | ServedName, *, concurrency: int | None = None, timeout_s: float | None = None,
                retries: int | None = None) -> ServedModel:
    """Connect to ``served:URL[#MODEL][?OPTIONS]`` (:class:`~biascore.models.served.client.ServedName`; ``timeout_s``
    and ``retries`` override its ``timeout`` / ``retries``), run the conformance check, read the tokenizer facts
    and measure the fingerprint; raises :class:`ServedError` (one line) when any of it fails. Nothing is computed
    or stored."""
    parsed = (name if isinstance(name, ServedName) else ServedName.parse(name)).with_options(timeout_s=timeout_s,
                                                                                             retries=retries)
    client = ServedClient(parsed, concurrency=concurrency or DEFAULT_CONCURRENCY)
    try:
        entry = client.choose_model()
        # at once (a few round trips, the probes in one request); the conformance check's refusal says most
        jobs = [client._pool.submit(check_conformance, client, PROBE), client._pool.submit(_special_tokens, client)]
        conformance, specials = (job.result() for job in jobs)
        probe = measure_probe(client, *conformance.pop("rider"))
    except BaseException:
        client.close()
        raise
    max_len = entry.get("max_model_len")
    max_len = int(max_len) if isinstance(max_len, int) and max_len > 0 else 2048
    label = f"{client.model} (served)"
    config = SimpleNamespace(max_position_embeddings=max_len, architectures=["ServedCausalLM"], hidden_size=0)
    lm = ServedModel(name=label, model=_NoWeights(config, label), tokenizer=None, kind="causal", uncased=False,
                     fingerprint=probe.fingerprint(), device=torch.device("cpu"), source=parsed.base,
                     extra={"dtype": SERVED_DTYPE, "special_tokens": specials, "conformance": conformance,
                            "probe": probe, "compute_device": "server"})
    lm.client, lm._lock, lm._memo, lm._texts = client, threading.Lock(), OrderedDict(), {}
    lm.tokenizer = ServedTokenizer(lm, max_len)
    return lm
