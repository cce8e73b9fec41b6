"""``biascore`` / ``python -m biascore``: every registered method's command, ``run <method>``, ``methods``,
plus ``benchmarks``, ``data download``, ``sweep``, ``review`` and ``snapshot``.

Common options (every method command): ``--data-dir`` (overrides BIASCORE_DATA_DIR), ``--cache-dir``
(overrides BIASCORE_CACHE_DIR), the model options of :func:`biascore.models.args.add_model_args`, the method's
input flag and its options (generated from the method's contract: :mod:`biascore.cli.options`).
Errors are one line (``error: …``) with exit code 2; an interrupted run keeps its finished shards.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # idle OpenMP threads sleep, not spin (as app.py; before torch)
from biascore.version import ENGINE_VERSION  # noqa: E402
from biascore.models.args import OneLineParser  # noqa: E402
from biascore.cli.commands import register_builtin_commands  # noqa: E402
from biascore.cli.run import register_method_commands  # noqa: E402
from biascore import settings  # noqa: E402
from biascore.errors import one_line, user_errors  # noqa: E402


def build_parser() -> argparse.ArgumentParser:
    """The ``biascore`` parser: built-in commands, then every registered method's commands."""
    parser = OneLineParser(prog="biascore", description=f"Bias Attribution Explorer engine {ENGINE_VERSION}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log what the engine does (INFO messages)")
    sub = parser.add_subparsers(dest="command", required=True)
    register_builtin_commands(sub)
    register_method_commands(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        parser = build_parser()  # reads the registry: a refused method plugin is one line here
    except user_errors() as exc:
        print(f"error: {one_line(exc, public=False)}", file=sys.stderr)
        return 2
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    return _run(args)


def _run(args: argparse.Namespace) -> int:
    try:  # the directories hold for this command only (main() is also called as a library, e.g. by tests)
        with settings.directories(getattr(args, "data_dir", None), getattr(args, "cache_dir", None)):
            return int(args.func(args) or 0)
    except (*user_errors(), OSError) as exc:  # an unusable folder or file, too (e.g. --cache-dir /dev/null)
        print(f"error: {one_line(exc, public=False)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted: completed shards are kept in the cache; run the same command again to resume",
              file=sys.stderr)
        return 130
