"""Subcommands that are not scorers: ``benchmarks`` (list), ``data download``, ``sweep …`` and ``review …``."""
from __future__ import annotations

import argparse

from biascore.cli.args import add_common_args
from biascore.core import download
from biascore.core.datasets import BenchmarkError, available_benchmarks, load_benchmark
from biascore.review.cli import register_cli as register_review
from biascore.sweep.cli import register_cli as register_sweep


def register_builtin_commands(sub) -> None:
    p = sub.add_parser("benchmarks", help="list benchmarks with their pair counts and whether they are present")
    add_common_args(p)
    p.set_defaults(func=_cmd_benchmarks)
    download.register_cli(sub)
    register_sweep(sub)
    register_review(sub)


def _cmd_benchmarks(args: argparse.Namespace) -> int:
    print(f"{'benchmark':<14} {'pairs':>6}  {'language':<8} description")
    for b in available_benchmarks(args.data_dir):
        if b["available"]:
            try:
                bm = load_benchmark(b["name"], args.data_dir)
                count = str(len(bm))
            except BenchmarkError as exc:
                count = "error"
                b["description"] += f" [{exc}]"
        else:
            count = "—"
            b["description"] += " [not downloaded: python -m biascore data download]"
        print(f"{b['name']:<14} {count:>6}  {b['language']:<8} {b['description']}")
    return 0
