"""``biascore compare --models A B --benchmark NAME``: model B against model A, paired over the pairs both scored.

Each model is scored (or answered from the cache) as ``biascore score`` scores it, then
:func:`biascore.methods.attribution.compare.compare_results` compares the two results (docs/scores.md, "Comparing
two models"); ``--out`` writes the summary table (CSV or parquet). Either side may be quantized, split or served:
the method line, the notes and ``precision_a`` / ``precision_b`` say which side is approximate or served.

``biascore languages --set NAME --model M``: an aligned set scored in its languages (one progress bar), B per
language with its interval; ``--pair ID`` that source pair in every language; ``--compare A B`` two languages paired
over their common source pairs as ``compare`` pairs two models, with the pairs whose verdicts differ.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from biascore.models.args import (add_common_args, add_model_args, add_running_args, float_between, int_at_least,
                                  spec_from_args)
from biascore.models.handle import ModelHandle
from biascore.contract.presentation import precision_lines
from biascore.contract.result import write_frame
from biascore.runs.runner import run
from biascore.methods import get
from biascore.methods.attribution.compare import compare_results
from biascore.methods.attribution.jsd import JSD_VARIANTS
from biascore.progress import Bar
from biascore.models.prefix import PREFIX_CONVENTIONS
from biascore.models.quantize import QUANTIZE_CHOICES


def register_cli(sub) -> None:
    p = sub.add_parser("compare", help="paired comparison of two models on one pair benchmark (B, PLL, lm-eval)",
                       description="Model B against model A on the pairs both scored: score difference B − A with "
                                   "a paired bootstrap interval, McNemar's exact test on the discordant verdicts, "
                                   "Holm-adjusted across bias types, and the mean paired S_JSD difference.")
    p.add_argument("--models", nargs=2, required=True, metavar=("A", "B"),
                   help="the two models (hub id, local folder, .gguf file or embedded alias); deltas are B − A")
    p.add_argument("--benchmark", default="demo", metavar="NAME", help="pair benchmark name or CSV path (default demo)")
    p.add_argument("--limit", type=int_at_least(1), default=None, metavar="N", help="only the first N pairs")
    p.add_argument("--n-boot", type=int_at_least(100), default=2000, metavar="N",
                   help="bootstrap resamples, at least 100 (default 2000)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the bootstrap (default 0)")
    p.add_argument("--level", type=float_between(0, 1), default=0.95, metavar="X",
                   help="confidence level of the intervals, between 0 and 1 (default 0.95)")
    p.add_argument("--prefix", default=None, choices=PREFIX_CONVENTIONS,
                   help="causal LMs: the token in front of each sentence (default published); lmeval also "
                        "compares the lm-eval-compatible score")
    p.add_argument("--quantize", nargs="+", default=None, metavar="Q",
                   help="quantized weights: int8 or int4 for both models, or one value per model (A B; none = the "
                        "model's own weights), e.g. --quantize none int8 compares a model with its int8 weights; "
                        "the output names the side that is approximate")
    add_running_args(p, scope="; both models", quantize=False)
    p.add_argument("--out", default=None, metavar="FILE", help="write the summary table to this .csv or .parquet file")
    add_common_args(p)
    p.set_defaults(func=run_compare)
    p = sub.add_parser("languages", help="an aligned set across its languages: B per language, one source pair in "
                                         "every language, two languages compared pair by pair")
    p.add_argument("--set", required=True, dest="aligned_set", metavar="NAME", help="aligned set (sjsd-gender, "
                   "crows-nl-en-fr, demo-aligned)")
    p.add_argument("--languages", nargs="+", default=None, metavar="LANG", help="these languages only (default all)")
    p.add_argument("--pair", default=None, metavar="ID", help="show this source pair (alignment key) in every language")
    p.add_argument("--compare", nargs=2, default=None, metavar=("A", "B"), help="two languages, paired: B − A")
    p.add_argument("--jsd", default="reference", choices=JSD_VARIANTS, help="the JSD variant (paper: the S_JSD "
                   "paper's distance; default reference)")
    add_model_args(p)  # the model for every language
    add_common_args(p)
    p.set_defaults(func=run_languages)


def per_model_quantize(values: list[str] | None) -> tuple[str | None, str | None]:
    """``--quantize``'s values as (A's, B's): one value holds for both, two are A's and B's; ``none`` = the model's
    own weights. A bad value or count is a one-line ``ValueError``."""
    values = list(values or ["none"])
    if len(values) > 2:
        raise ValueError(f"--quantize takes one value (both models) or two (A B), not {len(values)}")
    for v in values:
        if v not in ("none", *QUANTIZE_CHOICES):
            raise ValueError(f"--quantize: {v!r} is not one of none, {', '.join(QUANTIZE_CHOICES)}")
    a, b = (values * 2)[:2]
    return (None if a == "none" else a), (None if b == "none" else b)


def run_compare(args: argparse.Namespace) -> int:
    method = get("attribution")
    options = method.Options.build(**({"prefix": args.prefix} if args.prefix else {}))
    handles = [ModelHandle(spec_from_args(args, name, quantize=quantize))
               for name, quantize in zip(args.models, per_model_quantize(args.quantize))]  # checked before any load
    results = []
    for handle in handles:
        with Bar(f"{handle.label} on {args.benchmark}", unit="pair") as bar:
            results.append(run(method, handle, args.benchmark, options, limit=args.limit, progress=bar,
                               waiting=bar.waiting))
    comparison = compare_results(*results, n_boot=args.n_boot, seed=args.seed, level=args.level)
    print("\n".join(comparison.report_lines() + precision_lines(results)))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        summary = comparison.summary()
        write_frame(summary, str(args.out))
        print(f"wrote {len(summary)} rows to {args.out}")
    return 0


def run_languages(args: argparse.Namespace) -> int:
    from biascore.api import across_languages
    out = across_languages(args.aligned_set, ModelHandle(spec_from_args(args)), args.languages, jsd=args.jsd,
                           data_dir=args.data_dir, cache_dir=args.cache_dir)
    lines = [f"B per language ({args.aligned_set}, {args.model}, --jsd {args.jsd}; 95% Wilson interval)",
             out.summary().to_string(index=False, float_format=lambda x: f"{x:.2f}")]
    if args.pair is not None:
        pair = out.pair(args.pair).drop(columns="row", errors="ignore")
        lines += ["", f"source pair {args.pair}", pair.to_string(index=False, float_format=lambda x: f"{x:.5f}")]
    if args.compare:
        comparison = out.compare(*args.compare)
        lines += ["", *comparison.report_lines(), "", "pairs whose verdicts differ (pair_id = source id):",
                  comparison.discordant.to_string(index=False, float_format=lambda x: f"{x:.5f}")]
    print("\n".join(lines + [f"note: {n}" for n in out.notes]))
    return 0
