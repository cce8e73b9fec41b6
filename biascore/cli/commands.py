"""Subcommands that are not methods: ``benchmarks`` (list), ``data download``, ``sweep …``, ``review …``,
``snapshot export|verify|serve`` and ``compare`` (two models, paired)."""
from __future__ import annotations

import argparse
import sys
from collections import Counter

from biascore.models.args import add_common_args, float_between
from biascore.cli.compare import register_cli as register_compare
from biascore.inputs import download
from biascore import settings
from biascore.inputs.datasets import BenchmarkError, available_benchmarks, load_benchmark
from biascore.progress import Bar
from biascore.review.cli import register_cli as register_review
from biascore.snapshot.cli import register_cli as register_snapshot
from biascore.sweep.cli import register_cli as register_sweep


def register_builtin_commands(sub) -> None:
    p = sub.add_parser("benchmarks", help="list benchmarks with their pair counts and whether they are present")
    add_common_args(p)
    p.set_defaults(func=_cmd_benchmarks)
    _register_download(sub)
    register_snapshot(sub)
    register_sweep(sub)
    register_review(sub)
    register_compare(sub)


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


def _register_download(subparsers) -> None:
    data = subparsers.add_parser("data", help="manage the benchmark data directory")
    data_sub = data.add_subparsers(dest="data_command", required=True)
    p = data_sub.add_parser("download", help="fetch the public benchmark files (listed in data/downloads.json)",
                            description="Fetch every file listed in data/downloads.json into the data directory: "
                                        "verified by SHA-256, written atomically, present files skipped.")
    add_common_args(p)
    p.add_argument("--only", nargs="+", action="extend", metavar="NAME",
                   help="only these: a group (crows_pairs, filipino, labdet, seat, wordlists, usas, bangla, "
                        "reference, multilingual), a benchmark name (crows-tl), a relative path or a glob")
    p.add_argument("--force", action="store_true", help="download again even if the file is present")
    p.add_argument("--no-verify", action="store_true",
                   help="install files whose checksum differs from the manifest (upstream changed them)")
    p.add_argument("--mirror", default=None, metavar="URL",
                   help=f"fetch <URL>/<relative path> instead of the public sources (also {download.MIRROR_ENV})")
    p.add_argument("--timeout", type=float_between(0, float("inf")), default=60.0, metavar="SECONDS",
                   help="seconds to wait for a server (default 60)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_download)


def _cmd_download(args: argparse.Namespace) -> int:
    target = settings.data_dir(args.data_dir)

    def show(outcome: download.Outcome) -> None:
        if outcome.warning or outcome.status not in ("present", "downloaded"):
            print(f"{outcome.status:>11}  {outcome.path}: {outcome.message}", file=sys.stderr)

    with Bar("data download", unit="B", disable=args.quiet) as bar:
        outcomes = download.download_all(target, args.only, force=args.force, verify=not args.no_verify,
                                         mirror=args.mirror, timeout=args.timeout, progress=bar, on_outcome=show)
    counts = Counter(o.status for o in outcomes)
    print(f"{target}: " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    lines = download.licence_lines(outcomes)
    if lines:
        print("Licences of these files (sources and citations: docs/data.md):")
        for line in lines:
            print(f"  {line}")
    failed = [o for o in outcomes if not o.ok]
    for o in failed:
        print(f"error: {o.path}: {o.message}", file=sys.stderr)
    return 1 if failed else 0
