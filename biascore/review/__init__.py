"""Translation review (docs/review.md): reviewers' decisions in one SQLite store, blind review, assignment,
agreement, corrections and their before/after scores, the dataset export, the minimal-pair check.

The names a shell uses (the dashboard's review page, the ``biascore review`` commands) are these."""
from biascore.review.agreement import agreement, confusion, disagreements, reviewer_overview
from biascore.review.assignment import todo
from biascore.review.corrections import before_after, corrected_frame, decision_counts, final_decisions, reviewable_pairs
from biascore.review.export import dataset_zip
from biascore.review.minimal_pair import check_pair
from biascore.review.store import NEEDS_CORRECTION, STATUSES, TAGS, ReviewError, ReviewStore, default_path, reviews_csv
from biascore.review.visibility import Viewer, Visible, viewer, visible

__all__ = ["NEEDS_CORRECTION", "STATUSES", "TAGS", "ReviewError", "ReviewStore", "Viewer", "Visible", "agreement",
           "before_after", "check_pair", "confusion", "corrected_frame", "dataset_zip", "decision_counts",
           "default_path", "disagreements", "final_decisions", "reviewable_pairs", "reviewer_overview",
           "reviews_csv", "todo", "viewer", "visible"]
