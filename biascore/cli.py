"""``python -m biascore``: one subcommand per scorer plus ``benchmarks`` and ``data download``.

Common options (every scorer subcommand): ``--data-dir`` (overrides BIASCORE_DATA_DIR),
``--cache-dir`` (overrides BIASCORE_CACHE_DIR). Model options are added by :func:`add_model_args`.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

from . import ENGINE_VERSION
from .models import DEFAULT_MODEL


def add_model_args(p: argparse.ArgumentParser, default: str | None = DEFAULT_MODEL) -> None:
    """The model options every model-based subcommand shares."""
    p.add_argument("--model", default=default, required=default is None,
                   help="hub id, local folder, .gguf file or embedded alias (smollm2-135m, all-minilm-l6-v2, "
                        f"gemma3-270m); default {default}")
    p.add_argument("--gguf-file", default=None, help="GGUF file name inside --model's folder")
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"])
    p.add_argument("--dtype", default="auto", help="auto (fp32 on CPU, bf16/fp16 on GPU), fp32, bf16, fp16")
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow the model's own Python code to run (off unless you turn it on)")


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, help="benchmark data directory (overrides BIASCORE_DATA_DIR)")
    p.add_argument("--cache-dir", default=None, help="result cache directory (overrides BIASCORE_CACHE_DIR)")


def model_from_args(args: argparse.Namespace, **kwargs):
    from .models import load_model
    return load_model(args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype,
                      trust_remote_code=args.trust_remote_code, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    from . import scorers
    from .commands import register_builtin_commands

    parser = argparse.ArgumentParser(prog="python -m biascore",
                                     description=f"Bias Attribution Explorer engine {ENGINE_VERSION}")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    register_builtin_commands(sub)
    for mod in scorers.available():
        mod.register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    overrides = {"BIASCORE_DATA_DIR": getattr(args, "data_dir", None), "BIASCORE_CACHE_DIR": getattr(args, "cache_dir", None)}
    saved = {k: os.environ.get(k) for k in overrides}
    try:  # the overrides hold for this command only (main() is also called as a library, e.g. by tests)
        for k, v in overrides.items():
            if v:
                os.environ[k] = os.path.abspath(v)
        return _run(args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _run(args: argparse.Namespace) -> int:
    from .datasets import BenchmarkError
    from .models import ModelLoadError
    try:
        return int(args.func(args) or 0)
    except (BenchmarkError, ModelLoadError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: completed shards are kept in the cache; run the same command again to resume",
              file=sys.stderr)
        return 130
