"""Review store: real SQLite in WAL mode, upsert per (pair, reviewer), concurrent writers lose nothing."""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
import sqlite3
import threading

import pandas as pd
import pytest

from biascore.review.store import VERDICTS, ReviewError, ReviewStore

REPO = Path(__file__).resolve().parent.parent


def test_save_read_back_and_reload(tmp_path):
    db = tmp_path / "sub" / "reviews.sqlite"
    store = ReviewStore(db)
    store.save("crows-tl", 3, "Ana", "translation problem", "  'babae' should be 'mga babae' <b>  ")
    store.save("crows-tl", 4, "Ana", "fine")
    again = ReviewStore(db)  # a reload: a fresh object on the same file
    r = again.get("crows-tl", 3, "Ana")
    assert (r.verdict, r.note) == ("translation problem", "'babae' should be 'mga babae' <b>")
    frame = again.reviews("crows-tl")
    assert list(frame.pair_id) == [3, 4] and list(frame.verdict) == ["translation problem", "fine"]
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_upsert_replaces_only_the_same_reviewer(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.save("crows-tl", 1, "Ana", "fine")
    store.save("crows-tl", 1, "Ben", "wrong bias label", "gender, not SO")
    store.save("crows-tl", 1, "Ana", "not a minimal pair", "changed verb too")
    frame = store.reviews("crows-tl")
    assert len(frame) == 2
    assert dict(zip(frame.reviewer, frame.verdict)) == {"Ana": "not a minimal pair", "Ben": "wrong bias label"}
    assert store.progress("crows-tl", 204) == {"reviewed": 1, "total": 204, "share": 1 / 204}
    assert store.progress("crows-tl", 204, reviewer="Ana")["reviewed"] == 1
    assert len(store.reviews("crows-tl", verdict="wrong bias label")) == 1
    assert store.reviews("demo").empty


def test_csv_export_round_trips(tmp_path):
    store = ReviewStore(tmp_path / "r.sqlite")
    store.save("demo", 7, "Ana", "culturally irrelevant", 'comma, "quote" and\nnewline')
    back = pd.read_csv(io.BytesIO(store.to_csv("demo")), keep_default_na=False)
    assert back.loc[0, "note"] == 'comma, "quote" and\nnewline'
    assert list(back.columns) == ["benchmark", "pair_id", "reviewer", "verdict", "note", "updated_at"]


@pytest.mark.parametrize("kwargs,fragment", [
    (dict(reviewer="  ", verdict="fine"), "enter your name"),
    (dict(reviewer="Ana", verdict="great"), "unknown verdict"),
    (dict(reviewer="Ana", verdict="fine", note="x" * 5001), "limit is 5000"),
    (dict(reviewer="A" * 101, verdict="fine"), "longer than 100"),
])
def test_bad_input_is_refused_and_stores_nothing(tmp_path, kwargs, fragment):
    store = ReviewStore(tmp_path / "r.sqlite")
    with pytest.raises(ReviewError, match=fragment):
        store.save("demo", 1, **kwargs)
    assert store.reviews().empty


def test_bad_paths_give_clear_errors(tmp_path):
    with pytest.raises(ReviewError, match="is a folder"):
        ReviewStore(tmp_path)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(ReviewError, match="cannot open review database"):
        ReviewStore(junk)


def _writer(db: str, reviewer: str, n: int) -> None:
    store = ReviewStore(db)
    for i in range(n):
        store.save("crows-tl", i, reviewer, VERDICTS[i % len(VERDICTS)], f"{reviewer} note {i}")


def test_two_processes_writing_at_once_lose_nothing(tmp_path):
    db = str(tmp_path / "r.sqlite")
    ReviewStore(db)
    # two separate Python interpreters (not multiprocessing: its spawn re-imports __main__, which AppTest
    # may have left pointing at a page script)
    code = ("import sys; from biascore.review.store import ReviewStore, VERDICTS; s = ReviewStore(sys.argv[1]); "
            "[s.save('crows-tl', i, sys.argv[2], VERDICTS[i % len(VERDICTS)], f'{sys.argv[2]} note {i}') "
            "for i in range(150)]")
    procs = [subprocess.Popen([sys.executable, "-c", code, db, name], cwd=REPO) for name in ("Ana", "Ben")]
    for p in procs:
        assert p.wait(timeout=120) == 0
    frame = ReviewStore(db).reviews("crows-tl")
    assert len(frame) == 300
    for name in ("Ana", "Ben"):
        mine = frame[frame.reviewer == name]
        assert list(mine.pair_id) == list(range(150))
        assert list(mine.note) == [f"{name} note {i}" for i in range(150)]


def test_threads_writing_the_same_pairs_lose_nothing(tmp_path):
    db = tmp_path / "r.sqlite"
    errors = []

    def run(name):
        try:
            _writer(str(db), name, 60)
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
