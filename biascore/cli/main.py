"""``biascore`` / ``python -m biascore``: one subcommand per scorer plus ``benchmarks`` and ``data download``.

Common options (every scorer subcommand): ``--data-dir`` (overrides BIASCORE_DATA_DIR),
``--cache-dir`` (overrides BIASCORE_CACHE_DIR). Model options are added by :func:`add_model_args`.
"""
from __future__ import annotations

import argparse
import logging
import sys

from biascore import ENGINE_VERSION
from biascore.cli.args import OneLineParser
from biascore.cli.commands import register_builtin_commands
from biascore.core import settings
from biascore.core.datasets import BenchmarkError
from biascore.core.models import ModelLoadError
from biascore.methods import scorers


def build_parser() -> argparse.ArgumentParser:
    """The ``biascore`` parser: built-in commands, then every registered scorer's subcommands."""
    parser = OneLineParser(prog="biascore",
                           description=f"Bias Attribution Explorer engine {ENGINE_VERSION}")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", required=True)
    register_builtin_commands(sub)
    for entry in scorers():
        entry.register_cli(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    # the directories hold for this command only (main() is also called as a library, e.g. by tests)
    with settings.directories(getattr(args, "data_dir", None), getattr(args, "cache_dir", None)):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except (BenchmarkError, ModelLoadError, ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: completed shards are kept in the cache; run the same command again to resume",
              file=sys.stderr)
        return 130
