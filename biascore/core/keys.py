"""The one rule for a model-based result's cache key.

Every scorer that runs a model keys its cached results with :func:`result_key`: the model identity (name,
weights fingerprint = hub revision or content hash, kind), the numerics (dtype and device type: a bf16 or a
GPU run is never answered from an fp32 CPU run's cache, nor the reverse), the engine version (added by
:meth:`CacheKey.make`) and the scorer's own inputs. A reduced-precision run's key also carries
``approximate=True``, so its cache entry says so (the dashboard reads it from there).
"""
from __future__ import annotations

from typing import Union

from biascore.core.cache import CacheKey
from biascore.core.models import LanguageModel, ModelIdentity

Model = Union[LanguageModel, ModelIdentity]


def model_parts(model: Model) -> dict:
    """The model part of every key: ``model, model_fingerprint, model_kind, dtype, device`` (+ ``approximate``)."""
    ident = model.identity() if isinstance(model, LanguageModel) else model
    parts = {"model": ident.name, "model_fingerprint": ident.fingerprint, "model_kind": ident.kind,
             "dtype": ident.dtype, "device": ident.device}
    if ident.approximate:
        parts["approximate"] = True
    return parts


def result_key(scorer: str, model: Model, **inputs) -> CacheKey:
    """The cache key of ``scorer``'s result for ``model`` on ``inputs`` (benchmark hash, test, options...)."""
    clash = set(inputs) & {"model", "model_fingerprint", "model_kind", "dtype", "device", "approximate",
                           "engine_version"}
    if clash:
        raise ValueError(f"{scorer}: input names {sorted(clash)} are reserved for the model identity")
    return CacheKey.make(scorer, **model_parts(model), **inputs)
