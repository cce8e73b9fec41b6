"""The conformance check a served model passes before anything is scored through it (docs/cli.md, "A model behind
a server").

Popular servers return wrong prompt log-probabilities silently: llama-cpp-python 0.3.36's server reports each
token's from the distribution *after* it (abetlen/llama-cpp-python#1983), llama.cpp's ``llama-server`` none
(ggml-org/llama.cpp#27174). So two probe texts are scored as token-id prompts in one request (the form of every
scoring request; the fingerprint's probe rides in it as a third prompt: one forward pass for the connection), and
the answer must show:

1. **presence** — every prompt token after the first has a log-probability (a number ≤ 0);
2. **alignment** — the predictable tokens of a counting sequence get high probability *at their own position*
   (median P over the second half of the probe ≥ :data:`MIN_MEDIAN_P`; a server off by one in either direction
   gives them the probability of a neighbour instead), and
3. **causality** — two probes that share their first tokens and differ in the last have the same log-probabilities
   over the shared tokens (log P(token i) depends on tokens ≤ i only), while the counting continuation is far more
   probable than an unrelated word.

Refused too: a server that refuses token-id prompts or does not echo the ids it was sent; one without vLLM's
``/tokenize`` after its text-prompt echo is probed (so that wrong log-probabilities are named as such). A server
that takes one prompt per request is used one prompt at a time (``batch`` 1). A failure is one line.
"""
from __future__ import annotations

import math
import os
import statistics

from biascore.models.served.client import (EchoedPrompt, ServedBadAnswer, ServedClient, ServedError, ServedHTTPError,
                                         check_echo)

#: the counting probe and its twin with an unpredictable last word (shared tokens up to "11,")
PROBE = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12"
TWIN = "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, elephant"
#: the median probability the counting tokens of the probe's second half must reach at their own positions
MIN_MEDIAN_P = 0.5
#: how far (nats) the shared tokens' log-probabilities of the two probes may differ (server numerics, batching)
SHARED_TOLERANCE = 0.5
#: how much more probable (nats) the counting continuation must be than "elephant"
MIN_MARGIN = 2.0


class ConformanceError(ServedError):
    """The server's prompt log-probabilities do not have the echo + logprobs semantics; one line."""


def check_conformance(client: ServedClient, rider: str | None = None) -> dict:
    """Run the probes (module docstring); returns what was measured, raises :class:`ConformanceError`. ``rider``: a
    text scored last in the same request, its ids and unchecked echo returned under ``"rider"``."""
    where = f"the server at {client.name.base} ({client.model})"
    try:
        ids = [client.tokenize(text, True) for text in (PROBE, TWIN, *([rider] if rider else []))]
    except ServedHTTPError as exc:
        if exc.status != 404:
            raise ConformanceError(f"{where} refused its /tokenize request: {exc}") from None
        try:
            probe, twin = client.echo_text(PROBE), client.echo_text(TWIN)
        except (ServedHTTPError, ServedBadAnswer) as echo_exc:
            raise ConformanceError(f"{where} refused an echo + logprobs completion request: {echo_exc}") from None
        for got in (probe, twin):
            _check_presence(got, where)
        _check_semantics(probe, twin, where)
        raise ConformanceError(
            f"{where} has no /tokenize endpoint ({exc}): biascore sends prompts as the token ids of the server's own "
            "tokenisation, so the server must offer vLLM's /tokenize (vLLM and SGLang do)") from None
    try:
        (probe, twin, *ridden), batch = _echo_all(client, ids)
    except ServedHTTPError as exc:
        if exc.status in (400, 422):
            raise ConformanceError(
                f"{where} refuses token-id prompts ({exc}): biascore scores exactly the tokens it tokenised, so the "
                "server must take prompts as lists of token ids (vLLM and SGLang do; text-only servers cannot be "
                "used)") from None
        raise ConformanceError(f"{where} refused an echo + logprobs completion request: {exc}") from None
    for got, sent in ((probe, ids[0]), (twin, ids[1])):
        _check_presence(got, where)
        try:
            check_echo(sent, got, where)
        except ServedBadAnswer as exc:
            raise ConformanceError(str(exc)) from None
    return {**_check_semantics(probe, twin, where), "batch": batch, **({"rider": (ids[2], *ridden)} if rider else {})}


def _check_semantics(probe: EchoedPrompt, twin: EchoedPrompt, where: str) -> dict:
    """Alignment and causality of the two probes' log-probabilities, present in both (module docstring); what
    was measured, else :class:`ConformanceError`."""
    values = [v for v in probe.logprobs[1:]]
    tail = values[len(values) // 2:]
    median_p = math.exp(statistics.median(tail))
    if median_p < MIN_MEDIAN_P:
        raise ConformanceError(
            f"{where} returns misaligned prompt log-probabilities: the predictable tokens of a counting sequence get "
            f"median P = {median_p:.3g} at their own positions (a correct server gives them ≥ {MIN_MEDIAN_P}); "
            "llama-cpp-python's server reports each token's log-probability from the distribution after it "
            "(abetlen/llama-cpp-python#1983)")
    shared = len(os.path.commonprefix([probe.tokens, twin.tokens]))
    if shared < 4 or shared >= min(len(probe.tokens), len(twin.tokens)):
        raise ConformanceError(f"{where}: the probes '{PROBE}' and '{TWIN}' tokenise unexpectedly (shared {shared} "
                               "tokens); cannot check the alignment of its log-probabilities")
    drift = max(abs(a - b) for a, b in zip(probe.logprobs[1:shared], twin.logprobs[1:shared]))
    if drift > SHARED_TOLERANCE:
        raise ConformanceError(
            f"{where} returns log-probabilities that depend on later tokens: two prompts with the same first "
            f"{shared} tokens differ there by up to {drift:.3g} nats (position i must hold log P(token i | tokens "
            "before it); this looks shifted by one)")
    margin = probe.logprobs[shared] - twin.logprobs[shared]
    if margin < MIN_MARGIN:
        raise ConformanceError(
            f"{where}: after '1, …, 11,' the continuation ' 12' is only {margin:.3g} nats more probable than "
            "' elephant' in its log-probabilities; they are not the model's log P(token | tokens before it)")
    return {"median_p": median_p, "shared_drift": drift, "margin": margin, "tokens": len(probe.tokens)}


def _echo_all(client: ServedClient, ids: list[list[int]]) -> tuple[list[EchoedPrompt], int]:
    """The probes in one request when the server takes a list of prompts (then ``client.batch`` stays), else one
    at a time (``client.batch`` becomes 1); unchecked (the checks above say what failed)."""
    try:
        return client.echo_many(ids, check=False), client.batch
    except (ServedHTTPError, ServedBadAnswer):
        client.batch = 1
        return [client.echo(one, check=False) for one in ids], 1


def _check_presence(got: EchoedPrompt, where: str) -> None:
    if len(got.tokens) < 8 or len(got.logprobs) != len(got.tokens):
        raise ConformanceError(f"{where} returned {len(got.logprobs)} prompt log-probabilities for "
                               f"{len(got.tokens)} prompt tokens of a probe; it does not echo the prompt's "
                               "log-probabilities")
    missing = sum(1 for v in got.logprobs[1:] if v is None or not math.isfinite(v))
    if missing:
        raise ConformanceError(
            f"{where} returns no log-probability for {missing} of {len(got.tokens) - 1} prompt tokens "
            "(llama.cpp's llama-server returns none, ggml-org/llama.cpp#27174); scores would be meaningless")
    if any(v > 1e-6 for v in got.logprobs[1:]):
        raise ConformanceError(f"{where} returns prompt 'log-probabilities' above 0; they are not log P")
