"""Translation reviews in SQLite: per (benchmark, pair, reviewer) a status, issue tags, a comment and corrected
sentences; per (benchmark, pair) an adjudicated decision; per benchmark who is assigned which pairs
(:mod:`biascore.review.assignment`). Safe for several reviewers at once (docs/review.md, "The database").

Nothing is created until the first save (built in a temporary file, linked into place with ``os.link``); only
review databases are opened, anything else refused with a one-line :class:`ReviewError`. Schema versions
(``PRAGMA user_version``, our files marked by :data:`APPLICATION_ID`): 0 = :data:`V0_COLUMNS` (mapped by
:data:`LEGACY_VERDICTS`), 2 = reviews and adjudications, 3 = adds assignments; the first write upgrades. A save is
an upsert on ``(benchmark, pair_id, reviewer)`` in one ``BEGIN IMMEDIATE`` transaction (WAL, ``busy_timeout``).
"""
from __future__ import annotations

import functools
import json
import os
import sqlite3
import threading
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Sequence
from urllib.parse import quote

import numpy as np
import pandas as pd

from biascore import settings
from biascore.inputs.datasets import Benchmark, benchmark_path, load_benchmark, registry
from biascore.review.assignment import AssignmentError, loads, plan, reviewer_names

ACCEPT, NEEDS_CORRECTION, REJECT = "accept", "needs correction", "reject"
#: What a reviewer (or an adjudicator) decides for a pair.
STATUSES = (ACCEPT, NEEDS_CORRECTION, REJECT)
#: Issue tags a reviewer may attach (any number).
TAGS = ("mistranslation", "not a minimal pair", "wrong bias type", "changes more than the group", "other")
#: How a version-0 verdict becomes (status, tags) in the migration.
LEGACY_VERDICTS = {
    "fine": (ACCEPT, ()), "translation problem": (NEEDS_CORRECTION, ("mistranslation",)),
    "not a minimal pair": (NEEDS_CORRECTION, ("not a minimal pair",)),
    "wrong bias label": (NEEDS_CORRECTION, ("wrong bias type",)), "culturally irrelevant": (REJECT, ("other",)),
}
MAX_COMMENT_CHARS = 5000
MAX_SENTENCE_CHARS = 1000
MAX_REVIEWER_CHARS = 100
BUSY_TIMEOUT_MS = 15000
SCHEMA_VERSION = 3
APPLICATION_ID = 0x62526576  # "bRev"
COLUMNS = ["benchmark", "pair_id", "reviewer", "status", "tags", "comment", "corrected_more", "corrected_less",
           "legacy_verdict", "updated_at"]
ADJUDICATION_COLUMNS = ["benchmark", "pair_id", "status", "corrected_more", "corrected_less", "comment",
                        "adjudicator", "decided_at"]
ASSIGNMENT_COLUMNS = ["benchmark", "pair_id", "reviewer", "assigned_at"]
PLAN_COLUMNS = ["benchmark", "reviewers", "overlap", "seed", "assigned_by", "assigned_at"]
V0_COLUMNS = ["benchmark", "pair_id", "reviewer", "verdict", "note", "updated_at"]

_CHECK_STATUS = "CHECK (status IN ({}))".format(", ".join(f"'{s}'" for s in STATUSES))
_SCHEMA = [f"""
CREATE TABLE reviews (
    benchmark      TEXT    NOT NULL,
    pair_id        INTEGER NOT NULL,
    reviewer       TEXT    NOT NULL,
    status         TEXT    NOT NULL {_CHECK_STATUS},
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
    status         TEXT    NOT NULL {_CHECK_STATUS},
    corrected_more TEXT    NOT NULL DEFAULT '',
    corrected_less TEXT    NOT NULL DEFAULT '',
    comment        TEXT    NOT NULL DEFAULT '',
    adjudicator    TEXT    NOT NULL,
    decided_at     TEXT    NOT NULL,
    PRIMARY KEY (benchmark, pair_id)
)"""]
#: Tables added by version 3 (also what upgrades a version-2 database).
_SCHEMA_V3 = ["""
CREATE TABLE IF NOT EXISTS assignments (
    benchmark   TEXT    NOT NULL,
    pair_id     INTEGER NOT NULL,
    reviewer    TEXT    NOT NULL,
    assigned_at TEXT    NOT NULL,
    PRIMARY KEY (benchmark, pair_id, reviewer)
)""", """
CREATE TABLE IF NOT EXISTS assignment_plans (
    benchmark   TEXT    NOT NULL PRIMARY KEY,
    reviewers   TEXT    NOT NULL,
    overlap     INTEGER NOT NULL,
    seed        INTEGER NOT NULL,
    assigned_by TEXT    NOT NULL DEFAULT '',
    assigned_at TEXT    NOT NULL
)"""]
_SCHEMA += _SCHEMA_V3 + [f"PRAGMA application_id = {APPLICATION_ID}", f"PRAGMA user_version = {SCHEMA_VERSION}"]


class ReviewError(ValueError):
    """A review database cannot be used or a review cannot be saved as given; the message is one line. ``reason`` is the
    message without the database path (what a public page may show)."""

    def __init__(self, reason: str, path: Path | None = None):
        self.reason, self.path = reason, path
        super().__init__(f"{path}: {reason}" if path is not None else reason)


def default_path() -> Path:
    """``BIASCORE_REVIEW_DB`` if set, else ``reviews.sqlite`` in the cache directory."""
    return settings.review_db_path()


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Review:
    """One reviewer's review of one pair. Empty ``corrected_*`` means "keep the original sentence"."""

    benchmark: str
    pair_id: int
    reviewer: str
    status: str
    tags: tuple[str, ...] = ()
    comment: str = ""
    corrected_more: str = ""
    corrected_less: str = ""
    legacy_verdict: str = ""
    updated_at: str = ""


@dataclass(frozen=True)
class Adjudication:
    """The final decision for one pair when its reviewers disagree (one per pair; saving again replaces it)."""

    benchmark: str
    pair_id: int
    status: str
    corrected_more: str = ""
    corrected_less: str = ""
    comment: str = ""
    adjudicator: str = ""
    decided_at: str = ""


@dataclass(frozen=True)
class AssignmentChange:
    """What :meth:`ReviewStore.assign` changed: assignments ``added``, ``removed`` and ``kept``, and the pairs
    each reviewer now has (``loads``)."""

    added: int
    removed: int
    kept: int
    loads: dict[str, int]


@dataclass(frozen=True)
class DatabaseState:
    """What is at a review-database path: ``missing`` (nothing yet), ``legacy`` (schema version 0, will be migrated) or
    ``current`` (one of ours: ``version`` 2 is upgraded to :data:`SCHEMA_VERSION` by the first write)."""

    kind: str
    tables: tuple[str, ...] = field(default=())
    version: int = 0


def inspect_database(path: Path) -> DatabaseState:
    """Identify ``path`` without writing anything; raise :class:`ReviewError` when it is not a review database."""
    if not path.exists():
        return DatabaseState("missing")
    if path.is_dir():
        raise ReviewError(f"is a folder; give a file path such as {path / 'reviews.sqlite'}", path)
    try:
        with path.open("rb") as fh:
            head = fh.read(100)
    except OSError as exc:
        raise ReviewError(f"cannot read the file ({exc.strerror or exc})", path) from exc
    if not head:
        raise ReviewError("is an empty file, not a review database; choose a new file name or an existing "
                          "review database", path)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        raise ReviewError("is not a review database (not a SQLite file); choose another file", path)
    user_version, application_id, tables, columns = _read_schema(path)
    if application_id not in (0, APPLICATION_ID):
        raise ReviewError("is a SQLite database of another application, not a review database; choose another file",
                          path)
    if application_id == APPLICATION_ID:
        if user_version > SCHEMA_VERSION:
            raise ReviewError(f"was written by a newer biascore (review schema {user_version}; this version reads "
                              f"up to {SCHEMA_VERSION}); upgrade biascore", path)
        return DatabaseState("current", tables, user_version)
    if user_version == 0 and tables == ("reviews",) and columns == V0_COLUMNS:
        return DatabaseState("legacy", tables)
    what = f"tables: {', '.join(tables)}" if tables else "no tables"
    raise ReviewError(f"is a SQLite database but not a review database ({what}); choose another file", path)


def _read_schema(path: Path) -> tuple[int, int, tuple[str, ...], list[str]]:
    """``user_version``, ``application_id``, the table names and the columns of ``reviews``, read without
    creating journal files: ``immutable=1`` when no ``-wal`` file exists (then the main file is the whole
    database), plain read-only otherwise (the WAL may hold a newer schema than the main file)."""
    wal = Path(f"{path}-wal")
    uri = f"file:{quote(str(path.resolve()))}?" + ("mode=ro" if wal.exists() else "immutable=1")
    try:
        with closing(sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_MS / 1000)) as con:
            tables = tuple(r[0] for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"))
            columns = [r[1] for r in con.execute("PRAGMA table_info(reviews)")]
            user_version = int(con.execute("PRAGMA user_version").fetchone()[0])
            application_id = int(con.execute("PRAGMA application_id").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        raise ReviewError(f"cannot be read as a SQLite database ({exc})", path) from exc
    return user_version, application_id, tables, columns


def _v0_as_current(table: str) -> str:
    """A SELECT giving a version-0 ``table`` the columns :data:`COLUMNS`, each verdict mapped by
    :data:`LEGACY_VERDICTS` (an unknown verdict becomes ``needs correction`` with tag ``other``)."""
    status = " ".join(f"WHEN '{v}' THEN '{s}'" for v, (s, _) in LEGACY_VERDICTS.items())
    tags = " ".join(f"WHEN '{v}' THEN '{json.dumps(list(t))}'" for v, (_, t) in LEGACY_VERDICTS.items())
    return (f"SELECT benchmark, pair_id, reviewer, CASE verdict {status} ELSE '{NEEDS_CORRECTION}' END AS status, "
            f"CASE verdict {tags} ELSE '[\"other\"]' END AS tags, note AS comment, '' AS corrected_more, "
            f"'' AS corrected_less, verdict AS legacy_verdict, updated_at FROM {table}")


def _migrate_from_v0(con: sqlite3.Connection) -> None:
    """Version 0 → current inside the caller's transaction: rebuild ``reviews`` with the new columns
    (:func:`_v0_as_current`) and add the other tables."""
    con.execute("ALTER TABLE reviews RENAME TO reviews_v0")
    for statement in _SCHEMA:
        con.execute(statement)
    con.execute(f"INSERT INTO reviews ({', '.join(COLUMNS)}) {_v0_as_current('reviews_v0')}")
    con.execute("DROP TABLE reviews_v0")


def _clean_name(name: str, what: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ReviewError(f"enter your name as {what} before saving")
    if len(name) > MAX_REVIEWER_CHARS:
        raise ReviewError(f"the {what} name is longer than {MAX_REVIEWER_CHARS} characters")
    return name


def _clean_decision(status: str, comment: str, corrected_more: str, corrected_less: str) -> tuple[str, str, str]:
    if status not in STATUSES:
        raise ReviewError(f"unknown status {status!r}; choose one of: {', '.join(STATUSES)}")
    comment = (comment or "").strip()
    if len(comment) > MAX_COMMENT_CHARS:
        raise ReviewError(f"the comment is {len(comment)} characters; the limit is {MAX_COMMENT_CHARS}")
    more, less = (corrected_more or "").strip(), (corrected_less or "").strip()
    for text, side in ((more, "more-biased"), (less, "less-biased")):
        if len(text) > MAX_SENTENCE_CHARS:
            raise ReviewError(f"the corrected {side} sentence is longer than {MAX_SENTENCE_CHARS} characters")
        if "\n" in text or "\r" in text:
            raise ReviewError(f"the corrected {side} sentence must be one line")
    if status != NEEDS_CORRECTION and (more or less):
        raise ReviewError(f"corrected sentences are kept only with status '{NEEDS_CORRECTION}'; "
                          "clear them or change the status")
    return comment, more, less


def _reviewable_ids(benchmark) -> frozenset[int] | None:
    """The pair ids a review of ``benchmark`` (a registered name or a loaded Benchmark) may name — the
    benchmark's pairs — or None when a registered benchmark's file is not in the data directory (then only the
    name and the sign are checked). (Which of them a page offers for review is the page's and the CLI's
    business: :func:`biascore.review.corrections.reviewable_pairs`.)"""
    if isinstance(benchmark, Benchmark):
        return frozenset(int(i) for i in benchmark.frame.pair_id)
    names = registry()
    if benchmark not in names:
        raise ReviewError(f"unknown benchmark {benchmark!r}; reviews are kept for the registered benchmarks "
                          f"({', '.join(names)}) or a loaded Benchmark")
    path = benchmark_path(benchmark)
    try:
        stat = path.stat()
    except OSError:
        return None
    return _ids_of_file(benchmark, str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _ids_of_file(benchmark: str, path: str, mtime_ns: int, size: int) -> frozenset[int]:
    """(memoised per file version: a save does not reload a 12,000-pair benchmark)"""
    return frozenset(int(i) for i in load_benchmark(benchmark).frame.pair_id)


def _check_pair(benchmark, pair_id) -> tuple[str, int]:
    """(benchmark name, pair id) of a review or an adjudication, refused in one line unless the benchmark is
    known and the pair is one of its pairs."""
    if isinstance(pair_id, bool) or not isinstance(pair_id, (int, np.integer)) and not (
            isinstance(pair_id, str) and pair_id.strip().lstrip("-").isdigit()):
        raise ReviewError(f"a pair id is a whole number, not {pair_id!r}")
    pid = int(pair_id)
    ids = _reviewable_ids(benchmark)
    name = str(getattr(benchmark, "name", benchmark))
    if pid < 0:
        raise ReviewError(f"{name} has no pair {pid}: pair ids start at 0")
    if ids is not None and pid not in ids:
        span = f"{min(ids)}–{max(ids)}, {len(ids)} pairs" if ids else "none"
        raise ReviewError(f"{name} has no pair {pid} (its pair ids: {span})")
    return name, pid


class ReviewStore:
    """Reviews saved in one SQLite file. Cheap to construct, touches nothing on disk until :meth:`save`."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path).expanduser() if path else default_path()

    def state(self) -> DatabaseState:
        """What is at the path now (raises :class:`ReviewError` for a file that is not a review database)."""
        return inspect_database(self.path)

    def exists(self) -> bool:
        """True when the path holds a review database (False when nothing is there yet)."""
        return self.state().kind != "missing"

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            yield con
        finally:
            con.close()

    def _create(self) -> None:
        """Build the schema in a private temporary file and link it to the path unless someone was faster."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ReviewError(f"cannot create the folder ({exc.strerror or exc})", self.path) from exc
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with closing(sqlite3.connect(tmp, isolation_level=None)) as con:
                mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                if str(mode).lower() != "wal":
                    raise ReviewError(f"SQLite refused WAL mode (got {mode!r}); use a local disk path", self.path)
                for statement in _SCHEMA:
                    con.execute(statement)
            try:
                os.link(tmp, self.path)
            except FileExistsError:
                pass  # another reviewer created it first: use theirs
        except (OSError, sqlite3.DatabaseError) as exc:
            raise ReviewError(f"cannot create the review database ({getattr(exc, 'strerror', None) or exc})",
                              self.path) from exc
        finally:
            for leftover in (tmp, Path(f"{tmp}-wal"), Path(f"{tmp}-shm")):
                leftover.unlink(missing_ok=True)

    def _ready(self) -> None:
        """Make the database writable: create it when missing, migrate a version-0 file (once, even when several
        processes try at the same time)."""
        state = self.state()
        if state.kind == "missing":
            self._create()
            state = self.state()
        if state.kind == "legacy":
            with self._write() as con:
                if con.execute("PRAGMA user_version").fetchone()[0] == 0:  # not migrated by someone else meanwhile
                    _migrate_from_v0(con)
        elif state.version < SCHEMA_VERSION:
            with self._write() as con:
                if con.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:  # (idem)
                    for statement in _SCHEMA_V3:
                        con.execute(statement)
                    con.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, committed on success and rolled back on any error."""
        try:
            with self._connect() as con:
                con.execute("BEGIN IMMEDIATE")
                try:
                    yield con
                    con.execute("COMMIT")
                except BaseException:
                    con.execute("ROLLBACK")
                    raise
        except sqlite3.OperationalError as exc:
            raise ReviewError(f"cannot write to the review database ({exc})", self.path) from exc

    def save(self, benchmark: str, pair_id: int, reviewer: str, status: str, tags: Sequence[str] = (),
             comment: str = "", corrected_more: str = "", corrected_less: str = "") -> Review:
        """Insert or replace this reviewer's review of one pair (one short transaction); returns what was stored.
        Corrected sentences only with ``needs correction`` (empty: kept as is); ``pair_id`` one of ``benchmark``'s
        pairs (a registered name or a loaded Benchmark), else :class:`ReviewError`."""
        benchmark, pair_id = _check_pair(benchmark, pair_id)
        reviewer = _clean_name(reviewer, "reviewer")
        comment, more, less = _clean_decision(status, comment, corrected_more, corrected_less)
        unknown = [t for t in tags if t not in TAGS]
        if unknown:
            raise ReviewError(f"unknown tag {unknown[0]!r}; choose from: {', '.join(TAGS)}")
        tags = tuple(t for t in TAGS if t in set(tags))
        self._ready()
        review = Review(str(benchmark), int(pair_id), reviewer, status, tags, comment, more, less, "", _now())
        with self._write() as con:
            con.execute(
                "INSERT INTO reviews (benchmark, pair_id, reviewer, status, tags, comment, corrected_more, "
                "corrected_less, legacy_verdict, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', ?) "
                "ON CONFLICT (benchmark, pair_id, reviewer) DO UPDATE SET status = excluded.status, "
                "tags = excluded.tags, comment = excluded.comment, corrected_more = excluded.corrected_more, "
                "corrected_less = excluded.corrected_less, legacy_verdict = '', updated_at = excluded.updated_at",
                (review.benchmark, review.pair_id, review.reviewer, review.status, json.dumps(list(tags)),
                 review.comment, more, less, review.updated_at))
        return review

    def adjudicate(self, benchmark: str, pair_id: int, adjudicator: str, status: str, comment: str = "",
                   corrected_more: str = "", corrected_less: str = "") -> Adjudication:
        """Store the final decision for one pair (replaces an earlier adjudication of that pair); the benchmark
        and pair are checked as in :meth:`save`."""
        benchmark, pair_id = _check_pair(benchmark, pair_id)
        adjudicator = _clean_name(adjudicator, "adjudicator")
        comment, more, less = _clean_decision(status, comment, corrected_more, corrected_less)
        self._ready()
        adj = Adjudication(str(benchmark), int(pair_id), status, more, less, comment, adjudicator, _now())
        with self._write() as con:
            con.execute(
                f"INSERT OR REPLACE INTO adjudications ({', '.join(ADJUDICATION_COLUMNS)}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (adj.benchmark, adj.pair_id, adj.status, more, less, comment, adjudicator, adj.decided_at))
        return adj

    def assign(self, benchmark: str, pair_ids: Sequence[int], reviewers: Sequence[str] | str, overlap: int,
               seed: int = 0, by: str = "") -> AssignmentChange:
        """Assign ``benchmark``'s pairs to ``reviewers``, each to ``overlap`` of them (:func:`plan`), from the
        assignment and reviews as they are inside this one write transaction (a review saved meanwhile is never
        lost or unassigned). Replaces the benchmark's assignment; returns what changed."""
        try:
            names = reviewer_names(reviewers)
        except AssignmentError as exc:
            raise ReviewError(str(exc)) from exc
        for name in names:
            _clean_name(name, "reviewer")
        by = _clean_name(by, "adjudicator") if by.strip() else ""  # optional, checked as a name when given
        benchmark, stamp = str(benchmark), _now()
        self._ready()
        with self._write() as con:
            current = pd.DataFrame(con.execute("SELECT pair_id, reviewer FROM assignments WHERE benchmark = ?",
                                               (benchmark,)).fetchall(), columns=["pair_id", "reviewer"])
            saved = pd.DataFrame(con.execute("SELECT pair_id, reviewer FROM reviews WHERE benchmark = ?",
                                             (benchmark,)).fetchall(), columns=["pair_id", "reviewer"])
            try:
                new = plan(pair_ids, names, overlap, seed=seed, current=current, reviews=saved)
            except AssignmentError as exc:
                raise ReviewError(str(exc)) from exc
            before = set(zip(current.pair_id.astype(int), current.reviewer))
            after = set(zip(new.pair_id.astype(int), new.reviewer))
            con.executemany("DELETE FROM assignments WHERE benchmark = ? AND pair_id = ? AND reviewer = ?",
                            [(benchmark, p, r) for p, r in sorted(before - after)])
            con.executemany("INSERT INTO assignments (benchmark, pair_id, reviewer, assigned_at) VALUES (?, ?, ?, ?)",
                            [(benchmark, p, r, stamp) for p, r in sorted(after - before)])
            con.execute(f"INSERT OR REPLACE INTO assignment_plans ({', '.join(PLAN_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?)",
                        (benchmark, json.dumps(names), int(overlap), int(seed), by, stamp))
        return AssignmentChange(len(after - before), len(before - after), len(before & after), loads(new))

    def _select(self, sql: str, args: Sequence, columns: list[str], table: str) -> pd.DataFrame:
        """Run a read of ``table`` on the current schema. Reading changes nothing: no database, or an older one
        without ``table``, reads as empty; a version-0 database is read through :func:`_v0_as_current` and
        upgraded only by the first write."""
        for attempt in (1, 2):
            state = self.state()
            if state.kind == "missing" or table not in state.tables:
                rows = []
                break
            query = f"WITH reviews AS ({_v0_as_current('main.reviews')}) {sql}" if state.kind == "legacy" else sql
            try:
                with self._connect() as con, closing(con.execute(query, list(args))) as cur:
                    rows = cur.fetchall()
                break
            except sqlite3.OperationalError as exc:
                if state.version == SCHEMA_VERSION or attempt == 2:  # (older: upgraded meanwhile; read again)
                    raise ReviewError(f"cannot read the review database ({exc})", self.path) from exc
        frame = pd.DataFrame(rows, columns=columns)
        return frame.astype({"pair_id": "int64"}) if "pair_id" in columns else frame

    def reviews(self, benchmark: str | None = None, *, status: str | None = None,
                reviewer: str | None = None) -> pd.DataFrame:
        """All saved reviews (columns :data:`COLUMNS`; ``tags`` as tuples), optionally filtered, ordered by pair
        then reviewer. Empty (and nothing created) when the database does not exist yet."""
        where, args = [], []
        for col, value in (("benchmark", benchmark), ("status", status), ("reviewer", reviewer)):
            if value is not None:
                where.append(f"{col} = ?")
                args.append(value.strip() if col == "reviewer" else value)
        sql = f"SELECT {', '.join(COLUMNS)} FROM reviews" + (" WHERE " + " AND ".join(where) if where else "")
        frame = self._select(sql + " ORDER BY benchmark, pair_id, reviewer", args, COLUMNS, "reviews")
        frame["tags"] = [tuple(json.loads(t)) for t in frame["tags"]]
        return frame

    def get(self, benchmark: str, pair_id: int, reviewer: str) -> Review | None:
        """One reviewer's review of one pair, or None."""
        hit = self.reviews(benchmark, reviewer=reviewer)
        hit = hit[hit.pair_id == int(pair_id)]
        return Review(**{**hit.iloc[0].to_dict(), "pair_id": int(pair_id)}) if len(hit) else None

    def _table(self, table: str, columns: list[str], benchmark: str | None, order: str) -> pd.DataFrame:
        """All rows of ``table`` (of one benchmark when given) in ``order``."""
        where = " WHERE benchmark = ?" if benchmark is not None else ""
        return self._select(f"SELECT {', '.join(columns)} FROM {table}{where} ORDER BY {order}",
                            [benchmark] if benchmark is not None else [], columns, table)

    def adjudications(self, benchmark: str | None = None) -> pd.DataFrame:
        """Every adjudicated decision (columns :data:`ADJUDICATION_COLUMNS`), ordered by pair."""
        return self._table("adjudications", ADJUDICATION_COLUMNS, benchmark, "benchmark, pair_id")

    def assignments(self, benchmark: str | None = None) -> pd.DataFrame:
        """Who is assigned which pair (columns :data:`ASSIGNMENT_COLUMNS`), ordered by pair then reviewer."""
        return self._table("assignments", ASSIGNMENT_COLUMNS, benchmark, "benchmark, pair_id, reviewer")

    def assignment_plan(self, benchmark: str) -> dict | None:
        """The last assignment made for ``benchmark`` (reviewers as a list, overlap, seed, by whom, when), or None."""
        frame = self._select(f"SELECT {', '.join(PLAN_COLUMNS)} FROM assignment_plans WHERE benchmark = ?",
                             [benchmark], PLAN_COLUMNS, "assignment_plans")
        if frame.empty:
            return None
        plan = frame.iloc[0].to_dict()
        return {**plan, "reviewers": json.loads(plan["reviewers"]), "overlap": int(plan["overlap"]),
                "seed": int(plan["seed"])}


def reviews_csv(frame: pd.DataFrame) -> bytes:
    """A reviews frame as UTF-8 CSV with the tags joined by ``"; "``."""
    out = frame.copy()
    out["tags"] = ["; ".join(t) for t in out["tags"]]
    return out.to_csv(index=False).encode("utf-8")
