"""Blind review: a reviewer sees none of another reviewer's review of a pair (status, tags, comment, corrections,
adjudication) before saving their own, and sees it after; the server can keep reviews blind; adjudicators named
by BIASCORE_ADJUDICATORS see everything; agreement and decisions built from what a reviewer may see leak
nothing of the pairs they did not review."""
from __future__ import annotations

import pandas as pd

from biascore.review.agreement import agreement, confusion, disagreements
from biascore.review.corrections import final_decisions
from biascore.review.store import ReviewStore
from biascore.review.visibility import viewer, visible

PAIRS = pd.DataFrame({"pair_id": [1, 2, 3], "bias_type": ["gender", "gender", "age"]})


def _store(tmp_path) -> ReviewStore:
    store = ReviewStore(tmp_path / "r.sqlite")
    store.save("demo", 1, "Ana", "needs correction", ["mistranslation"], "Ana's secret note", "Ana's fix.", "")
    store.save("demo", 2, "Ana", "reject", ["other"], "Ana on 2")
    store.save("demo", 2, "Ben", "accept", [], "Ben on 2")
    store.save("demo", 3, "Ana", "accept")
    store.save("demo", 3, "Ben", "reject")
    store.adjudicate("demo", 3, "Cara", "accept", "decided")
    return store


def _text(frame: pd.DataFrame) -> str:
    return frame.astype(str).to_csv()


def test_a_reviewer_sees_nothing_of_a_pair_before_saving_and_everything_after(tmp_path):
    store = _store(tmp_path)
    ben = viewer("Ben", adjudicators=["Cara"], keep_blind=False)
    seen = visible(store.reviews("demo"), store.adjudications("demo"), ben)
    assert 1 not in seen.revealed and 1 in seen.hidden  # Ben has not reviewed pair 1: Ana's review is hidden
    assert (seen.reviews.pair_id == 1).sum() == 0 and "Ana's secret note" not in _text(seen.reviews)
    assert seen.revealed == {2, 3} and set(seen.adjudications.pair_id) == {3}
    # nothing computed from what Ben sees mentions pair 1
    assert 1 not in set(disagreements(seen.reviews, PAIRS, seen.adjudications).pair_id)
    assert final_decisions([1], seen.reviews, seen.adjudications).decision.tolist() == ["unreviewed"]
    assert agreement(seen.reviews, PAIRS).set_index("bias_type").loc["all", "alpha_pairs"] == 2

    store.save("demo", 1, "Ben", "accept", [], "Ben on 1")  # after saving, Ben sees Ana's review of pair 1
    seen = visible(store.reviews("demo"), store.adjudications("demo"), ben)
    one = seen.reviews[seen.reviews.pair_id == 1].set_index("reviewer")
    assert one.loc["Ana", ["status", "comment", "corrected_more"]].tolist() == [
        "needs correction", "Ana's secret note", "Ana's fix."] and one.loc["Ana", "tags"] == ("mistranslation",)
    assert seen.revealed == {1, 2, 3} and not seen.hidden


def test_keep_blind_shows_only_a_reviewers_own_reviews(tmp_path):
    store = _store(tmp_path)
    seen = visible(store.reviews("demo"), store.adjudications("demo"), viewer("Ben", [], keep_blind=True))
    assert set(seen.reviews.reviewer) == {"Ben"} and seen.adjudications.empty
    assert not seen.revealed and seen.hidden == {1, 2, 3}
    assert confusion(seen.reviews).to_numpy().sum() == 0  # no two reviews of one pair to compare


def test_adjudicators_from_the_server_setting_see_everything(tmp_path, monkeypatch):
    store = _store(tmp_path)
    monkeypatch.setenv("BIASCORE_ADJUDICATORS", " Cara , Dan ")
    monkeypatch.setenv("BIASCORE_REVIEW_KEEP_BLIND", "1")
    cara = viewer(" Cara ")
    assert cara.adjudicator and cara.name == "Cara" and cara.keep_blind
    seen = visible(store.reviews("demo"), store.adjudications("demo"), cara)
    pd.testing.assert_frame_equal(seen.reviews, store.reviews("demo"))
    pd.testing.assert_frame_equal(seen.adjudications, store.adjudications("demo"))
    assert not viewer("cara").adjudicator and not viewer("Ana").adjudicator  # names match exactly
    monkeypatch.delenv("BIASCORE_REVIEW_KEEP_BLIND")
    assert not viewer("Ana").keep_blind


def test_no_name_sees_no_review(tmp_path):
    store = _store(tmp_path)
    seen = visible(store.reviews("demo"), store.adjudications("demo"), viewer("  ", adjudicators=["Cara"]))
    assert seen.reviews.empty and seen.adjudications.empty and seen.hidden == {1, 2, 3}
