"""Inter-reviewer agreement on the review status (accept / needs correction / reject), and the pairs to adjudicate.

Agreement is computed per benchmark ("all") and per bias type over the pairs that at least two reviewers
reviewed:

* exactly two reviewers in the group → **Cohen's κ** (Cohen 1960) on the pairs both reviewed,
  κ = (p_o − p_e) / (1 − p_e), p_o = share of pairs with the same status, p_e = Σ_k p_k(A)·p_k(B) from each
  reviewer's own status shares (:func:`sklearn.metrics.cohen_kappa_score`);
* three or more reviewers → **Fleiss' κ** (Fleiss 1971), which needs the same number m of ratings per pair but
  not the same raters: the pairs with the most common number of reviews m ≥ 2 are used (ties: the larger m),
  P_i = (Σ_k n_ik² − m) / (m(m − 1)), P̄ = mean P_i, P̄_e = Σ_k p_k², κ = (P̄ − P̄_e) / (1 − P̄_e)
  (:func:`statsmodels.stats.inter_rater.fleiss_kappa` on :func:`~statsmodels.stats.inter_rater.aggregate_raters`).

κ is undefined (NaN, with ``note``) when fewer than two pairs qualify or when chance agreement is 1 (every rating
the same status). ``observed`` is the raw share of agreeing rater pairs (p_o, or P̄ for Fleiss).

A pair needs **adjudication** when its reviewers chose different statuses, or all chose ``needs correction`` but
proposed different corrected sentences.
"""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from biascore.review.store import NEEDS_CORRECTION, STATUSES

AGREEMENT_COLUMNS = ["bias_type", "method", "kappa", "observed", "n_pairs", "n_reviewers", "ratings_per_pair",
                     "note"]
DISAGREEMENT_COLUMNS = ["pair_id", "bias_type", "reviewers", "statuses", "why", "adjudicated", "final_status",
                        "adjudicator", "decided_at"]


def _with_bias_type(reviews: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Reviews of pairs that exist in ``pairs`` (columns pair_id, bias_type), with the pair's bias type."""
    return reviews.merge(pairs[["pair_id", "bias_type"]], on="pair_id", how="inner")


def _group_agreement(group: pd.DataFrame) -> dict:
    """Agreement of the status among the reviews of one group (see the module docstring)."""
    from sklearn.metrics import cohen_kappa_score
    from statsmodels.stats.inter_rater import aggregate_raters, fleiss_kappa

    counts = group.groupby("pair_id").size()
    multi = group[group.pair_id.isin(counts.index[counts >= 2])]
    reviewers = sorted(multi.reviewer.unique())
    codes = {s: i for i, s in enumerate(STATUSES)}
    out = {"method": "", "kappa": float("nan"), "observed": float("nan"), "n_pairs": 0,
           "n_reviewers": len(reviewers), "ratings_per_pair": 0, "note": ""}
    if len(reviewers) < 2:
        out["note"] = "fewer than two reviewers on a shared pair"
        return out
    if len(reviewers) == 2:
        wide = multi.pivot(index="pair_id", columns="reviewer", values="status").dropna()
        a, b = wide[reviewers[0]].to_numpy(), wide[reviewers[1]].to_numpy()
        out.update(method="Cohen", n_pairs=len(wide), ratings_per_pair=2,
                   observed=float(np.mean(a == b)) if len(wide) else float("nan"))
        if len(wide) >= 2 and len(set(a) | set(b)) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out["kappa"] = float(cohen_kappa_score(a, b, labels=list(STATUSES)))
    else:
        sizes = counts[counts >= 2].value_counts()
        m = int(max(sizes.index, key=lambda k: (sizes[k], k)))
        used = multi[multi.pair_id.isin(counts.index[counts == m])].sort_values(["pair_id", "reviewer"])
        ratings = used.status.map(codes).to_numpy().reshape(-1, m)  # one row per pair: its m ratings
        table, _ = aggregate_raters(ratings, n_cat=len(STATUSES))
        p_i = ((table ** 2).sum(axis=1) - m) / (m * (m - 1))
        out.update(method="Fleiss", n_pairs=len(ratings), ratings_per_pair=m, observed=float(p_i.mean()))
        if len(ratings) >= 2 and (table.sum(axis=0) > 0).sum() > 1:
            out["kappa"] = float(fleiss_kappa(table, method="fleiss"))
    if out["n_pairs"] < 2:
        out["note"] = "fewer than two pairs reviewed by the same reviewers"
    elif out["kappa"] != out["kappa"]:
        out["note"] = "every rating has the same status: chance agreement is 1, κ undefined"
    return out


def agreement(reviews: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Agreement overall (``bias_type`` = "all") and per bias type; columns :data:`AGREEMENT_COLUMNS`.

    ``reviews``: one benchmark's reviews (:meth:`ReviewStore.reviews`); ``pairs``: its pairs (pair_id, bias_type).
    """
    rows = []
    merged = _with_bias_type(reviews, pairs)
    groups = [("all", merged)] + [(bt, merged[merged.bias_type == bt]) for bt in sorted(merged.bias_type.unique())]
    for name, group in groups:
        rows.append({"bias_type": name, **_group_agreement(group)})
    return pd.DataFrame.from_records(rows, columns=AGREEMENT_COLUMNS)


def review_summary(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per pair (index pair_id): number of reviews ``n``, distinct statuses ``n_status``, the first ``status``,
    distinct corrections ``n_fix`` (a correction = both corrected sentences), the first ``more``/``less``, and the
    ``reviewers`` and ``statuses`` joined by ", " (reviews in the store's order: by reviewer)."""
    fixes = reviews.corrected_more.astype(str) + "\x00" + reviews.corrected_less.astype(str)
    return reviews.assign(fix=fixes).groupby("pair_id").agg(
        n=("status", "size"), n_status=("status", "nunique"), status=("status", "first"), n_fix=("fix", "nunique"),
        more=("corrected_more", "first"), less=("corrected_less", "first"), reviewers=("reviewer", ", ".join),
        statuses=("status", ", ".join))


def disagreements(reviews: pd.DataFrame, pairs: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose reviewers disagree (status, or the correction when all say ``needs correction``), with the
    adjudicated decision where one is stored; columns :data:`DISAGREEMENT_COLUMNS`, ordered by pair."""
    summary = review_summary(_with_bias_type(reviews, pairs))
    status_differs = summary.n_status > 1
    fix_differs = (summary.n_status == 1) & (summary.status == NEEDS_CORRECTION) & (summary.n_fix > 1)
    todo = summary[(summary.n >= 2) & (status_differs | fix_differs)].copy()
    todo["why"] = np.where(status_differs.loc[todo.index], "different statuses", "different corrections")
    bias = pairs.set_index("pair_id").bias_type
    todo["bias_type"] = bias.reindex(todo.index).to_numpy()
    adj = adjudications.set_index("pair_id")[["status", "adjudicator", "decided_at"]].rename(
        columns={"status": "final_status"}) if len(adjudications) else pd.DataFrame(
        columns=["final_status", "adjudicator", "decided_at"])
    todo = todo.join(adj, how="left")
    todo["adjudicated"] = todo.final_status.notna()
    todo = todo.fillna({"final_status": "", "adjudicator": "", "decided_at": ""})
    out = todo.reset_index()[DISAGREEMENT_COLUMNS].sort_values("pair_id").reset_index(drop=True)
    return out.astype({"pair_id": "int64", "adjudicated": bool})
