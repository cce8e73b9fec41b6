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
        ratings = np.array([[codes[s] for s in g.status] for _, g in used.groupby("pair_id")])
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


def disagreements(reviews: pd.DataFrame, pairs: pd.DataFrame, adjudications: pd.DataFrame) -> pd.DataFrame:
    """Pairs whose reviewers disagree (status, or the correction when all say ``needs correction``), with the
    adjudicated decision where one is stored; columns :data:`DISAGREEMENT_COLUMNS`, ordered by pair."""
    merged = _with_bias_type(reviews, pairs)
    adj = adjudications.set_index("pair_id") if len(adjudications) else None
    rows = []
    for pair_id, group in merged.groupby("pair_id", sort=True):
        if len(group) < 2:
            continue
        statuses = set(group.status)
        if len(statuses) > 1:
            why = "different statuses"
        elif statuses == {NEEDS_CORRECTION} and len(set(zip(group.corrected_more, group.corrected_less))) > 1:
            why = "different corrections"
        else:
            continue
        decided = adj is not None and pair_id in adj.index
        rows.append({"pair_id": int(pair_id), "bias_type": group.bias_type.iloc[0],
                     "reviewers": ", ".join(group.reviewer), "statuses": ", ".join(group.status), "why": why,
                     "adjudicated": decided, "final_status": adj.at[pair_id, "status"] if decided else "",
                     "adjudicator": adj.at[pair_id, "adjudicator"] if decided else "",
                     "decided_at": adj.at[pair_id, "decided_at"] if decided else ""})
    return pd.DataFrame.from_records(rows, columns=DISAGREEMENT_COLUMNS)
