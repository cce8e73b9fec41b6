"""Identity-only models: what a page needs to find a model's cached results when the model is not loaded.

Every scorer keys its cache by facts about the model (name, weights fingerprint, kind, dtype, device and,
for LABDet, the neutral filler = the tokenizer's mask token). The snapshot's manifest records them per model
(:func:`biascore.snapshot.export._model_facts`), and :func:`identity_model` turns them into a
:class:`~biascore.core.models.LanguageModel` without weights: the scorers' entry points find the cached
results with it unchanged. Anything that would run the model (its ``model`` or its tokenizer beyond the mask
token) raises :class:`~biascore.core.settings.ReadOnlySnapshotError` with a one-line message.

The same stand-in serves a live dashboard that has not loaded a model yet (:func:`unloaded_model`: the facts
come from the model's files, :func:`biascore.core.models.model_identity`): a page reads cached results through
it, and running it raises :class:`ModelNotLoadedError`, upon which the page offers to load and compute.
"""
from __future__ import annotations

import torch

from biascore.core.models import LanguageModel, ModelIdentity
from biascore.core.settings import ReadOnlySnapshotError


class ModelNotLoadedError(RuntimeError):
    """A weightless stand-in of a model that is not loaded was asked to run it (the result is not cached)."""


class _Absent:
    """Stands for a model's network or tokenizer: every use raises ``error(message)``."""

    def __init__(self, error: type[Exception], message: str, **facts):
        self._error, self._message = error, message
        self.__dict__.update(facts)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise self._error(self._message)

    def __call__(self, *args, **kwargs):
        raise self._error(self._message)


def _stand_in(name: str, facts: dict, error: type[Exception], message: str, source: str) -> LanguageModel:
    filler = facts.get("neutral_filler")
    return LanguageModel(
        name=name, model=_Absent(error, message.replace("{part}", "weights")),
        tokenizer=_Absent(error, message.replace("{part}", "tokenizer"), mask_token=filler or None),
        kind=facts.get("kind") or "encoder", uncased=False, fingerprint=str(facts.get("fingerprint") or ""),
        device=torch.device(facts.get("device") or "cpu"), source=source,
        extra={"dtype": facts.get("dtype") or "", "snapshot": source == "offline snapshot"})


def identity_model(name: str, facts: dict) -> LanguageModel:
    """A weightless :class:`LanguageModel` whose cache keys are those of ``name``'s exported results."""
    return _stand_in(name, facts, ReadOnlySnapshotError,
                     f"{name} is not in this read-only snapshot as a model, only as cached results; this needs its "
                     "{part} (nothing is computed in a snapshot)", "offline snapshot")


def unloaded_model(identity: ModelIdentity) -> LanguageModel:
    """A weightless :class:`LanguageModel` with ``identity`` (from the model's files, nothing loaded): it finds
    cached results; running it raises :class:`ModelNotLoadedError`."""
    facts = {"fingerprint": identity.fingerprint, "kind": identity.kind, "dtype": identity.dtype,
             "device": identity.device}
    return _stand_in(identity.name, facts, ModelNotLoadedError,
                     f"{identity.name} is not loaded (only its cached results are read); this needs its {{part}}",
                     "not loaded")
