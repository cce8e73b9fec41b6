"""Translation review page (AppTest): reviews with tags and corrections written to and read back from SQLite, two
reviewers at once, agreement and adjudication, the corrected benchmark and B before/after from the engine; public
mode offers no database path; a typed path creates nothing before Save; non-review files are refused in one line."""
from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from biascore.models.names import display_name
from biascore.inputs.datasets import load_benchmark
from biascore.runs import runner
from biascore.methods import get
from biascore.review.agreement import agreement
from biascore.review.corrections import before_after, corrected_frame, final_decisions, reviewable_pairs
from biascore.review.store import ReviewStore

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tiny_demo(tiny_mlm):
    """The demo benchmark scored with the tiny MLM (the page's model in these tests: fast on a shared CPU)."""
    torch.set_num_threads(1)
    return runner.run(get("attribution"), tiny_mlm, "demo").frame


def open_review(model: str, db: Path | None = None, reviewer: str = "") -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.query_params.update({"benchmark": "demo", "model": model})
    at.run()
    at.switch_page("views/pages/translation_review.py")
    at.run()
    if db is not None:
        at.text_input(key="tr_db").set_value(str(db)).run()
    if reviewer:
        at.text_input(key="tr_reviewer").set_value(reviewer).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def widget(elements, prefix: str, suffix: str):
    return next(w for w in elements if (w.key or "").startswith(prefix) and w.key.endswith(suffix))


def fill_review(at: AppTest, status: str, tags=(), comment: str = "", more: str | None = None) -> None:
    widget(at.radio, "tr_form_", "_status").set_value(status)
    widget(at.multiselect, "tr_form_", "_tags").set_value(list(tags))
    widget(at.text_area, "tr_form_", "_comment").set_value(comment)
    if more is not None:
        widget(at.text_input, "tr_form_", "_more").set_value(more)


def press(at: AppTest, label: str) -> None:
    next(b for b in at.button if b.label == label).click().run()
    assert not at.exception, [e.value for e in at.exception]


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if column in df.value.columns)


def test_review_is_saved_with_tags_and_correction_and_read_back(tiny_demo, tiny_mlm, tmp_path):
    db = tmp_path / "reviews.sqlite"
    at = open_review(tiny_mlm.name, db, "Ana")
    pair_id = int(at.selectbox(key="tr_pair").value)
    # the Filipino heatmap shows the engine's S_JSD for this pair
    assert f"{tiny_demo.loc[tiny_demo.pair_id == pair_id].iloc[0].sjsd:+.5f}" in [m.value for m in at.metric]
    original = reviewable_pairs(load_benchmark("demo")).set_index("pair_id").loc[pair_id]
    assert f"more-biased: {original.sent_more}" in [t.value.splitlines()[0] for t in at.text]  # literal text
    fixed = "Ang [link](http://x) ay mali."
    fill_review(at, "needs correction", ["mistranslation"], "'<b>mga</b>' missing", more=fixed)
    press(at, "Save review")
    assert any("Saved: pair" in s.value for s in at.success)
    stored = ReviewStore(db).reviews("demo")
    columns = ["pair_id", "reviewer", "status", "tags", "comment", "corrected_more", "corrected_less"]
    assert stored[columns].values.tolist() == [  # the unchanged less-biased sentence is stored empty
        [pair_id, "Ana", "needs correction", ("mistranslation",), "'<b>mga</b>' missing", fixed, ""]]
    # a reload (new session) shows everything saved: progress, the form prefilled
    again = open_review(tiny_mlm.name, db, "Ana")
    assert "1 of 16" in again.get("progress")[0].proto.text
    assert widget(again.radio, "tr_form_", "_status").value == "needs correction"
    assert widget(again.multiselect, "tr_form_", "_tags").value == ["mistranslation"]
    assert widget(again.text_input, "tr_form_", "_more").value == "Ang [link](http://x) ay mali."
    again.selectbox(key="tr_filter").set_value("status: needs correction").run()
    assert [int(o.split(":")[0]) for o in again.selectbox(key="tr_pair").options] == [pair_id]
    again.selectbox(key="tr_filter").set_value("status: reject").run()
    assert any("No pair matches" in i.value for i in again.info)


def test_two_reviewers_disagree_then_adjudicate_export_and_compare_b(tiny_demo, tiny_mlm, tmp_path, monkeypatch):
    monkeypatch.setenv("BIASCORE_ADJUDICATORS", "Cara")  # the server names its adjudicator
    db = tmp_path / "reviews.sqlite"
    pages = {name: open_review(tiny_mlm.name, db, name) for name in ("Ana", "Ben")}
    pair_id = int(pages["Ana"].selectbox(key="tr_pair").value)
    errors = []

    def review(name, status, more):
        try:
            fill_review(pages[name], status, more=more)
            press(pages[name], "Save review")
        except Exception as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=review, args=("Ana", "accept", None)),
               threading.Thread(target=review, args=("Ben", "needs correction", "Itinamang pangungusap."))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    stored = ReviewStore(db).reviews("demo")
    assert sorted(stored.reviewer) == ["Ana", "Ben"] and set(stored.pair_id) == {pair_id}

    pairs = reviewable_pairs(load_benchmark("demo"))
    others = [int(p) for p in pairs.pair_id if p != pair_id][:2]
    for name in ("Ana", "Ben"):  # two pairs on which they agree: Ana A,A,R; Ben N,A,R → κ = (2/3 − 1/3)/(2/3)
        ReviewStore(db).save("demo", others[0], name, "accept")
        ReviewStore(db).save("demo", others[1], name, "reject")
    at = open_review(tiny_mlm.name, db, "Cara")
    shown = frame_with(at, "kappa")
    pd.testing.assert_frame_equal(shown, agreement(ReviewStore(db).reviews("demo"), pairs), check_dtype=False)
    assert shown.kappa.iloc[0] == pytest.approx(0.5)
    todo = frame_with(at, "why")
    assert todo[["pair_id", "why", "adjudicated"]].values.tolist() == [[pair_id, "different statuses", False]]
    assert frame_with(at, "unresolved").iloc[0].to_dict()["unresolved"] == 1
    # Cara adjudicates: needs correction with the corrected sentence
    widget(at.radio, "tr_adj_", "_status").set_value("needs correction")
    widget(at.text_input, "tr_adj_", "_more").set_value("Itinamang pangungusap ng tagapagpasya.")
    press(at, "Save decision")
    assert any("Decision saved" in s.value for s in at.success)
    adj = ReviewStore(db).adjudications("demo")
    assert adj[["pair_id", "status", "corrected_more", "adjudicator"]].values.tolist() == [
        [pair_id, "needs correction", "Itinamang pangungusap ng tagapagpasya.", "Cara"]]
    assert frame_with(at, "why").adjudicated.tolist() == [True]
    counts = frame_with(at, "unresolved").iloc[0].to_dict()
    assert counts == {"accept": 1, "needs correction": 1, "reject": 1, "unresolved": 0, "correction not written": 0,
                      "unreviewed": 13}
    # B before/after for the chosen model, as the engine computes it
    press(at, "Compare B before and after the corrections")
    table = frame_with(at, "B_after")
    corrected = corrected_frame(pairs, final_decisions(pairs.pair_id, ReviewStore(db).reviews("demo"), adj))
    expected = before_after(tiny_mlm, load_benchmark("demo"), corrected)
    assert table.B_after.tolist() == pytest.approx(expected.B_after.tolist(), nan_ok=True)
    assert table.B_before.tolist() == pytest.approx(expected.B_before.tolist(), nan_ok=True)
    # two pairs are kept (accepted, corrected), but the corrected sentence shares only the final "." with its
    # partner: the engine skips it as "shares only punctuation: not a minimal pair", so one pair is scored
    assert table.n_after.iloc[0] == 1 and table.B_before.iloc[0] == pytest.approx(
        100 * tiny_demo[tiny_demo.pair_id.isin(pairs.pair_id) & (tiny_demo.skipped_reason == "")].biased.mean())


# ------------------------------------------------------------------------------------ nothing created before Save
def test_typed_path_creates_nothing_before_save(tiny_demo, tiny_mlm, tmp_path):
    db = tmp_path / "new" / "folder" / "reviews.sqlite"
    at = open_review(tiny_mlm.name, db, "Ana")
    assert any("created when you press Save" in i.value for i in at.info)
    fill_review(at, "reject", ["other"], "typed, not saved")
    at.selectbox(key="tr_filter").set_value("not reviewed by me").run()
    at.selectbox(key="tr_filter").set_value("all pairs").run()
    assert list(tmp_path.iterdir()) == []  # no folder, no file
    fill_review(at, "reject", ["other"], "now saved")
    press(at, "Save review")
    assert sorted(p.name for p in db.parent.iterdir()) == ["reviews.sqlite"]
    assert ReviewStore(db).reviews().comment.tolist() == ["now saved"]


@pytest.mark.parametrize("kind", ["empty", "other-app"])
def test_a_file_that_is_not_a_review_database_is_refused_in_one_line(tiny_mlm, tmp_path, kind):
    target = tmp_path / "file.sqlite"
    if kind == "empty":
        target.touch()
    else:
        with sqlite3.connect(target) as con:
            con.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
        con.close()
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    at = open_review(tiny_mlm.name, target, "Ana")
    assert len(at.error) == 1 and "\n" not in at.error[0].value
    assert ("empty file" if kind == "empty" else "not a review database") in at.error[0].value
    assert not [b for b in at.button if b.label == "Save review"]  # nothing offered that could write
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_folder_is_explained(tiny_mlm, tmp_path):
    at = open_review(tiny_mlm.name, tmp_path)
    assert any("is a folder" in e.value for e in at.error)


def test_public_mode_offers_no_path_and_saves_to_the_servers_database(tiny_demo, tiny_mlm, tmp_path, monkeypatch):
    server_db = tmp_path / "server" / "reviews.sqlite"
    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    monkeypatch.setenv("BIASCORE_REVIEW_DB", str(server_db))
    monkeypatch.setenv("BIASCORE_MODELS", tiny_mlm.name)
    at = open_review(tiny_mlm.name, reviewer="Ana")
    assert [t.label for t in at.text_input if "sqlite" in t.label.lower() or "path" in t.label.lower()
            or "file" in t.label.lower()] == []
    assert "tr_db" not in [t.key for t in at.text_input]
    # the allow-list, by display name (no server path), and no "other…" free name
    assert at.selectbox(key="model_select").options == [display_name(tiny_mlm.name)]
    assert "model_custom" not in [t.key for t in at.text_input]
    assert not (tmp_path / "server").exists()  # nothing created before Save
    fill_review(at, "accept", comment="public")
    press(at, "Save review")
    assert ReviewStore(server_db).reviews().comment.tolist() == ["public"]
    # a broken server database: one line, no server path
    server_db.unlink()
    server_db.write_bytes(b"not sqlite" * 20)
    at = open_review(tiny_mlm.name, reviewer="Ana")
    assert len(at.error) == 1 and "server" not in at.error[0].value and "not a SQLite file" in at.error[0].value


def test_a_database_from_the_previous_version_is_shown_and_upgraded_by_save(tiny_demo, tiny_mlm, tmp_path):
    db = tmp_path / "old.sqlite"
    with sqlite3.connect(db) as con:  # the version-0 schema (tests/review/test_review_store.py migrates the real old code)
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE IF NOT EXISTS reviews (benchmark TEXT NOT NULL, pair_id INTEGER NOT NULL, "
                    "reviewer TEXT NOT NULL, verdict TEXT NOT NULL, note TEXT NOT NULL DEFAULT '', "
                    "updated_at TEXT NOT NULL, PRIMARY KEY (benchmark, pair_id, reviewer))")
        con.execute("INSERT INTO reviews VALUES ('demo', 22, 'Ana', 'translation problem', 'old note', "
                    "'2025-06-01T12:00:00+00:00')")
    con.close()
    before = db.read_bytes()
    at = open_review(tiny_mlm.name, db, "Ana")
    assert int(at.selectbox(key="tr_pair").value) == 22
    assert any("earlier version" in i.value for i in at.info)
    assert widget(at.radio, "tr_form_", "_status").value == "needs correction"
    assert widget(at.multiselect, "tr_form_", "_tags").value == ["mistranslation"]
    assert widget(at.text_area, "tr_form_", "_comment").value == "old note"
    assert db.read_bytes() == before and sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]
    fill_review(at, "accept", comment="checked again")
    press(at, "Save review")
    assert ReviewStore(db).state().kind == "current"
    assert ReviewStore(db).get("demo", 22, "Ana").comment == "checked again"


# ------------------------------------------------------------------------------------ blind review, adjudicators
ANA, SECRET, FIX = "Ana-7731", "Ana's private note 7731", "Ang lihim na pagwawasto ni Ana."


def shown(at: AppTest) -> str:
    """Everything the page shows a person as text: text elements, alerts, captions, headings, tables, widget values
    and labels (download buttons included); not the fixed option lists of radios and multiselects."""
    parts = []
    for kind in ("title", "header", "subheader", "text", "markdown", "caption", "info", "success", "warning", "error"):
        parts += [str(e.value) for e in getattr(at, kind)]
    parts += [df.value.to_csv() for df in at.dataframe]
    parts += [str(w.value) for kind in ("text_input", "text_area", "selectbox") for w in getattr(at, kind)]
    parts += [w.label for w in at.button] + [w.proto.label for w in at.get("download_button")]
    return "\n".join(parts)


def _ana_reviews_first_pair(model: str, db: Path) -> int:
    at = open_review(model, db, ANA)
    fill_review(at, "needs correction", ["mistranslation", "wrong bias type"], SECRET, more=FIX)
    press(at, "Save review")
    return int(at.selectbox(key="tr_pair").value)


@pytest.mark.parametrize("keep_blind", [False, True])
def test_a_reviewer_sees_none_of_anothers_review_before_saving_and_sees_it_after(tiny_demo, tiny_mlm, tmp_path,
                                                                                 monkeypatch, keep_blind):
    if keep_blind:
        monkeypatch.setenv("BIASCORE_REVIEW_KEEP_BLIND", "1")
    db = tmp_path / "reviews.sqlite"
    pair_id = _ana_reviews_first_pair(tiny_mlm.name, db)
    ben = open_review(tiny_mlm.name, db, "Ben")
    assert int(ben.selectbox(key="tr_pair").value) == pair_id  # the same pair, open
    before = shown(ben)
    for leak in (ANA, SECRET, FIX, "wrong bias type"):
        assert leak not in before, leak
    assert not [df for df in ben.dataframe if "reviewer" in df.value.columns]  # no table of reviews
    assert any("shown once you have saved yours" in i.value or "adjudicators only" in i.value for i in ben.info)
    assert frame_with(ben, "alpha").alpha_pairs.tolist() == [0]  # agreement from what Ben may see: nothing
    assert frame_with(ben, "unreviewed").iloc[0].to_dict()["unreviewed"] == 16
    assert "Download the reviews you can see (0, CSV)" in before
    assert "Download the dataset" not in before  # the dataset download is the adjudicators'
    ben.selectbox(key="tr_filter").set_value("status: needs correction").run()
    assert any("No pair matches" in i.value for i in ben.info)  # the filter does not reveal Ana's status
    ben.selectbox(key="tr_filter").set_value("all pairs").run()

    fill_review(ben, "accept", comment="Ben's own view")
    press(ben, "Save review")
    after = shown(ben)
    if keep_blind:  # the server keeps reviews blind: still nothing of Ana's
        for leak in (ANA, SECRET, FIX):
            assert leak not in after, leak
        assert "Download the reviews you can see (1, CSV)" in after
        return
    table = frame_with(ben, "reviewer")
    assert table[["reviewer", "status", "tags", "comment", "corrected_more"]].values.tolist() == [
        [ANA, "needs correction", "mistranslation; wrong bias type", SECRET, FIX],
        ["Ben", "accept", "", "Ben's own view", ""]]
    assert frame_with(ben, "why")[["pair_id", "why"]].values.tolist() == [[pair_id, "different statuses"]]
    assert "Download the reviews you can see (2, CSV)" in after
    assert not [b for b in ben.button if b.label in ("Save decision", "Assign pairs")]  # Ben adjudicates nothing


def test_an_adjudicator_sees_everything_assigns_and_follows_progress(tiny_demo, tiny_mlm, tmp_path, monkeypatch):
    monkeypatch.setenv("BIASCORE_ADJUDICATORS", "Cara, Dan")
    db = tmp_path / "reviews.sqlite"
    pair_id = _ana_reviews_first_pair(tiny_mlm.name, db)
    ReviewStore(db).save("demo", pair_id, "Ben", "reject", ["other"], "Ben disagrees")
    cara = open_review(tiny_mlm.name, db, "Cara")  # Cara reviewed nothing and sees every review
    seen = shown(cara)
    for text in (ANA, SECRET, FIX, "Ben disagrees"):
        assert text in seen, text
    assert any("You are an adjudicator" in t.value for t in cara.text)
    assert frame_with(cara, "why").pair_id.tolist() == [pair_id]
    # Cara splits the benchmark: every pair to two of three reviewers
    cara.text_input(key="tr_assign_reviewers").set_value(f"{ANA}, Ben, Cy")
    cara.number_input(key="tr_assign_overlap").set_value(2)
    press(cara, "Assign pairs")
    assert any("Assigned: 32 added" in s.value for s in cara.success)
    assigned = ReviewStore(db).assignments("demo")
    assert assigned.groupby("pair_id").size().tolist() == [2] * 16
    loads = assigned.groupby("reviewer").size()
    assert loads.max() - loads.min() <= 1 and set(loads.index) == {ANA, "Ben", "Cy"}
    overview = frame_with(cara, "alpha_without").set_index("reviewer")
    assert overview.loc[ANA, ["assigned", "reviewed"]].tolist() == [int(loads[ANA]), 1]
    assert overview.loc["Cy", "reviewed"] == 0
    # Cara decides the disagreement
    widget(cara.radio, "tr_adj_", "_status").set_value("accept")
    press(cara, "Save decision")
    assert ReviewStore(db).adjudications("demo")[["pair_id", "adjudicator"]].values.tolist() == [[pair_id, "Cara"]]


def test_my_next_pair_and_my_progress(tiny_demo, tiny_mlm, tmp_path):
    db = tmp_path / "reviews.sqlite"
    ReviewStore(db).assign("demo", reviewable_pairs(load_benchmark("demo")).pair_id, ["Ana", "Ben"], 1, seed=2)
    mine = sorted(ReviewStore(db).assignments("demo").query("reviewer == 'Ana'").pair_id)
    at = open_review(tiny_mlm.name, db, "Ana")
    assert "Your assigned pairs: 0 of 8 reviewed" in at.get("progress")[1].proto.text
    press(at, "My next pair")
    assert at.selectbox(key="tr_filter").value == "my assigned pairs, not reviewed yet"
    assert int(at.selectbox(key="tr_pair").value) == mine[0]
    assert [int(o.split(":")[0]) for o in at.selectbox(key="tr_pair").options] == mine
    fill_review(at, "accept")
    press(at, "Save review")
    assert int(at.selectbox(key="tr_pair").value) == mine[1]  # the saved pair left the to-do list
    assert "Your assigned pairs: 1 of 8 reviewed" in at.get("progress")[1].proto.text
    assert ReviewStore(db).get("demo", mine[0], "Ana").status == "accept"
