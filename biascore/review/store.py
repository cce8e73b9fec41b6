"""Translation reviews in SQLite: one verdict and note per (benchmark, pair, reviewer), safe for several
reviewers writing at the same time.

* The database lives at a path the user chooses (default ``<cache>/reviews.sqlite``); it is created on
  first use with the journal in WAL mode, so readers never block the writer and a crash loses nothing
  that was committed.
* Every write is one short ``BEGIN IMMEDIATE`` transaction on its own connection with a
  ``busy_timeout``: a second writer waits for the lock instead of failing, and nobody holds a
  transaction open while a human thinks.
* A save is an upsert on the primary key ``(benchmark, pair_id, reviewer)``: saving again replaces that
  reviewer's earlier verdict for the pair, and reviewers never overwrite one another.
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

import pandas as pd

from biascore.core import settings

#: The verdicts a reviewer chooses from (stored as these strings).
VERDICTS = ("fine", "translation problem", "not a minimal pair", "wrong bias label", "culturally irrelevant")
MAX_NOTE_CHARS = 5000
MAX_REVIEWER_CHARS = 100
BUSY_TIMEOUT_MS = 15000
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


class ReviewError(ValueError):
    """A review cannot be saved as given; the message says what to change."""


def default_path() -> Path:
    """``BIASCORE_REVIEW_DB`` if set, else ``reviews.sqlite`` in the cache directory."""
    return settings.review_db_path()


@dataclass(frozen=True)
class Review:
    benchmark: str
    pair_id: int
    reviewer: str
    verdict: str
    note: str = ""
    updated_at: str = ""


class ReviewStore:
    """Reviews saved in one SQLite file. Cheap to construct; opens a connection per operation."""

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path).expanduser() if path else default_path()
        if self.path.is_dir():
            raise ReviewError(f"{self.path} is a folder; give a file path such as {self.path / 'reviews.sqlite'}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as con:
                mode = con.execute("PRAGMA journal_mode=WAL").fetchone()[0]
                con.execute(_SCHEMA)
        except sqlite3.DatabaseError as exc:
            raise ReviewError(f"cannot open review database {self.path}: {exc}") from exc
        except OSError as exc:
            raise ReviewError(f"cannot create review database {self.path}: {exc}") from exc
        if str(mode).lower() != "wal":
            raise ReviewError(f"{self.path}: SQLite refused WAL mode (got {mode!r}); use a local disk path")

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        con = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        try:
            con.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            yield con
        finally:
            con.close()

    # ------------------------------------------------------------------ writes
    def save(self, benchmark: str, pair_id: int, reviewer: str, verdict: str, note: str = "") -> Review:
        """Insert or replace this reviewer's verdict for one pair (one short transaction); returns what was stored."""
        reviewer = (reviewer or "").strip()
        note = (note or "").strip()
        if not reviewer:
            raise ReviewError("enter your name as reviewer before saving")
        if len(reviewer) > MAX_REVIEWER_CHARS:
            raise ReviewError(f"the reviewer name is longer than {MAX_REVIEWER_CHARS} characters")
        if verdict not in VERDICTS:
            raise ReviewError(f"unknown verdict {verdict!r}; choose one of: {', '.join(VERDICTS)}")
        if len(note) > MAX_NOTE_CHARS:
            raise ReviewError(f"the note is {len(note)} characters; the limit is {MAX_NOTE_CHARS}")
        review = Review(str(benchmark), int(pair_id), reviewer, verdict, note,
                        datetime.now(timezone.utc).isoformat(timespec="seconds"))
        with self._connect() as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "INSERT INTO reviews (benchmark, pair_id, reviewer, verdict, note, updated_at) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (benchmark, pair_id, reviewer) DO UPDATE SET "
                    "verdict = excluded.verdict, note = excluded.note, updated_at = excluded.updated_at",
                    (review.benchmark, review.pair_id, review.reviewer, review.verdict, review.note,
                     review.updated_at))
                con.execute("COMMIT")
            except BaseException:
                con.execute("ROLLBACK")
                raise
        return review

    # ------------------------------------------------------------------ reads
    def reviews(self, benchmark: str | None = None, *, verdict: str | None = None,
                reviewer: str | None = None) -> pd.DataFrame:
        """All saved reviews (columns :data:`COLUMNS`), optionally filtered, ordered by pair then reviewer."""
        where, args = [], []
        for col, value in (("benchmark", benchmark), ("verdict", verdict), ("reviewer", reviewer)):
            if value is not None:
                where.append(f"{col} = ?")
                args.append(value)
        sql = f"SELECT {', '.join(COLUMNS)} FROM reviews"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY benchmark, pair_id, reviewer"
        with self._connect() as con, closing(con.execute(sql, args)) as cur:
            rows = cur.fetchall()
        return pd.DataFrame(rows, columns=COLUMNS).astype({"pair_id": "int64"})

    def get(self, benchmark: str, pair_id: int, reviewer: str) -> Review | None:
        """One reviewer's review of one pair, or None."""
        with self._connect() as con:
            row = con.execute(f"SELECT {', '.join(COLUMNS)} FROM reviews WHERE benchmark = ? AND pair_id = ? "
                              "AND reviewer = ?", (benchmark, int(pair_id), (reviewer or "").strip())).fetchone()
        return Review(*row) if row else None

    def progress(self, benchmark: str, total: int, reviewer: str | None = None) -> dict:
        """How many of ``total`` pairs have at least one review (by anyone, or by ``reviewer``)."""
        sql = "SELECT COUNT(DISTINCT pair_id) FROM reviews WHERE benchmark = ?"
        args: list = [benchmark]
        if reviewer:
            sql += " AND reviewer = ?"
            args.append(reviewer.strip())
        with self._connect() as con:
            done = int(con.execute(sql, args).fetchone()[0])
        return {"reviewed": done, "total": int(total), "share": done / total if total else 0.0}

    def to_csv(self, benchmark: str | None = None) -> bytes:
        """The reviews as UTF-8 CSV (what the page's download button serves)."""
        return self.reviews(benchmark).to_csv(index=False).encode("utf-8")
