"""Stand-in models: what a page needs to find a model's cached results when the model is not there.

Every method keys its cache by the model's identity (name, weights fingerprint, kind, dtype, device; for a
causal model also its tokenizer's BOS/EOS facts, which decide the prefix token). The
snapshot's manifest records it per model (:func:`biascore.snapshot.export._model_facts`), and
:func:`standin_handle` turns it into a :class:`~biascore.models.handle.ModelHandle` that has that identity and
refuses to load (:class:`~biascore.settings.ReadOnlySnapshotError`, one line): the runner finds the
exported results with it unchanged, and anything that would run the model says the snapshot has none.
"""
from __future__ import annotations

from biascore.models.handle import ModelHandle
from biascore.models.loading import ModelIdentity
from biascore.models.prefix import SpecialTokens


def standin_handle(name: str, facts: dict) -> ModelHandle:
    """A handle whose cache keys are those of ``name``'s exported results, and which never loads."""
    identity = ModelIdentity(name, str(facts.get("fingerprint") or ""), facts.get("kind") or "encoder",
                             str(facts.get("dtype") or ""), str(facts.get("device") or "cpu"),
                             SpecialTokens.from_meta(facts.get("special_tokens")))
    return ModelHandle.standin(name, identity, f"{name} is not in this read-only snapshot as a model, only as "
                                               "cached results (nothing is computed in a snapshot)")
