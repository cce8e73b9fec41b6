"""``python -m biascore review …``: assign pairs to reviewers, progress, export reviews (CSV or a dataset folder),
agreement, disagreements, adjudicate, corrected benchmark, B before/after corrections. Every subcommand takes
``--db`` (default ``BIASCORE_REVIEW_DB`` or ``<cache>/reviews.sqlite``); only ``assign`` and ``adjudicate`` write
to it. The command line is the server's side: it shows every review (no blindness, see docs/review.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from biascore.inputs.datasets import load_benchmark
from biascore.models.args import add_common_args, add_model_args, spec_from_args
from biascore.models.handle import open_model
from biascore.review.agreement import agreement, confusion, disagreements, reviewer_overview
from biascore.review.corrections import (before_after, corrected_frame, decision_counts, final_decisions,
                                         reviewable_pairs)
from biascore.review.export import export_dataset
from biascore.review.store import STATUSES, ReviewStore, reviews_csv


def register_cli(sub) -> None:
    review = sub.add_parser("review", help="translation reviews: export, agreement, adjudication, corrected benchmark")
    rsub = review.add_subparsers(dest="review_command", required=True)

    def parser(name: str, help_: str, *, benchmark_required: bool = True) -> argparse.ArgumentParser:
        p = rsub.add_parser(name, help=help_, description=help_)
        add_common_args(p)
        p.add_argument("--db", default=None, metavar="FILE", help="review database (default BIASCORE_REVIEW_DB or "
                                                  "<cache>/reviews.sqlite)")
        p.add_argument("--benchmark", default=None if not benchmark_required else "crows-tl", metavar="NAME",
                       help="the reviewed benchmark (default crows-tl)" if benchmark_required
                       else "only this benchmark's reviews (default: all)")
        return p

    p = parser("assign", "split the benchmark's pairs among reviewers, each pair to --overlap of them (rerun with "
                         "a reviewer added or removed: only unstarted pairs move)")
    p.add_argument("--reviewers", nargs="+", required=True, metavar="NAME", help="reviewer names as they type them on the page")
    p.add_argument("--overlap", type=int, default=2, metavar="N", help="reviewers per pair (default 2)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of the tie-breaking order (default 0)")
    p.add_argument("--by", default="", metavar="NAME", help="who assigns (recorded)")
    p.set_defaults(func=_cmd_assign)

    p = parser("progress", "per reviewer: pairs assigned, reviewed, remaining, and agreement with the others")
    p.set_defaults(func=_cmd_progress)

    p = parser("export", "write every review as CSV (tags joined by '; '), or with --format dataset the reviews and "
               "the corrected benchmark as a folder of parquet files with a dataset card", benchmark_required=False)
    p.add_argument("--out", required=True, metavar="PATH", help="CSV file (--format csv) or new folder (--format dataset)")
    p.add_argument("--format", choices=("csv", "dataset"), default="csv",
                   help="csv (default) or dataset (needs --benchmark; default crows-tl)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="seed of α's bootstrap in the dataset card (default 0)")
    p.set_defaults(func=_cmd_export)

    p = parser("agreement", "Krippendorff's α with a bootstrap interval, Cohen's κ (two reviewers) or Fleiss' κ "
                            "(more) on the status, overall and per bias type; the status confusion table")
    p.add_argument("--out", default=None, metavar="FILE", help="also write the table as CSV")
    p.add_argument("--resamples", type=int, default=1000, metavar="N", help="bootstrap resamples for α's interval (default 1000)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="bootstrap seed (default 0)")
    p.set_defaults(func=_cmd_agreement)

    p = parser("disagreements", "pairs whose reviewers disagree, with the adjudicated decision if any")
    p.set_defaults(func=_cmd_disagreements)

    p = parser("adjudicate", "store the final decision for one pair")
    p.add_argument("--pair", type=int, required=True, metavar="ID", help="the pair's pair_id")
    p.add_argument("--by", required=True, metavar="NAME", help="the adjudicator's name")
    p.add_argument("--status", required=True, choices=STATUSES, help="the final status of the pair")
    p.add_argument("--more", default="", metavar="TEXT", help="corrected more-biased sentence (status 'needs correction')")
    p.add_argument("--less", default="", metavar="TEXT", help="corrected less-biased sentence (status 'needs correction')")
    p.add_argument("--comment", default="", metavar="TEXT", help="a note kept with the decision (default: none)")
    p.set_defaults(func=_cmd_adjudicate)

    p = parser("corrected", "write the corrected benchmark CSV (scored by `score --benchmark FILE`)")
    p.add_argument("--out", required=True, metavar="FILE", help="CSV file to write")
    p.set_defaults(func=_cmd_corrected)

    p = parser("compare", "B of one model before and after the corrections (both runs cached)")
    add_model_args(p)
    p.set_defaults(func=_cmd_compare)


def _existing_store(args: argparse.Namespace):
    store = ReviewStore(args.db)
    if not store.exists():
        raise FileNotFoundError(f"no review database at {store.path} (nothing has been saved there yet)")
    return store


def _reviewed(args: argparse.Namespace):
    """(store, benchmark, reviewable pairs, reviews, adjudications) for a subcommand that needs a benchmark."""
    store = _existing_store(args)
    bm = load_benchmark(args.benchmark, args.data_dir)
    return store, bm, reviewable_pairs(bm), store.reviews(bm.name), store.adjudications(bm.name)


def _print(frame: pd.DataFrame) -> None:
    print(frame.to_string(index=False, float_format=lambda x: f"{x:.3f}") if len(frame) else "(none)")


def _cmd_export(args: argparse.Namespace) -> int:
    if args.format == "dataset":
        return _cmd_export_dataset(args)
    reviews = _existing_store(args).reviews(args.benchmark)
    Path(args.out).write_bytes(reviews_csv(reviews))
    print(f"wrote {len(reviews)} reviews to {args.out}")
    return 0


def _cmd_export_dataset(args: argparse.Namespace) -> int:
    args.benchmark = args.benchmark or "crows-tl"
    _, bm, _, reviews, adjudications = _reviewed(args)
    done = export_dataset(args.out, bm, reviews, adjudications, seed=args.seed)
    print(f"wrote {done.path}: " + ", ".join(f"{name} {n} rows" for name, n in done.rows.items())
          + "; final decisions: " + ", ".join(f"{k}: {v}" for k, v in done.counts.items()))
    return 0


def _cmd_assign(args: argparse.Namespace) -> int:
    bm = load_benchmark(args.benchmark, args.data_dir)
    store = ReviewStore(args.db)  # the first assignment creates the database
    change = store.assign(bm.name, reviewable_pairs(bm).pair_id, args.reviewers, args.overlap, args.seed, args.by)
    print(f"{bm.name}: every pair to {args.overlap} reviewer(s); {change.added} assignment(s) added, "
          f"{change.removed} removed, {change.kept} kept")
    _print(pd.DataFrame(list(change.loads.items()), columns=["reviewer", "pairs"]))
    return 0


def _cmd_progress(args: argparse.Namespace) -> int:
    store, bm, _, reviews, _ = _reviewed(args)
    plan = store.assignment_plan(bm.name)
    print(f"{bm.name}: " + (f"assigned to {', '.join(plan['reviewers'])} with overlap {plan['overlap']} "
                            f"({plan['assigned_at']})" if plan else "no assignment yet"))
    _print(reviewer_overview(store.assignments(bm.name), reviews))
    return 0


def _cmd_agreement(args: argparse.Namespace) -> int:
    _, bm, pairs, reviews, _ = _reviewed(args)
    table = agreement(reviews, pairs, resamples=args.resamples, seed=args.seed)
    print(f"agreement on the review status, {bm.name} ({len(reviews)} reviews)")
    _print(table)
    print("\nstatuses chosen by two reviewers of the same pair (symmetric; diagonal = agreements)")
    print(confusion(reviews[reviews.pair_id.isin(set(pairs.pair_id))]).to_string())
    if args.out:
        table.to_csv(args.out, index=False)
    return 0


def _cmd_disagreements(args: argparse.Namespace) -> int:
    _, bm, pairs, reviews, adjudications = _reviewed(args)
    table = disagreements(reviews, pairs, adjudications)
    print(f"{len(table)} pair(s) to adjudicate in {bm.name}, {int(table.adjudicated.sum())} adjudicated")
    _print(table)
    return 0


def _cmd_adjudicate(args: argparse.Namespace) -> int:
    store, bm, pairs, _, _ = _reviewed(args)
    if args.pair not in set(pairs.pair_id):
        raise ValueError(f"pair {args.pair} is not a reviewable pair of {bm.name}")
    adj = store.adjudicate(bm.name, args.pair, args.by, args.status, args.comment, args.more, args.less)
    print(f"pair {adj.pair_id}: {adj.status} (adjudicated by {adj.adjudicator}, {adj.decided_at})")
    return 0


def _corrected(args: argparse.Namespace):
    _, bm, pairs, reviews, adjudications = _reviewed(args)
    decisions = final_decisions(pairs.pair_id, reviews, adjudications)
    return bm, corrected_frame(pairs, decisions), decision_counts(decisions)


def _cmd_corrected(args: argparse.Namespace) -> int:
    bm, frame, counts = _corrected(args)
    frame.to_csv(args.out, index=False)
    print(f"wrote {len(frame)} pairs of {bm.name} to {args.out} ({int(frame.corrected.sum())} corrected); "
          + ", ".join(f"{k}: {v}" for k, v in counts.items()))
    left_out = sum(v for k, v in counts.items() if k not in ("accept", "needs correction"))
    if left_out:
        print(f"left out: {left_out} pair(s) (rejected, unresolved, unreviewed or correction not written)",
              file=sys.stderr)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    bm, frame, _ = _corrected(args)
    if frame.empty:
        raise ValueError(f"no pair of {bm.name} is accepted or corrected yet: nothing to compare")
    table = before_after(open_model(spec_from_args(args)), bm, frame)
    print(f"{args.model} on {bm.name}: B before and after the reviewers' corrections (50 = unbiased)")
    _print(table)
    return 0
