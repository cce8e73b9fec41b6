"""Models behind an OpenAI-compatible completions server (vLLM, SGLang, …), named ``served:http://HOST:PORT/v1``
(the server's only model) or ``served:http://HOST:PORT/v1#NAME`` wherever a model is named, with options after
``?`` (``timeout``, ``retries``, ``api_key_env``: :class:`ServedName`).

Only methods built on prompt log-probabilities run on a served model (bias attribution b(u)/S_JSD, the PLL and
the lm-eval-compatible score, and what derives from their results); the others refuse it in one line.
"""
from biascore.models.served.client import ServedBadAnswer, ServedError, ServedName, ServedUnavailable, is_served
from biascore.models.served.conformance import ConformanceError, check_conformance
from biascore.models.served.model import ServedModel, load_served

__all__ = ["ConformanceError", "ServedBadAnswer", "ServedError", "ServedModel", "ServedName", "ServedUnavailable",
           "check_conformance", "is_served", "load_served"]
