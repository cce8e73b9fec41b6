"""The one rule for a model-based result's cache key (:func:`result_key`): the model identity (name, weights
fingerprint, kind), the numerics (dtype and device type: a bf16 or GPU run never answers for an fp32 CPU run, nor
the reverse), the engine version (:meth:`CacheKey.make`) and the scorer's own inputs. A reduced-precision run's key
carries ``approximate=True`` and a quantized model's its ``weights`` (``int8`` / ``int4``). A split model's placement
is not keyed (:mod:`biascore.models.placement`): it is recorded in the result's ``info``.
"""
from __future__ import annotations

from biascore.store.cache import CacheKey


def model_parts(model) -> dict:
    """The model part of every key: ``model, model_fingerprint, model_kind, dtype, device`` (+ ``weights``,
    ``approximate``)."""
    ident = model.identity() if callable(getattr(model, "identity", None)) else model  # a loaded model, or its identity
    parts = {"model": ident.name, "model_fingerprint": ident.fingerprint, "model_kind": ident.kind,
             "dtype": ident.dtype, "device": ident.device}
    if ident.weights:  # quantized weights: never answered from (or answering for) the model's own weights
        parts["weights"] = ident.weights
        if ident.weights_scheme:  # how it computes, where that changed (int4: float32, not CPU bf16)
            parts["weights_scheme"] = ident.weights_scheme
    if ident.approximate:
        parts["approximate"] = True
    return parts


def result_key(scorer: str, model, **inputs) -> CacheKey:
    """The cache key of ``scorer``'s result for ``model`` on ``inputs`` (benchmark hash, test, options...)."""
    clash = set(inputs) & {"model", "model_fingerprint", "model_kind", "dtype", "device", "approximate",
                           "weights", "weights_scheme", "engine_version"}
    if clash:
        raise ValueError(f"{scorer}: input names {sorted(clash)} are reserved for the model identity")
    return CacheKey.make(scorer, **model_parts(model), **inputs)
