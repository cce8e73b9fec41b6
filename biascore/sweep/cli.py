"""``python -m biascore sweep``: every model × benchmark × metric, locally or on Ray, then the Overview table.

    python -m biascore sweep --models A B --benchmarks demo crows-en-gso --metrics attribution pll
    python -m biascore sweep --spec sweep.yaml --ray auto       # the Ray cluster this node belongs to

More in docs/sweeps.md. Exit code 0 when every task succeeded, 1 when any failed (each printed by name with its
error), 2 for an unusable spec.
"""
from __future__ import annotations

import argparse
import sys

from biascore import settings
from biascore.models.args import add_common_args, add_reach_args, int_at_least
from biascore.sweep.local import run_local
from biascore.sweep.pairwise import format_pairwise, pairwise_table
from biascore.sweep.ray_runner import run_ray
from biascore.sweep.report import format_report
from biascore.sweep.spec import (INPUT_FIELDS, REACH_OPTIONS, build_spec, input_field, input_kinds, known_metrics,
                                 parse_option_args)
from biascore.sweep.status import SweepStatus

SUMMARY = "score many models × benchmarks × metrics (cached, resumable; locally or on a Ray cluster)"


def register_cli(sub) -> None:
    """Add the ``sweep`` subcommand to ``sub`` (an argparse subparsers object)."""
    metrics = list(known_metrics())
    p = sub.add_parser("sweep", help=SUMMARY, description=SUMMARY + ". Options override --spec's values.")
    p.add_argument("--spec", default=None, metavar="FILE",
                   help="YAML or TOML file with the sweep (keys as these options)")
    p.add_argument("--models", nargs="+", default=None, metavar="MODEL",
                   help="hub ids, local folders, .gguf files, embedded aliases or served models "
                        "(served:http://HOST:PORT/v1[#NAME]); per-model load options: model entries in --spec")
    p.add_argument("--metrics", nargs="+", default=None, choices=metrics, metavar="METRIC",
                   help=f"registered methods: {', '.join(metrics)} (default attribution pll)")
    for kind in input_kinds().values():  # one flag per input kind a registered method reads
        field = input_field(kind.name)
        readers = ", ".join(m for m, k in known_metrics().items() if k == kind.name)
        p.add_argument("--" + field.replace("_", "-"), dest=field, nargs="+", default=None,
                       metavar="NAME", help=f"inputs of {readers}: {kind.help}"
                       + (f" (default {kind.default})" if not kind.selectable else ""))
    p.add_argument("--options", nargs="+", action="extend", default=None, metavar="METHOD.OPTION=VALUE",
                   help="any method's options as `biascore run <method>` takes them (see its --help), e.g. "
                        "labdet.n_boot=500 seat.seed=3 ceat.segment_lengths=9,25; lists comma-separated; "
                        "attribution's also hold for pll and lmeval")
    p.add_argument("--limit", type=int_at_least(1), default=None, metavar="N",
                   help="score only the first N pairs of each benchmark (N ≥ 1)")
    p.add_argument("--device", default=None, choices=["auto", "cpu", "cuda", "mps"],
                   help="where the models run (default auto: a GPU when there is one)")
    p.add_argument("--dtype", default=None, metavar="DTYPE",
                   help="auto = fp32 on every device (exact); bf16 / fp16 = fast mode, numbers approximate "
                        "(default auto)")
    p.add_argument("--trust-remote-code", action="store_true", default=None,
                   help="allow the models' own Python code to run (off unless you turn it on)")
    add_reach_args(p, scope="; every model loaded in this process (a spec file's model entry may set its own)")
    p.add_argument("--ray", nargs="?", const="", default=None, metavar="ADDRESS",
                   help="run on Ray: without ADDRESS a local instance, else a cluster (auto, ray://host:10001)")
    p.add_argument("--ray-cpus", type=int_at_least(1), default=None, metavar="N", help="CPUs of a local Ray instance (default: all)")
    p.add_argument("--retries", type=int_at_least(0), default=None, metavar="N",
                   help="Ray: times a task is retried after its worker died (default 2)")
    add_common_args(p)
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    spec = build_spec(args.spec, models=args.models, metrics=args.metrics, inputs=_input_args(args),
                      options=parse_option_args(args.options or []), limit=args.limit, device=args.device,
                      dtype=args.dtype, trust_remote_code=args.trust_remote_code, retries=args.retries,
                      **{f: getattr(args, f) for f in INPUT_FIELDS}, **{f: getattr(args, f) for f in REACH_OPTIONS})
    tasks = spec.tasks()
    cache_dir = str(settings.cache_dir(args.cache_dir))
    data_dir = str(settings.data_dir(args.data_dir))
    executor = "local" if args.ray is None else f"ray {args.ray or '(local instance)'}"
    status = SweepStatus.create(cache_dir, [t.name for t in tasks], executor)
    print(f"sweep {status.id}: {len(tasks)} task(s) on {executor}; cache {cache_dir}", file=sys.stderr)
    common = dict(cache_dir=cache_dir, data_dir=data_dir, limit=spec.limit, method_options=spec.method_options(), status=status)
    try:
        if args.ray is None:
            results = run_local(tasks, **common)
        else:
            results = run_ray(tasks, address=args.ray or None, retries=spec.retries, num_cpus=args.ray_cpus, **common)
    except BaseException:
        status.finish(outcome="interrupted")
        raise
    status.finish(outcome="complete")
    table, notes = pairwise_table(results, cache_dir=common["cache_dir"], data_dir=common["data_dir"],
                                  limit=common["limit"], method_options=common["method_options"])
    print(format_report(results, pairwise=format_pairwise(table, notes)))
    return 0 if all(r.ok for r in results) else 1


def _input_args(args: argparse.Namespace) -> dict[str, list[str]]:
    """The inputs given by the generated ``--<kind>-inputs`` flags (the dedicated ones are fields of their own)."""
    out = {}
    for kind in input_kinds():
        field = input_field(kind)
        if field not in INPUT_FIELDS and getattr(args, field, None):
            out[kind] = list(getattr(args, field))
    return out

