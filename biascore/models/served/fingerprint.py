"""The measured fingerprint of a served model: what it computes, not what it is called.

A server's model name says nothing certain about its weights (a fine-tune, another quantisation or a new
revision can be served under the same name), so the cache identity of a served model is its name plus a hash of
the log-probabilities it gives a fixed probe text, rounded to :data:`DECIMALS` decimals (nats) together with the
probe's token ids. Rounding absorbs the last bits that batching and kernels change; any different model
changes many of these numbers by far more. (A value that sits on a rounding boundary could flip between runs
of one server; the fingerprint then differs and the result is recomputed, never mixed.)
"""
from __future__ import annotations

import hashlib
import json

from biascore.models.served.client import ServedClient

#: the probe text (plain English; every token after the first gets a log-probability)
PROBE = "The quick brown fox jumps over the lazy dog. Researchers measured how often the model agreed."
DECIMALS = 1


def measure_fingerprint(client: ServedClient) -> str:
    """sha256 of the server's model name, the probe's tokens and their log-probabilities rounded to DECIMALS."""
    got = client.echo(PROBE)
    values = [None if v is None else round(v, DECIMALS) + 0.0 for v in got.logprobs]
    blob = json.dumps({"model": client.model, "tokens": got.tokens, "logprobs": values}, ensure_ascii=False)
    return hashlib.sha256(blob.encode()).hexdigest()
