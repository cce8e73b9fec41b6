"""Review store: real SQLite in WAL mode, upsert per (pair, reviewer), adjudications, nothing created before the
first save, non-review files refused untouched, migration of databases made by the previous code (schema versions
0 and 2, taken from git), and concurrent writers in separate processes and threads lose nothing."""
from __future__ import annotations

import importlib.util
import io
import json
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pandas as pd
import pytest

from biascore.review.store import (APPLICATION_ID, LEGACY_VERDICTS, SCHEMA_VERSION, STATUSES, TAGS, ReviewError,
                                   ReviewStore, reviews_csv)

REPO = Path(__file__).resolve().parents[2]
#: The last commit whose biascore/review/store.py wrote the version-0 schema (one verdict and a note per review).
V0_COMMIT = "4004f54"
#: The last commit whose store wrote schema version 2 (reviews and adjudications, no assignments).
V2_COMMIT = "a9854be"


def test_save_read_back_and_reload(tmp_path):
    db = tmp_path / "sub" / "reviews.sqlite"
    store = ReviewStore(db)
    store.save("crows-tl", 3, "Ana", "needs correction", ["wrong bias type", "mistranslation"],
               "  'babae' should be 'mga babae' <b>  ", "  Ang mga babae ay mahina.  ", "")
    store.save("crows-tl", 4, "Ana", "accept")
    again = ReviewStore(db)  # a reload: a fresh object on the same file
    r = again.get("crows-tl", 3, "Ana")
    assert (r.status, r.comment, r.corrected_more, r.corrected_less) == (
        "needs correction", "'babae' should be 'mga babae' <b>", "Ang mga babae ay mahina.", "")
    assert r.tags == ("mistranslation", "wrong bias type")  # stored in the fixed TAGS order
    frame = again.reviews("crows-tl")
    assert list(frame.pair_id) == [3, 4] and list(frame.status) == ["needs correction", "accept"]
    assert sorted(p.name for p in db.parent.iterdir()) == ["reviews.sqlite"]  # no temporary file left behind
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    con.close()


def test_upsert_replaces_only_the_same_reviewer(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.save("crows-tl", 1, "Ana", "accept")
    store.save("crows-tl", 1, "Ben", "reject", ["wrong bias type"], "gender, not SO")
    store.save("crows-tl", 1, "Ana", "needs correction", ["not a minimal pair"], "changed verb too", "", "Fixed.")
    frame = store.reviews("crows-tl")
    assert len(frame) == 2
    assert dict(zip(frame.reviewer, frame.status)) == {"Ana": "needs correction", "Ben": "reject"}
    assert len(store.reviews("crows-tl", reviewer="Ana")) == 1
    assert len(store.reviews("crows-tl", status="reject")) == 1
    assert store.reviews("demo").empty


def test_adjudication_is_stored_once_per_pair(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.adjudicate("demo", 5, "Cara", "reject", "both readings wrong")
    adj = store.adjudicate("demo", 5, "Dan", "needs correction", "", "Ang bago.", "Ang luma.")
    table = store.adjudications("demo")
    assert table[["pair_id", "status", "corrected_more", "corrected_less", "adjudicator"]].values.tolist() == [
        [5, "needs correction", "Ang bago.", "Ang luma.", "Dan"]]
    assert table.decided_at.iloc[0] == adj.decided_at
    assert store.adjudications("crows-tl").empty


def test_csv_export_round_trips(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.save("demo", 7, "Ana", "reject", ["other", "mistranslation"], 'comma, "quote" and\nnewline')
    back = pd.read_csv(io.BytesIO(reviews_csv(store.reviews("demo"))), keep_default_na=False)
    assert back.loc[0, "comment"] == 'comma, "quote" and\nnewline'
    assert back.loc[0, "tags"] == "mistranslation; other"
    assert list(back.columns) == ["benchmark", "pair_id", "reviewer", "status", "tags", "comment", "corrected_more",
                                  "corrected_less", "legacy_verdict", "updated_at"]


@pytest.mark.parametrize("benchmark, pair, fragment", [
    ("demo", 99999, "demo has no pair 99999 (its pair ids: 0–37, 38 pairs)"),
    ("demo", -3, "demo has no pair -3: pair ids start at 0"),
    ("no-such-benchmark", 1, "unknown benchmark 'no-such-benchmark'"),
    ("demo", 1.5, "a pair id is a whole number"),
    ("demo", True, "a pair id is a whole number"),
])
def test_reviews_of_pairs_that_do_not_exist_are_refused_by_the_store(tmp_path, benchmark, pair, fragment):
    """The Python API validates (not only the CLI): nothing is saved, exported or counted in progress."""
    store = ReviewStore(tmp_path / "r.sqlite")
    for write in (lambda: store.save(benchmark, pair, "Ana", "accept"),
                  lambda: store.adjudicate(benchmark, pair, "Cara", "reject")):
        with pytest.raises(ReviewError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as err:
            write()
        assert "\n" not in str(err.value)
    assert not (tmp_path / "r.sqlite").exists()
    store.save("demo", 37, "Ana", "accept")  # the last pair is fine
    assert store.reviews("demo").pair_id.tolist() == [37]


def test_a_loaded_benchmark_is_validated_against_its_own_pairs(tmp_path):
    from biascore.inputs.datasets import load_benchmark

    mine = load_benchmark("demo").first(5)
    store = ReviewStore(tmp_path / "r.sqlite")
    assert store.save(mine, 4, "Ana", "accept").benchmark == "demo"
    with pytest.raises(ReviewError, match="demo has no pair 5"):
        store.save(mine, 5, "Ana", "accept")


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(reviewer="  ", status="accept"), "enter your name"),
    (dict(reviewer="Ana", status="fine"), "unknown status"),
    (dict(reviewer="Ana", status="accept", tags=["typo"]), "unknown tag"),
    (dict(reviewer="Ana", status="accept", comment="x" * 5001), "limit is 5000"),
    (dict(reviewer="A" * 101, status="accept"), "longer than 100"),
    (dict(reviewer="Ana", status="accept", corrected_more="Bago."), "only with status 'needs correction'"),
    (dict(reviewer="Ana", status="needs correction", corrected_less="one\ntwo"), "must be one line"),
])
def test_bad_input_is_refused_and_creates_nothing(tmp_path, kwargs, fragment):
    store = ReviewStore(tmp_path / "new" / "r.sqlite")
    with pytest.raises(ReviewError, match=fragment):
        store.save("demo", 1, **kwargs)
    assert store.reviews().empty
    assert list(tmp_path.iterdir()) == []  # refused before anything was created


# ------------------------------------------------------------------------------------ nothing created, bad paths
def test_reading_a_missing_database_creates_nothing(tmp_path):
    store = ReviewStore(tmp_path / "a" / "b" / "reviews.sqlite")
    assert not store.exists()
    assert store.reviews().empty and store.adjudications().empty
    assert list(tmp_path.iterdir()) == []


def _listing(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("journal", ["delete", "wal"])
def test_another_applications_sqlite_file_is_refused_untouched(tmp_path, journal):
    other = tmp_path / "app.db"
    with sqlite3.connect(other) as con:
        con.execute(f"PRAGMA journal_mode={journal}")
        con.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        con.execute("INSERT INTO customers (name) VALUES ('x')")
    con.close()
    before = _listing(tmp_path)
    store = ReviewStore(other)
    for call in (store.exists, store.reviews, lambda: store.save("demo", 1, "Ana", "accept")):
        with pytest.raises(ReviewError, match="not a review database") as info:
            call()
        assert "\n" not in str(info.value) and "customers" in str(info.value)
    assert _listing(tmp_path) == before  # no table added, no journal file left, bytes unchanged


def test_empty_and_non_sqlite_files_and_folders_are_refused(tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.touch()
    with pytest.raises(ReviewError, match="is an empty file"):
        ReviewStore(empty).save("demo", 1, "Ana", "accept")
    assert empty.stat().st_size == 0
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ReviewError, match="not a SQLite file"):
        ReviewStore(junk).reviews()
    with pytest.raises(ReviewError, match="is a folder"):
        ReviewStore(tmp_path).save("demo", 1, "Ana", "accept")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.sqlite", "junk.sqlite"]
    err = ReviewError("is an empty file", tmp_path / "x")
    assert err.reason == "is an empty file" and str(tmp_path) not in err.reason  # what public mode shows


def test_a_database_from_a_newer_schema_is_refused(tmp_path):
    db = tmp_path / "r.sqlite"
    ReviewStore(db).save("demo", 1, "Ana", "accept")
    with sqlite3.connect(db) as con:
        con.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    con.close()
    with pytest.raises(ReviewError, match="newer biascore"):
        ReviewStore(db).reviews()


# ------------------------------------------------------------------------------------ migration from version 0
#: Fallback when git history is not available (a shallow CI checkout): the version-0 schema and upsert, copied
#: verbatim from biascore/review/store.py at V0_COMMIT.
V0_FALLBACK = '''
import sqlite3
VERDICTS = ("fine", "translation problem", "not a minimal pair", "wrong bias label", "culturally irrelevant")
COLUMNS = ["benchmark", "pair_id", "reviewer", "verdict", "note", "updated_at"]
_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    benchmark  TEXT    NOT NULL,
    pair_id    INTEGER NOT NULL,
    reviewer   TEXT    NOT NULL,
    verdict    TEXT    NOT NULL,
    note       TEXT    NOT NULL DEFAULT '',
    updated_at TEXT    NOT NULL,
    PRIMARY KEY (benchmark, pair_id, reviewer)
)
"""
class ReviewStore:
    def __init__(self, path):
        self.path = path
        con = sqlite3.connect(path, isolation_level=None)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(_SCHEMA)
        con.close()
    def save(self, benchmark, pair_id, reviewer, verdict, note=""):
        con = sqlite3.connect(self.path, isolation_level=None)
        con.execute("BEGIN IMMEDIATE")
        con.execute(
            "INSERT INTO reviews (benchmark, pair_id, reviewer, verdict, note, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (benchmark, pair_id, reviewer) DO UPDATE SET "
            "verdict = excluded.verdict, note = excluded.note, updated_at = excluded.updated_at",
            (benchmark, int(pair_id), reviewer.strip(), verdict, note.strip(), "2025-06-01T12:00:00+00:00"))
        con.execute("COMMIT")
        con.close()
'''


#: Fallback without git history: the version-2 schema, copied from biascore/review/store.py at V2_COMMIT, with a
#: save and an adjudicate that write it.
V2_FALLBACK = '''
import json, sqlite3
SCHEMA_VERSION, APPLICATION_ID = 2, 0x62526576
_CHECK = "CHECK (status IN ('accept', 'needs correction', 'reject'))"
_SCHEMA = [f"""
CREATE TABLE reviews (
    benchmark      TEXT    NOT NULL,
    pair_id        INTEGER NOT NULL,
    reviewer       TEXT    NOT NULL,
    status         TEXT    NOT NULL {_CHECK},
    tags           TEXT    NOT NULL DEFAULT '[]',
    comment        TEXT    NOT NULL DEFAULT '',
    corrected_more TEXT    NOT NULL DEFAULT '',
    corrected_less TEXT    NOT NULL DEFAULT '',
    legacy_verdict TEXT    NOT NULL DEFAULT '',
    updated_at     TEXT    NOT NULL,
    PRIMARY KEY (benchmark, pair_id, reviewer)
)""", f"""
CREATE TABLE adjudications (
    benchmark      TEXT    NOT NULL,
    pair_id        INTEGER NOT NULL,
    status         TEXT    NOT NULL {_CHECK},
    corrected_more TEXT    NOT NULL DEFAULT '',
    corrected_less TEXT    NOT NULL DEFAULT '',
    comment        TEXT    NOT NULL DEFAULT '',
    adjudicator    TEXT    NOT NULL,
    decided_at     TEXT    NOT NULL,
    PRIMARY KEY (benchmark, pair_id)
)""", f"PRAGMA application_id = {APPLICATION_ID}", f"PRAGMA user_version = {SCHEMA_VERSION}"]
class ReviewStore:
    def __init__(self, path):
        self.path = path
    def _con(self):
        con = sqlite3.connect(self.path, isolation_level=None)
        if not con.execute("SELECT name FROM sqlite_master WHERE name = 'reviews'").fetchone():
            con.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                con.execute(statement)
        return con
    def save(self, benchmark, pair_id, reviewer, status, tags=(), comment="", corrected_more="", corrected_less=""):
        con = self._con()
        con.execute("INSERT OR REPLACE INTO reviews VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', ?)",
                    (benchmark, pair_id, reviewer, status, json.dumps(list(tags)), comment, corrected_more,
                     corrected_less, "2026-01-01T00:00:00+00:00"))
        con.close()
    def adjudicate(self, benchmark, pair_id, adjudicator, status, comment="", corrected_more="", corrected_less=""):
        con = self._con()
        con.execute("INSERT OR REPLACE INTO adjudications VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (benchmark, pair_id, status, corrected_more, corrected_less, comment, adjudicator,
                     "2026-01-01T00:00:00+00:00"))
        con.close()
'''


def _old_store(tmp_path_factory, commit: str, fallback: str, name: str):
    """biascore/review/store.py as it was at ``commit``, imported from git as its own module (or, without git
    history, ``fallback``)."""
    try:
        source = subprocess.run(["git", "show", f"{commit}:biascore/review/store.py"], cwd=REPO, check=True,
                                capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        source = fallback
    # the old module's one import of the engine, at its place in today's house (biascore/core/ was split by
    # concern; settings is on the ground floor now)
    source = source.replace("from biascore.core import settings", "from biascore import settings")
    path = tmp_path_factory.mktemp(name) / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def v0_store(tmp_path_factory, processes):
    """The store that wrote schema version 0 (:data:`V0_COMMIT`)."""
    module = _old_store(tmp_path_factory, V0_COMMIT, V0_FALLBACK, "review_store_v0")
    assert "verdict" in module.COLUMNS  # really the old schema
    return module


@pytest.fixture(scope="module")
def v2_store(tmp_path_factory, processes):
    """The store that wrote schema version 2 (:data:`V2_COMMIT`)."""
    module = _old_store(tmp_path_factory, V2_COMMIT, V2_FALLBACK, "review_store_v2")
    assert module.SCHEMA_VERSION == 2  # really the old schema
    return module


def _v0_database(v0_store, path: Path) -> list[tuple]:
    old = v0_store.ReviewStore(path)
    saved = []
    for i, verdict in enumerate(v0_store.VERDICTS):
        old.save("crows-tl", i, "Ana", verdict, f"note {i}, with 'quotes'")
        saved.append(("crows-tl", i, "Ana", verdict, f"note {i}, with 'quotes'"))
    old.save("demo", 22, "Ben", "fine")
    saved.append(("demo", 22, "Ben", "fine", ""))
    return saved


def test_a_version_0_database_is_migrated_without_loss(tmp_path, v0_store):
    db = tmp_path / "old.sqlite"
    saved = _v0_database(v0_store, db)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 0
        stamps = dict(((b, p, r), t) for b, p, r, t in con.execute(
            "SELECT benchmark, pair_id, reviewer, updated_at FROM reviews"))
    con.close()
    before = db.read_bytes()
    store = ReviewStore(db)
    assert store.state().kind == "legacy"

    def check(frame):
        assert len(frame) == len(saved)
        for benchmark, pair_id, reviewer, verdict, note in saved:
            row = frame[(frame.benchmark == benchmark) & (frame.pair_id == pair_id)
                        & (frame.reviewer == reviewer)].iloc[0]
            status, tags = LEGACY_VERDICTS[verdict]
            assert (row.status, row.tags, row.comment, row.legacy_verdict) == (status, tags, note, verdict)
            assert row.updated_at == stamps[(benchmark, pair_id, reviewer)]

    check(store.reviews())  # read as it is, mapped on the fly …
    assert store.adjudications().empty and store.get("crows-tl", 0, "Ana").status == "accept"
    assert store.state().kind == "legacy" and db.read_bytes() == before  # … and not changed by reading
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]
    store.save("demo", 22, "Cara", "reject")  # the first save migrates
    assert store.state().kind == "current"
    migrated = store.reviews()
    check(migrated[migrated.reviewer != "Cara"])
    # the migrated database takes new reviews and adjudications; a new save clears the legacy verdict
    store.save("crows-tl", 1, "Ana", "needs correction", ["mistranslation"], "fixed", "Bago.", "")
    store.adjudicate("crows-tl", 1, "Cara", "accept")
    assert store.get("crows-tl", 1, "Ana").legacy_verdict == ""
    assert len(store.reviews()) == len(saved) + 1 and len(store.adjudications()) == 1
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert con.execute("SELECT name FROM sqlite_master WHERE name = 'reviews_v0'").fetchone() is None
    con.close()


def _v2_database(v2_store, path: Path) -> None:
    old = v2_store.ReviewStore(path)
    old.save("crows-tl", 3, "Ana", "needs correction", ["mistranslation", "wrong bias type"], "kept, 'quoted'",
             "Ang bago.", "")
    old.save("crows-tl", 3, "Ben", "reject", ["other"], "no")
    old.save("demo", 22, "Ana", "accept")
    old.adjudicate("crows-tl", 3, "Cara", "needs correction", "decided", "Ang pinal.", "")


def test_a_version_2_database_is_read_as_it_is_and_upgraded_by_the_first_write(tmp_path, v2_store):
    db = tmp_path / "v2.sqlite"
    _v2_database(v2_store, db)
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA user_version").fetchone()[0] == 2
        old_reviews = con.execute("SELECT * FROM reviews ORDER BY benchmark, pair_id, reviewer").fetchall()
        old_adj = con.execute("SELECT * FROM adjudications").fetchall()
    con.close()
    before = _listing(tmp_path)
    store = ReviewStore(db)
    assert (store.state().kind, store.state().version) == ("current", 2)
    frame = store.reviews()
    assert len(frame) == 3 and store.get("crows-tl", 3, "Ana").tags == ("mistranslation", "wrong bias type")
    assert store.assignments().empty and store.assignment_plan("crows-tl") is None  # tables it lacks: empty
    assert _listing(tmp_path) == before  # reading changed nothing
    store.assign("crows-tl", range(10), ["Ana", "Ben"], 1)  # the first write upgrades
    assert store.state().version == SCHEMA_VERSION == 3
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT * FROM reviews ORDER BY benchmark, pair_id, reviewer").fetchall() == old_reviews
        assert con.execute("SELECT * FROM adjudications").fetchall() == old_adj
    con.close()
    assigned = store.assignments("crows-tl")
    assert {(3, "Ana"), (3, "Ben")} <= set(zip(assigned.pair_id, assigned.reviewer))  # started pair 3 keeps both


def test_two_processes_on_a_version_2_database_upgrade_it_once(tmp_path, v2_store):
    db = tmp_path / "v2.sqlite"
    _v2_database(v2_store, db)
    _run_writers(db, ["Cara", "Dan"], 40)
    frame = _check_written(db, ["Cara", "Dan"], 40, extra=2)
    assert frame[frame.reviewer == "Ana"].comment.tolist() == ["kept, 'quoted'"]
    assert ReviewStore(db).state().version == SCHEMA_VERSION


_PROCESS = """
import sys
from biascore.review.store import ReviewStore, STATUSES, TAGS
db, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s = ReviewStore(db)
for i in range(n):
    status = STATUSES[i % 3]
    s.save('crows-tl', i, name, status, [TAGS[i % len(TAGS)]], f'{name} note {i}',
           f'{name} more {i}' if status == 'needs correction' else '', '')
    if i % 10 == 0:
        s.adjudicate('crows-tl', i, name, 'reject')
"""


def _run_writers(db: Path, names: list[str], n: int) -> None:
    # separate Python interpreters (not multiprocessing: its spawn re-imports __main__, which AppTest may have
    # left pointing at a page script)
    procs = [subprocess.Popen([sys.executable, "-c", _PROCESS, str(db), name, str(n)], cwd=REPO,
                              stderr=subprocess.PIPE, text=True) for name in names]
    for p in procs:
        _, err = p.communicate(timeout=180)
        assert p.returncode == 0, err[-2000:]


def _check_written(db: Path, names: list[str], n: int, extra: int = 0) -> pd.DataFrame:
    frame = ReviewStore(db).reviews("crows-tl")
    assert len(frame) == len(names) * n + extra
    for name in names:
        mine = frame[frame.reviewer == name]
        assert list(mine.pair_id) == list(range(n))
        assert list(mine.comment) == [f"{name} note {i}" for i in range(n)]
        assert list(mine.status) == [STATUSES[i % 3] for i in range(n)]
        assert list(mine.tags) == [(TAGS[i % len(TAGS)],) for i in range(n)]
    return frame


def test_two_processes_writing_at_once_lose_nothing(tmp_path, processes):
    db = tmp_path / "r.sqlite"  # does not exist yet: the two processes race to create it
    _run_writers(db, ["Ana", "Ben"], 150)
    _check_written(db, ["Ana", "Ben"], 150)
    assert len(ReviewStore(db).adjudications("crows-tl")) == 15  # pairs 0, 10, …, 140: the later writer's decision
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.sqlite"]


def test_two_processes_on_a_version_0_database_migrate_it_once(tmp_path, v0_store):
    db = tmp_path / "old.sqlite"
    saved = _v0_database(v0_store, db)
    _run_writers(db, ["Cara", "Dan"], 60)
    frame = _check_written(db, ["Cara", "Dan"], 60, extra=len(saved) - 1)  # the v0 'demo' row is not crows-tl
    assert sorted(frame[frame.reviewer == "Ana"].legacy_verdict) == sorted(v0_store.VERDICTS)


def test_threads_writing_the_same_pairs_lose_nothing(tmp_path):
    db = tmp_path / "r.sqlite"
    errors = []

    def run(name):
        try:
            store = ReviewStore(db)
            for i in range(60):
                store.save("crows-tl", i, name, STATUSES[i % 3], comment=f"{name} note {i}")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f"R{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    frame = ReviewStore(db).reviews()
    assert len(frame) == 240 and frame.groupby("reviewer").size().tolist() == [60] * 4
    assert json.loads(json.dumps(list(frame.tags.iloc[0]))) == []
