"""Assignment with overlap: each pair to exactly k reviewers, loads within one, the same under a seed; rerunning
with a reviewer added or removed keeps every saved review and moves only unstarted pairs; reviewers saving and a
coordinator assigning in separate processes at once lose nothing (real SQLite)."""
from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from biascore.review.assignment import AssignmentError, plan, progress, reviewer_names, todo
from biascore.review.store import ReviewError, ReviewStore

REPO = Path(__file__).resolve().parents[2]


def _per_pair(frame: pd.DataFrame) -> dict[int, set[str]]:
    return {int(p): set(g.reviewer) for p, g in frame.groupby("pair_id")}


def _loads(frame: pd.DataFrame, names) -> dict[str, int]:
    counts = frame.groupby("reviewer").size()
    return {n: int(counts.get(n, 0)) for n in names}


@pytest.mark.parametrize("n_pairs,names,k", [(204, ["Ana", "Ben", "Cy"], 2), (204, ["Ana", "Ben", "Cy"], 3),
                                             (16, ["Ana", "Ben", "Cy", "Dan", "Eve"], 2), (7, ["Ana", "Ben"], 1),
                                             (101, list("ABCDEFG"), 3), (5, list("ABCDEFGH"), 2)])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_each_pair_gets_exactly_k_reviewers_and_loads_differ_by_at_most_one(n_pairs, names, k, seed):
    pairs = list(range(100, 100 + n_pairs))
    out = plan(pairs, names, k, seed=seed)
    per_pair = _per_pair(out)
    assert sorted(per_pair) == pairs and all(len(r) == k for r in per_pair.values())
    assert len(out) == n_pairs * k and not out.duplicated().any()
    loads = _loads(out, names)
    assert max(loads.values()) - min(loads.values()) <= 1 and sum(loads.values()) == n_pairs * k
    # stable under the seed; the order in which names are given does not matter
    pd.testing.assert_frame_equal(out, plan(list(reversed(pairs)), list(reversed(names)), k, seed=seed))


def test_seeds_differ_and_overlaps_spread_over_every_pairing_of_reviewers():
    names = ["Ana", "Ben", "Cy", "Dan"]
    a, b = plan(range(60), names, 2, seed=0), plan(range(60), names, 2, seed=1)
    assert not a.equals(b)
    pairings = pd.Series([tuple(sorted(r)) for r in _per_pair(a).values()]).value_counts()
    assert set(pairings.index) == set(itertools.combinations(names, 2))  # all 6 pairings share pairs …
    assert pairings.max() - pairings.min() <= 2  # … about equally (60 pairs / 6 pairings = 10 each)


@pytest.mark.parametrize("names,k,message", [([], 1, "at least one reviewer"),
                                             (["Ana", "Ben"], 3, r"between 1 and the number of reviewers \(2\); got 3"),
                                             (["Ana"], 0, r"reviewers \(1\); got 0"), ([" ", ""], 1, "at least one")])
def test_impossible_assignments_are_refused_in_one_line(names, k, message):
    with pytest.raises(AssignmentError, match=message):
        plan(range(5), names, k)


def test_names_from_a_text_field():
    assert reviewer_names(" Ben, Ana ,\nCy,, ") == ["Ana", "Ben", "Cy"]
    with pytest.raises(AssignmentError, match="given more than once: Ana"):
        reviewer_names(" Ben, Ana ,\nCy,, Ana")


def _review_some(store: ReviewStore, benchmark: str, counts: dict[str, int]) -> set[tuple[int, str]]:
    """Each reviewer saves a review of their first n assigned pairs; returns the (pair, reviewer) saved."""
    saved = set()
    for name, n in counts.items():
        for i, pid in enumerate(todo(store.assignments(benchmark), store.reviews(benchmark), name)[:n]):
            store.save(benchmark, pid, name, ("accept", "reject", "needs correction")[i % 3])
            saved.add((pid, name))
    return saved


def test_adding_a_reviewer_rebalances_only_unstarted_pairs_and_keeps_saved_reviews(tmp_path):
    store, pairs = ReviewStore(tmp_path / "r.sqlite"), list(range(60))
    first = store.assign("demo", pairs, ["Ana", "Ben", "Cy"], 2, seed=0, by="Cara")
    assert first.added == 120 and first.loads == {"Ana": 40, "Ben": 40, "Cy": 40}
    saved = _review_some(store, "demo", {"Ana": 12, "Ben": 7, "Cy": 0})
    before = _per_pair(store.assignments("demo"))
    started = {p for p, _ in saved}
    reviews_before = store.reviews("demo")

    change = store.assign("demo", pairs, ["Ana", "Ben", "Cy", "Dan"], 2, seed=0, by="Cara")
    after = store.assignments("demo")
    per_pair = _per_pair(after)
    assert all(len(r) == 2 for r in per_pair.values()) and sorted(per_pair) == pairs
    loads = _loads(after, ["Ana", "Ben", "Cy", "Dan"])
    assert max(loads.values()) - min(loads.values()) <= 1 and loads["Dan"] == 30
    assert saved <= set(zip(after.pair_id, after.reviewer))  # every saved review is still an assignment
    assert {p: per_pair[p] for p in started} == {p: before[p] for p in started}  # started pairs unchanged
    moved = {p for p in pairs if per_pair[p] != before[p]}
    assert moved and not moved & started
    assert change.added == change.removed == sum(len(per_pair[p] - before[p]) for p in moved)
    pd.testing.assert_frame_equal(store.reviews("demo"), reviews_before)  # no review touched
    # the same call again changes nothing; the plan is recorded
    again = store.assign("demo", pairs, ["Dan", "Cy", "Ben", "Ana"], 2, seed=0, by="Cara")
    assert (again.added, again.removed, again.kept) == (0, 0, 120)
    recorded = store.assignment_plan("demo")
    assert (recorded["reviewers"], recorded["overlap"], recorded["seed"], recorded["assigned_by"]) == (
        ["Ana", "Ben", "Cy", "Dan"], 2, 0, "Cara")


def test_removing_a_reviewer_and_raising_the_overlap(tmp_path):
    store, pairs = ReviewStore(tmp_path / "r.sqlite"), list(range(30))
    store.assign("demo", pairs, ["Ana", "Ben", "Cy"], 2)
    saved = _review_some(store, "demo", {"Cy": 5, "Ana": 3})
    store.save("demo", 29, "Eve", "accept")  # someone reviewed a pair nobody assigned to them: it counts
    store.assign("demo", pairs, ["Ana", "Ben"], 2)  # Cy leaves
    after = store.assignments("demo")
    per_pair = _per_pair(after)
    assert saved | {(29, "Eve")} <= set(zip(after.pair_id, after.reviewer))
    assert set(after[after.reviewer == "Cy"].pair_id) == {p for p, r in saved if r == "Cy"}  # only what Cy did
    assert all(len(r) == 2 for r in per_pair.values())
    store.assign("demo", pairs, ["Ana", "Ben", "Dan"], 3)  # a third opinion on every pair
    per_pair = _per_pair(store.assignments("demo"))
    assert all(len(r) == 3 for r in per_pair.values())
    with pytest.raises(ReviewError, match=r"number of reviewers \(3\); got 4"):
        store.assign("demo", pairs, ["Ana", "Ben", "Dan"], 4)


def test_progress_and_the_next_pair(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.assign("demo", range(10), ["Ana", "Ben"], 1, seed=3)
    mine = todo(store.assignments("demo"), store.reviews("demo"), "Ana")
    assert len(mine) == 5 and mine == sorted(mine)
    store.save("demo", mine[0], "Ana", "accept")
    store.save("demo", mine[1], "Ana", "reject")
    assert todo(store.assignments("demo"), store.reviews("demo"), " Ana ") == mine[2:]
    table = progress(store.assignments("demo"), store.reviews("demo")).set_index("reviewer")
    assert table.loc["Ana"].tolist() == [5, 2, 3, 0.4] and table.loc["Ben"].tolist() == [5, 0, 5, 0.0]


def test_reading_assignments_creates_nothing(tmp_path):
    store = ReviewStore(tmp_path / "none" / "r.sqlite")
    assert store.assignments("demo").empty and store.assignment_plan("demo") is None
    assert list(tmp_path.iterdir()) == []


# ------------------------------------------------------------------------------------ processes at once
_REVIEWER = """
import sys
from biascore.review.assignment import todo
from biascore.review.store import ReviewStore
db, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
store, saved = ReviewStore(db), 0
while saved < n:
    mine = todo(store.assignments('crows-tl'), store.reviews('crows-tl'), name)
    if not mine:
        break
    store.save('crows-tl', mine[0], name, 'accept', comment=f'{name} {saved}')  # "my next pair", saved
    saved += 1
print(saved)
"""
_ASSIGNER = """
import sys
from biascore.review.store import ReviewStore
db, rounds = sys.argv[1], int(sys.argv[2])
store = ReviewStore(db)
names = ['Ana', 'Ben', 'Cy']
for i in range(rounds):
    extra = ['Dan', 'Eve', 'Fay'][: i % 4]  # reviewers join (and leave) while the others work
    store.assign('crows-tl', range(80), names + extra, 2, seed=i % 3, by='Cara')
"""


def test_reviewers_saving_while_the_coordinator_assigns_lose_nothing(tmp_path, processes):
    db = tmp_path / "r.sqlite"
    ReviewStore(db).assign("crows-tl", range(80), ["Ana", "Ben", "Cy"], 2)
    run = [sys.executable, "-c"]
    procs = {name: subprocess.Popen(run + [_REVIEWER, str(db), name, "20"], cwd=REPO, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for name in ("Ana", "Ben", "Cy")}
    assigner = subprocess.Popen(run + [_ASSIGNER, str(db), "12"], cwd=REPO, stderr=subprocess.PIPE, text=True)
    saved = {}
    for name, p in procs.items():
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
        saved[name] = int(out.strip())
    _, err = assigner.communicate(timeout=300)
    assert assigner.returncode == 0, err[-2000:]
    store = ReviewStore(db)
    reviews = store.reviews("crows-tl")
    for name, n in saved.items():  # every save is there, with its own comment
        mine = reviews[reviews.reviewer == name]
        assert n == 20 and sorted(mine.comment) == sorted(f"{name} {i}" for i in range(n))
    final = store.assign("crows-tl", range(80), ["Ana", "Ben", "Cy"], 2, by="Cara")  # after the rush: one more pass
    after = store.assignments("crows-tl")
    assert set(zip(reviews.pair_id, reviews.reviewer)) <= set(zip(after.pair_id, after.reviewer))
    savers = reviews.groupby("pair_id").size()
    for pid, group in after.groupby("pair_id"):
        assert len(group) == max(2, int(savers.get(pid, 0)))  # k, or more when more already reviewed it
    assert sorted(after.pair_id.unique()) == list(range(80)) and final.loads


def test_the_assign_and_progress_commands(tmp_path, capsys):
    from biascore.cli.main import main
    from biascore.inputs.datasets import load_benchmark
    from biascore.review.corrections import reviewable_pairs

    db = tmp_path / "r.sqlite"
    args = ["review", "assign", "--db", str(db), "--benchmark", "demo", "--reviewers", "Ana", "Ben", "Cy",
            "--overlap", "2", "--seed", "0", "--by", "Cara"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "demo: every pair to 2 reviewer(s); 32 assignment(s) added, 0 removed, 0 kept" in out
    ids = list(reviewable_pairs(load_benchmark("demo")).pair_id)
    assigned = ReviewStore(db).assignments("demo")
    assert sorted(assigned.pair_id.unique()) == ids and assigned.groupby("pair_id").size().eq(2).all()
    pd.testing.assert_frame_equal(assigned[["pair_id", "reviewer"]],
                                  plan(ids, ["Ana", "Ben", "Cy"], 2, seed=0))  # what the planner gives
    first = todo(assigned, ReviewStore(db).reviews("demo"), "Ben")[0]
    ReviewStore(db).save("demo", first, "Ben", "accept")
    assert main(["review", "progress", "--db", str(db), "--benchmark", "demo"]) == 0
    out = capsys.readouterr().out
    assert "demo: assigned to Ana, Ben, Cy with overlap 2" in out
    ben = next(line.split() for line in out.splitlines() if line.split()[:1] == ["Ben"])
    assert ben[1:4] == [str(len(assigned[assigned.reviewer == "Ben"])), "1", str(
        len(assigned[assigned.reviewer == "Ben"]) - 1)]
    assert main(args[:-6] + ["--overlap", "4"]) == 2  # 3 reviewers cannot give each pair to 4
    assert "error:" in capsys.readouterr().err


def test_cli_refuses_a_reviewer_named_twice(tmp_path, capsys):
    from biascore.cli.main import main

    db = tmp_path / "r.sqlite"
    assert main(["review", "assign", "--db", str(db), "--benchmark", "demo", "--reviewers", "Ana", "Ana", "Ben"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "given more than once: Ana" in err[0]
    assert not db.exists()  # nothing written
