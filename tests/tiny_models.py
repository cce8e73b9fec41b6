"""Small models saved to a folder for tests and benchmarks that need a second, causal model on disk."""
from __future__ import annotations

from pathlib import Path


def save_random_causal_lm(folder: str | Path, tokenizer_from: str | Path, seed: int = 0) -> str:
    """A seeded random 2-layer GPT-2 (hidden 32) with ``tokenizer_from``'s tokenizer ([CLS]/[SEP] as bos/eos
    for a WordPiece one), saved to ``folder``; returns the folder."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tok = AutoTokenizer.from_pretrained(str(tokenizer_from))
    if tok.eos_token is None:
        tok.bos_token, tok.eos_token = tok.cls_token, tok.sep_token
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=2, n_head=2,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    GPT2LMHeadModel(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)


def save_random_llama(folder: str | Path, tokenizer_from: str | Path, seed: int = 1) -> str:
    """A seeded random 2-layer Llama (hidden 32, grouped-query attention) with ``tokenizer_from``'s tokenizer,
    saved to ``folder``; returns the folder. With SmolLM2's tokenizer it has BOS <|im_start|> ≠ EOS <|im_end|> and
    adds no BOS, so its published and lm-eval prefix tokens differ."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(str(tokenizer_from))
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    tok.save_pretrained(folder)
    return str(folder)
