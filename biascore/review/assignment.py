"""Splitting a benchmark among reviewers with overlap: every pair to exactly k reviewers, loads balanced.

:func:`plan` decides who reviews which pair (saved by :meth:`ReviewStore.assign`). A **started** pair keeps its
reviewers still on the list, up to k, and is topped up; nothing saved is ever unassigned; every **unstarted** pair
is (re)assigned. Each open slot goes to the least-loaded reviewer not yet on the pair; ties to a previous reviewer,
then to the one sharing the fewest pairs with those chosen, then a seeded random order (docs/review.md,
"Assignment with overlap", with the guarantees tests/review/test_assignment.py holds).
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

PLAN_COLUMNS = ["pair_id", "reviewer"]
PROGRESS_COLUMNS = ["reviewer", "assigned", "reviewed", "remaining", "share"]


class AssignmentError(ValueError):
    """An assignment cannot be made as asked; the message is one line."""


def reviewer_names(names: Iterable[str]) -> list[str]:
    """The reviewer names, stripped, sorted (the order does not change the plan); empty names dropped. A single
    string is split at commas and line breaks (what a page's text field gives). A name given twice is refused
    (:class:`AssignmentError`, one line): two people with one name would share one set of reviews."""
    if isinstance(names, str):
        names = names.replace("\n", ",").split(",")
    cleaned = [n.strip() for n in names if n and n.strip()]
    repeated = sorted({n for n in cleaned if cleaned.count(n) > 1})
    if repeated:
        raise AssignmentError(f"reviewer name(s) given more than once: {', '.join(repeated)}; give each reviewer "
                              "once (two people need two different names)")
    return sorted(cleaned)


def _pairs(frame: pd.DataFrame | None) -> set[tuple[int, str]]:
    if frame is None or frame.empty:
        return set()
    return {(int(p), str(r)) for p, r in zip(frame.pair_id, frame.reviewer)}


def plan(pair_ids: Sequence[int], reviewers: Iterable[str], overlap: int, *, seed: int = 0,
         current: pd.DataFrame | None = None, reviews: pd.DataFrame | None = None) -> pd.DataFrame:
    """Who reviews which pair (columns :data:`PLAN_COLUMNS`, ordered by pair then reviewer); see the module
    docstring. ``current``: the assignment so far (pair_id, reviewer); ``reviews``: the saved reviews (pair_id,
    reviewer). Raises :class:`AssignmentError` for an empty list or an overlap outside 1…len(reviewers)."""
    names = reviewer_names(reviewers)
    if not names:
        raise AssignmentError("name at least one reviewer")
    if not 1 <= int(overlap) <= len(names):
        raise AssignmentError(f"the overlap must be between 1 and the number of reviewers ({len(names)}); "
                              f"got {overlap}")
    overlap = int(overlap)
    pairs = sorted({int(p) for p in pair_ids})
    known = set(pairs)
    saved = {(p, r) for p, r in _pairs(reviews) if p in known}
    assigned_before = {(p, r) for p, r in _pairs(current) if p in known}
    on_pair: dict[int, set[str]] = {p: set() for p in pairs}
    for p, r in saved:
        on_pair[p].add(r)
    started = [p for p in pairs if on_pair[p]]
    listed = set(names)
    for p, r in sorted(assigned_before):  # started pairs keep their listed assignees, up to the overlap
        if on_pair[p] and r in listed and r not in on_pair[p] and len(on_pair[p]) < overlap:
            on_pair[p].add(r)
    load = Counter({r: 0 for r in names})
    shared: Counter = Counter()
    for p in started:
        members = sorted(on_pair[p])
        load.update(r for r in members if r in listed)
        shared.update((a, b) for a in members for b in members if a != b)
    rng = np.random.default_rng(seed)
    unstarted = [pairs[i] for i in rng.permutation(len(pairs)) if not on_pair[pairs[i]]]
    index = {r: i for i, r in enumerate(names)}
    before = {}
    for p, r in assigned_before:
        before.setdefault(p, set()).add(r)
    for p in started + unstarted:
        tie_break = rng.permutation(len(names))
        members, previous = on_pair[p], before.get(p, set())
        while len(members) < overlap:
            best = min((r for r in names if r not in members),
                       key=lambda r: (load[r], r not in previous, sum(shared[(r, m)] for m in members),
                                      tie_break[index[r]]))
            shared.update((best, m) for m in members)
            shared.update((m, best) for m in members)
            members.add(best)
            load[best] += 1
    rows = sorted((p, r) for p in pairs for r in on_pair[p])
    return pd.DataFrame(rows, columns=PLAN_COLUMNS).astype({"pair_id": "int64"})


def progress(assignments: pd.DataFrame, reviews: pd.DataFrame) -> pd.DataFrame:
    """Per assigned reviewer (columns :data:`PROGRESS_COLUMNS`): pairs assigned, how many of them they have
    reviewed, how many remain, and the share done."""
    done = _pairs(reviews)
    rows = []
    for name, group in assignments.groupby("reviewer", sort=True):
        n = len(group)
        k = sum((int(p), name) in done for p in group.pair_id)
        rows.append({"reviewer": name, "assigned": n, "reviewed": k, "remaining": n - k, "share": k / n if n else 0.0})
    return pd.DataFrame.from_records(rows, columns=PROGRESS_COLUMNS)


def todo(assignments: pd.DataFrame, reviews: pd.DataFrame, reviewer: str) -> list[int]:
    """The pairs assigned to ``reviewer`` that they have not reviewed yet, in pair order (the first is their
    next pair)."""
    reviewer = (reviewer or "").strip()
    mine = assignments.pair_id[assignments.reviewer == reviewer]
    done = set(reviews.pair_id[reviews.reviewer == reviewer])
    return sorted(int(p) for p in mine if int(p) not in done)


def loads(assignments: pd.DataFrame) -> dict[str, int]:
    """Pairs assigned per reviewer."""
    return {str(k): int(v) for k, v in assignments.groupby("reviewer").size().items()}
