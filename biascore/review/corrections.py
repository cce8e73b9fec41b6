"""The reviewed benchmark: one final decision per pair, a corrected benchmark CSV, and B before/after corrections
(docs/review.md).

* :func:`final_decisions`: an adjudicated decision is final; else the status every reviewer chose (for
  ``needs correction`` only with the same corrected sentences; one reviewer alone decides a pair nobody else
  reviewed); else *unresolved*, or *unreviewed* without a review.
* :func:`corrected_frame`: in benchmark order, the ``accept`` pairs and the ``needs correction`` pairs with a
  corrected sentence (an empty one keeps the original), with the custom-CSV loader's columns
  (:func:`biascore.inputs.datasets.load_benchmark`) plus ``source_pair_id``, ``review_status`` and ``corrected``;
  what is left out is counted by :func:`decision_counts`.
* :func:`before_after`: the engine's B of one model on the original benchmark, on the kept pairs as they were,
  and on the corrected benchmark.
"""
from __future__ import annotations

from dataclasses import replace

import pandas as pd

from biascore.progress import ProgressFn
from biascore.inputs.datasets import Benchmark, _row_issue
from biascore.methods import get
from biascore.methods.attribution.scorer import summarize
from biascore.runs import runner
from biascore.review.agreement import review_summary
from biascore.review.store import ACCEPT, NEEDS_CORRECTION, REJECT

DECISION_COLUMNS = ["pair_id", "decision", "status", "corrected_more", "corrected_less", "source"]
CORRECTED_COLUMNS = ["sent_more", "sent_less", "bias_type", "sent_more_en", "sent_less_en"]
RECORD_COLUMNS = ["source_pair_id", "review_status", "corrected"]
UNRESOLVED, UNREVIEWED, PENDING = "unresolved", "unreviewed", "correction not written"


def final_decisions(pair_ids, reviews: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """One row per pair id (columns :data:`DECISION_COLUMNS`): ``decision`` is the final status, or
    ``unresolved`` / ``unreviewed`` / ``correction not written``; ``source`` says where it came from."""
    per_pair = review_summary(reviews).to_dict("index")
    adj = adjudications.set_index("pair_id").to_dict("index") if len(adjudications) else {}
    rows = []
    for pid in pair_ids:
        pid = int(pid)
        status, more, less, source = "", "", "", ""
        if pid in adj:
            a = adj[pid]
            status, more, less = a["status"], a["corrected_more"], a["corrected_less"]
            source = f"adjudicated by {a['adjudicator']}"
        elif pid in per_pair:
            g = per_pair[pid]
            if g["n_status"] == 1 and (g["status"] != NEEDS_CORRECTION or g["n_fix"] == 1):
                status = g["status"]
                more, less = (g["more"], g["less"]) if status == NEEDS_CORRECTION else ("", "")
                source = "one reviewer" if g["n"] == 1 else f"{g['n']} reviewers agree"
            else:
                source = f"{g['n']} reviewers disagree"
        else:
            source = "no review"
        if not status:
            decision = UNRESOLVED if source != "no review" else UNREVIEWED
        elif status == NEEDS_CORRECTION and not (more or less):
            decision = PENDING
        else:
            decision = status
        rows.append({"pair_id": pid, "decision": decision, "status": status, "corrected_more": more,
                     "corrected_less": less, "source": source})
    return pd.DataFrame.from_records(rows, columns=DECISION_COLUMNS)


def decision_counts(decisions: pd.DataFrame) -> dict[str, int]:
    """How many pairs ended in each decision (accept, needs correction, reject, unresolved, …)."""
    order = [ACCEPT, NEEDS_CORRECTION, REJECT, UNRESOLVED, PENDING, UNREVIEWED]
    counts = decisions.decision.value_counts()
    return {k: int(counts.get(k, 0)) for k in order}


def corrected_frame(pairs: pd.DataFrame, decisions: pd.DataFrame) -> pd.DataFrame:
    """The corrected benchmark as a frame in benchmark order (columns :data:`CORRECTED_COLUMNS`, ``language``
    when ``pairs`` has it, then :data:`RECORD_COLUMNS`)."""
    keep = decisions[decisions.decision.isin([ACCEPT, NEEDS_CORRECTION])].set_index("pair_id")
    chosen = pairs[pairs.pair_id.isin(keep.index)].copy()
    rows = keep.loc[chosen.pair_id]
    fixed = (rows.decision == NEEDS_CORRECTION).to_numpy()
    more_new, less_new = rows.corrected_more.to_numpy(), rows.corrected_less.to_numpy()
    chosen["sent_more"] = [n if f and n else o for o, n, f in zip(chosen.sent_more, more_new, fixed)]
    chosen["sent_less"] = [n if f and n else o for o, n, f in zip(chosen.sent_less, less_new, fixed)]
    chosen["source_pair_id"] = chosen.pair_id.astype(int)
    chosen["review_status"] = rows.decision.to_numpy()
    chosen["corrected"] = fixed
    for col in ("sent_more_en", "sent_less_en"):
        if col not in chosen:
            chosen[col] = ""
    columns = CORRECTED_COLUMNS + (["language"] if "language" in chosen else []) + RECORD_COLUMNS
    return chosen[columns].reset_index(drop=True)


def corrected_benchmark(source: Benchmark, corrected: pd.DataFrame) -> Benchmark:
    """The corrected frame as an in-memory :class:`Benchmark` (what loading its CSV gives: pair ids 0…n−1)."""
    frame = corrected.copy()
    frame.insert(0, "pair_id", range(len(frame)))
    frame["load_issue"] = [_row_issue(m, l) for m, l in zip(frame.sent_more, frame.sent_less)]
    return replace(source, name=f"{source.name}-corrected", frame=frame, malformed=[],
                   description=f"{source.name} with the translation reviewers' corrections")


def reviewable_pairs(bm: Benchmark) -> pd.DataFrame:
    """The pairs translators review: the benchmark's Filipino rows (all rows unless it has a ``language``
    column) with their English sources (empty when the benchmark has none)."""
    frame = bm.frame
    if "language" in frame:
        frame = frame[frame.language == "tl"]
    frame = frame.copy()
    for col in ("sent_more_en", "sent_less_en"):
        if col not in frame:
            frame[col] = ""
    return frame.reset_index(drop=True)


def before_after(lm, source: Benchmark, corrected: pd.DataFrame, progress: ProgressFn | None = None) -> pd.DataFrame:
    """B overall and per bias type for one model: ``B_before`` (the reviewable pairs of the original benchmark,
    :func:`reviewable_pairs`), ``B_kept_before`` (the kept pairs with their original sentences) and ``B_after``
    (the corrected benchmark), each with its n; ``B_change`` = B_after − B_kept_before. ``lm``: a handle or a
    loaded model; both benchmarks are runs of the one runner (the corrected one as ``<benchmark>-corrected``)."""
    total = len(source.frame) + len(corrected)

    def scores(benchmark: Benchmark, offset: int) -> pd.DataFrame:
        step = (lambda done, n: progress(offset + done, total)) if progress else None
        return runner.run(get("attribution"), lm, benchmark, progress=step, waiting=step).frame

    full = scores(source, 0)
    before = full[full.pair_id.isin(set(reviewable_pairs(source).pair_id))]
    after = scores(corrected_benchmark(source, corrected), len(source.frame))
    kept = before[before.pair_id.isin(set(corrected.source_pair_id))]
    parts = []
    for label, frame in (("before", before), ("kept_before", kept), ("after", after)):
        s = summarize(frame, "attribution").set_index("bias_type")[["score", "n"]]
        parts.append(s.rename(columns={"score": f"B_{label}", "n": f"n_{label}"}))
    out = pd.concat(parts, axis=1).reset_index()
    out["B_change"] = out.B_after - out.B_kept_before
    return out
