"""The measured fingerprint of a served model: what it computes, not what it is called (docs/cli.md, "Identity").

A server's model name says nothing certain about its weights, so the cache identity of a served model is its name
plus a hash of the log-probabilities it gives a fixed probe text, rounded to :data:`DECIMALS` decimals (nats),
together with the probe's token ids (a value on a rounding boundary may flip between runs: the result is then
recomputed, never mixed). The probe is sent as scoring sends every sentence, a token-id prompt with its echo
checked (:func:`biascore.models.served.client.check_echo`); its first :data:`PROOF_TOKENS` ids ride in every scoring
request as its last prompt (:meth:`biascore.models.served.model.ServedModel._prove`), within :data:`DRIFT_TOLERANCE`
nats of the first measurement at every token, or nothing of that request is used.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from biascore.models.served.client import EchoedPrompt, ServedClient, check_echo

#: the probe text (plain English; every token after the first gets a log-probability)
PROBE = "The quick brown fox jumps over the lazy dog. Researchers measured how often the model agreed."
DECIMALS = 1
#: how far (nats) the probe's log-probability in a scoring request may be from the first measurement (batching
#: and kernels move them by ~1e-5 in float32; another model, or positions shifted by one, by far more than this)
DRIFT_TOLERANCE = 0.01
#: the probe's first ids, each scoring request's proof (enough: bench/results/served_proof_length.md, docs/cli.md)
PROOF_TOKENS = 8


@dataclass(frozen=True)
class Probe:
    """The probe's token ids and the server's log-probabilities of them (the first token's is None)."""

    model: str
    ids: tuple[int, ...]
    logprobs: tuple[float | None, ...]

    def fingerprint(self) -> str:
        """sha256 of the model name, the probe's ids and their log-probabilities rounded to DECIMALS."""
        values = [None if v is None else round(v, DECIMALS) + 0.0 for v in self.logprobs[1:]]
        blob = json.dumps({"model": self.model, "ids": list(self.ids), "logprobs": values}, ensure_ascii=False)
        return hashlib.sha256(blob.encode()).hexdigest()


def measure_probe(client: ServedClient, ids: list[int], got: EchoedPrompt) -> Probe:
    """The probe's answer (its ids with special tokens, sent beside the conformance check's probes), checked."""
    check_echo(ids, got, f"the server at {client.name.base}")
    return Probe(client.model, tuple(ids), tuple(got.logprobs))

