"""lm_scoring's head-only-at-scored-positions path against the model's own full forward.

Every architecture in ``lm_scoring._HEADS`` is built as a tiny random model and must give the logits its
full ``forward`` gives at the scored positions; an unrecognised architecture takes the full forward (the same
computation: bit-identical); and scoring leaves the shared model exactly as it was (no hooks, no mode switch).
The head-only path multiplies other matrix shapes than the full forward, so the two agree within the
reproducibility contract (docs/reproducibility.md), not bit for bit.
"""
from __future__ import annotations

import pytest
import torch
import transformers

from biascore.models import lm_scoring
from biascore.models.loading import LanguageModel
from reproducibility_contract import logp_tolerance
from conftest import MASKED_LMS

pytestmark = pytest.mark.exactness

SMALL = dict(vocab_size=101, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
             intermediate_size=48, max_position_embeddings=64, head_dim=8, pad_token_id=0)
RENAMED = {  # configs that spell the sizes differently
    "GPT2LMHeadModel": dict(vocab_size=101, n_embd=32, n_layer=2, n_head=4, n_positions=64),
    "DistilBertForMaskedLM": dict(vocab_size=101, dim=32, n_layers=2, n_heads=4, hidden_dim=48,
                                  max_position_embeddings=64, pad_token_id=0),
}
SOFTCAP = 0.5  # small enough that leaving the capping out changes the logits


def _tiny(name: str) -> torch.nn.Module:
    cls = getattr(transformers, name)
    kwargs = RENAMED.get(name, SMALL)
    config = cls.config_class(**kwargs)
    if hasattr(config, "final_logit_softcapping"):
        config.final_logit_softcapping = SOFTCAP
    torch.manual_seed(0)
    return cls(config).eval()


def _wrap(model: torch.nn.Module) -> LanguageModel:
    return LanguageModel(name="tiny", model=model, tokenizer=None, kind="masked", uncased=False, fingerprint="x",
                         device=torch.device("cpu"), source="")


def _batch():
    torch.manual_seed(1)
    ids = torch.randint(3, 101, (3, 9))
    att = torch.ones_like(ids)
    att[1, 6:] = 0  # a padded row
    ids[1, 6:] = 0
    rows = torch.tensor([0, 0, 1, 1, 2, 2, 2])
    cols = torch.tensor([0, 8, 2, 5, 1, 4, 7])
    return ids, att, rows, cols


@pytest.mark.parametrize("name", sorted(lm_scoring._HEADS))
def test_recognised_head_matches_full_forward(name):
    model = _tiny(name)
    lm = _wrap(model)
    assert lm_scoring.lm_head_of(model) is not None
    ids, att, rows, cols = _batch()
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=att).logits[rows, cols]
        ours = lm_scoring.position_logits(lm, ids, att, rows, cols)
    torch.testing.assert_close(ours, full, rtol=1e-5, atol=1e-5)
    if getattr(model.config, "final_logit_softcapping", None) is not None:
        assert full.abs().max() < SOFTCAP  # the capping is in effect, so leaving it out would be caught
        with torch.inference_mode():
            raw = model.lm_head(model.base_model(input_ids=ids, attention_mask=att)[0][rows, cols])
        assert not torch.allclose(raw, full, atol=1e-3)


def test_unrecognised_architecture_takes_the_full_forward():
    class CustomHeadModel(transformers.BertForMaskedLM):  # a forward we know nothing about
        def forward(self, *args, **kwargs):
            out = super().forward(*args, **kwargs)
            out.logits = out.logits * 2.0
            return out

    config = transformers.BertConfig(**{k: v for k, v in SMALL.items() if k not in ("num_key_value_heads", "head_dim")})
    torch.manual_seed(0)
    model = CustomHeadModel(config).eval()
    assert lm_scoring.lm_head_of(model) is None
    ids, att, rows, cols = _batch()
    with torch.inference_mode():
        full = model(input_ids=ids, attention_mask=att).logits[rows, cols]
        ours = lm_scoring.position_logits(_wrap(model), ids, att, rows, cols)
    assert torch.equal(ours, full)


@pytest.mark.parametrize("masked", MASKED_LMS)
def test_tiny_mlm_bitwise_and_model_untouched(masked, request):
    """On a real masked LM (the hermetic random one; the tiny trained one where ../shared is present): every
    vocabulary log-probability at the scored positions within the contract's bound of the full forward's
    (|Δ log P| ≤ ε·min(1, |log P|); the head runs on [1, K, H] instead of [B, T, H], so its sums are added in
    another order and the bits may differ), and the shared model is left as it was."""
    lm = request.getfixturevalue(masked)
    tok = lm.tokenizer
    seqs = [tok(t)["input_ids"] for t in ["the nurse said she was tired .", "poor people are lazy ."]]
    ids, att = lm_scoring.pad_batch(seqs, tok.pad_token_id, lm.device)
    rows, cols = torch.tensor([0, 0, 1]), torch.tensor([1, 3, 2])
    model = lm.model
    before = (model.training, model.config._attn_implementation, dict(model._forward_hooks),
              [dict(m._forward_hooks) | dict(m._forward_pre_hooks) for m in model.modules()])
    with torch.inference_mode():
        full = torch.log_softmax(model(input_ids=ids, attention_mask=att).logits[rows, cols].double(), -1)
        ours = torch.log_softmax(lm_scoring.position_logits(lm, ids, att, rows, cols).double(), -1)
    deviation = (ours - full).abs().numpy()
    bound = logp_tolerance(full.numpy())
    worst = (deviation / bound).max()
    assert (deviation <= bound).all(), f"max |Δ log P| {deviation.max():.2e}, worst deviation / bound {worst:.2f}"
    after = (model.training, model.config._attn_implementation, dict(model._forward_hooks),
             [dict(m._forward_hooks) | dict(m._forward_pre_hooks) for m in model.modules()])
    assert after == before
