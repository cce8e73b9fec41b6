"""The measured fingerprint of a served model: what it computes, not what it is called.

A server's model name says nothing certain about its weights (a fine-tune, another quantisation or a new
revision can be served under the same name), so the cache identity of a served model is its name plus a hash of
the log-probabilities it gives a fixed probe text, rounded to :data:`DECIMALS` decimals (nats) together with the
probe's token ids. Rounding absorbs the last bits that batching and kernels change; any different model
changes many of these numbers by far more. (A value that sits on a rounding boundary could flip between runs
of one server; the fingerprint then differs and the result is recomputed, never mixed.)

The probe is sent as scoring sends every sentence — a token-id prompt, its echo checked
(:func:`biascore.models.served.client.check_echo`) — so a server that answers token-id prompts differently from
text prompts cannot pass with one form and score with the other. It is measured again after every shard of a
run (:meth:`Probe.drift`): within :data:`DRIFT_TOLERANCE` nats of the first measurement at every token, or the
shard is discarded (a replica behind a load balancer, a weight swap or a server that starts misbehaving mid-run).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

from biascore.models.served.client import ServedClient

#: the probe text (plain English; every token after the first gets a log-probability)
PROBE = "The quick brown fox jumps over the lazy dog. Researchers measured how often the model agreed."
DECIMALS = 1
#: how far (nats) a re-measured probe log-probability may be from the first measurement (batching and kernels
#: move them by ~1e-5; another model, or positions shifted by one, by far more than this)
DRIFT_TOLERANCE = 0.01


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

    def drift(self, other: "Probe") -> float:
        """The largest |Δ log P| between two measurements (inf when the model or the tokens differ)."""
        if (other.model, other.ids) != (self.model, self.ids):
            return float("inf")
        return max((abs(a - b) for a, b in zip(self.logprobs[1:], other.logprobs[1:])), default=0.0)


def measure_probe(client: ServedClient) -> Probe:
    """The probe scored as a token-id prompt (the server's own tokens of it, with its special tokens)."""
    ids = client.tokenize(PROBE, True)
    got = client.echo(ids)
    return Probe(client.model, tuple(ids), tuple(got.logprobs))

