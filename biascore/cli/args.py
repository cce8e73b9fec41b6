"""Command-line options shared by every subcommand (a leaf module: it imports nothing of the CLI or the methods).

``--data-dir`` overrides BIASCORE_DATA_DIR and ``--cache-dir`` BIASCORE_CACHE_DIR for one command; the model
options are those of :func:`biascore.core.models.load_model`.
"""
from __future__ import annotations

import argparse

from biascore.core.models import DEFAULT_MODEL


def add_model_args(p: argparse.ArgumentParser, default: str | None = DEFAULT_MODEL) -> None:
    """The model options every model-based subcommand shares."""
    p.add_argument("--model", default=default, required=default is None,
                   help="hub id, local folder, .gguf file or embedded alias (smollm2-135m, all-minilm-l6-v2, "
                        f"gemma3-270m); default {default}")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model's folder")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    p.add_argument("--dtype", default="auto",
                   help="auto = fp32 on every device (exact; TF32 off); bf16 / fp16 = fast mode, numbers approximate")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow the model's own Python code to run (off unless you turn it on)")


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, help="benchmark data directory (overrides BIASCORE_DATA_DIR)")
    p.add_argument("--cache-dir", default=None, help="result cache directory (overrides BIASCORE_CACHE_DIR)")


def model_from_args(args: argparse.Namespace, **kwargs):
    from biascore.core.models import load_model
    return load_model(args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype,
                      trust_remote_code=args.trust_remote_code, **kwargs)
