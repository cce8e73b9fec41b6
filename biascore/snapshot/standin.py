"""Identity-only models: what a page needs to find a model's cached results when the model is not there.

Every scorer keys its cache by facts about the model (name, weights fingerprint, kind, dtype, device and,
for LABDet, the neutral filler = the tokenizer's mask token; for a causal model's attribution results, its
tokenizer's BOS/EOS facts, which decide the prefix token). The snapshot's manifest records them per model
(:func:`biascore.snapshot.export._model_facts`), and :func:`identity_model` turns them into a
:class:`~biascore.core.models.LanguageModel` without weights: the scorers' entry points find the cached
results with it unchanged. Anything that would run the model (its ``model`` or its tokenizer beyond the mask
token) raises :class:`~biascore.core.settings.ReadOnlySnapshotError` with a one-line message.
"""
from __future__ import annotations

import torch

from biascore.core.models import LanguageModel
from biascore.core.prefix import SpecialTokens
from biascore.core.settings import ReadOnlySnapshotError


class _NotInSnapshot:
    """Stands for a model's network or tokenizer: every use says the snapshot has no model to run."""

    def __init__(self, model: str, part: str, **facts):
        self._message = (f"{model} is not in this read-only snapshot as a model, only as cached results; "
                         f"this needs its {part} (nothing is computed in a snapshot)")
        self.__dict__.update(facts)

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise ReadOnlySnapshotError(self._message)

    def __call__(self, *args, **kwargs):
        raise ReadOnlySnapshotError(self._message)


def identity_model(name: str, facts: dict) -> LanguageModel:
    """A weightless :class:`LanguageModel` whose cache keys are those of ``name``'s exported results."""
    filler = facts.get("neutral_filler")
    return LanguageModel(
        name=name, model=_NotInSnapshot(name, "weights"),
        tokenizer=_NotInSnapshot(name, "tokenizer", mask_token=filler or None),
        kind=facts.get("kind") or "encoder", uncased=False, fingerprint=str(facts.get("fingerprint") or ""),
        device=torch.device(facts.get("device") or "cpu"), source="offline snapshot",
        extra={"dtype": facts.get("dtype") or "", "snapshot": True,
               **({"special_tokens": SpecialTokens.from_meta(facts["special_tokens"])}
                  if facts.get("special_tokens") else {})})
