"""Inter-reviewer agreement on the review status, and the pairs to adjudicate (docs/review.md, "Agreement").

Per benchmark ("all") and per bias type, over the pairs two or more reviewers reviewed:

* **Krippendorff's α** (nominal; :mod:`biascore.stats.reliability`) over every such pair, with a percentile
  bootstrap interval over pairs (``alpha_low``, ``alpha_high``, ``alpha_pairs``): the headline number;
* two reviewers → **Cohen's κ** (Cohen 1960) = (p_o − p_e) / (1 − p_e), p_e = Σ_k p_k(A)·p_k(B)
  (:func:`biascore.stats.kappa.cohen_kappa`);
* three or more → **Fleiss' κ** (Fleiss 1971) on the pairs with the most common number of reviews m ≥ 2:
  P_i = (Σ_k n_ik² − m) / (m(m − 1)), κ = (P̄ − P̄_e) / (1 − P̄_e), P̄_e = Σ_k p_k²
  (:func:`biascore.stats.kappa.fleiss_kappa`).

κ is NaN (with ``note``) under two pairs or when chance agreement is 1; ``observed`` is p_o (or P̄). A pair needs
**adjudication** when its statuses differ, or all chose ``needs correction`` with different corrections.
"""
from __future__ import annotations


import numpy as np
import pandas as pd

from biascore.review.store import NEEDS_CORRECTION, STATUSES
from biascore.review.assignment import PROGRESS_COLUMNS, progress
from biascore.stats.kappa import cohen_kappa, fleiss_kappa
from biascore.stats.reliability import DEFAULT_RESAMPLES, alpha_interval, nominal_alpha

AGREEMENT_COLUMNS = ["bias_type", "alpha", "alpha_low", "alpha_high", "alpha_pairs", "method", "kappa", "observed",
                     "n_pairs", "n_reviewers", "ratings_per_pair", "note"]
REVIEWER_COLUMNS = ["reviewer", "reviews", "shared_pairs", "agreement", "kappa", "alpha_without"]
DISAGREEMENT_COLUMNS = ["pair_id", "bias_type", "reviewers", "statuses", "why", "adjudicated", "final_status",
                        "adjudicator", "decided_at"]


def _with_bias_type(reviews: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """Reviews of pairs that exist in ``pairs`` (columns pair_id, bias_type), with the pair's bias type."""
    return reviews.merge(pairs[["pair_id", "bias_type"]], on="pair_id", how="inner")


def status_counts(reviews: pd.DataFrame) -> pd.DataFrame:
    """Per pair (index pair_id) how many reviews gave each status (columns :data:`STATUSES`): the value counts of
    :mod:`biascore.stats.reliability`."""
    if reviews.empty:
        return pd.DataFrame(columns=list(STATUSES), dtype="int64")
    return pd.crosstab(reviews.pair_id, reviews.status).reindex(columns=list(STATUSES), fill_value=0)


def _group_agreement(group: pd.DataFrame, resamples: int, seed: int) -> dict:
    """Agreement of the status among the reviews of one group (see the module docstring)."""
    counts = group.groupby("pair_id").size()
    multi = group[group.pair_id.isin(counts.index[counts >= 2])]
    reviewers = sorted(multi.reviewer.unique())
    codes = {s: i for i, s in enumerate(STATUSES)}
    estimate = alpha_interval(status_counts(multi).to_numpy(), resamples=resamples, seed=seed)
    out = {"alpha": estimate.alpha, "alpha_low": estimate.low, "alpha_high": estimate.high,
           "alpha_pairs": estimate.n_units, "method": "", "kappa": float("nan"), "observed": float("nan"),
           "n_pairs": 0, "n_reviewers": len(reviewers), "ratings_per_pair": 0, "note": ""}
    if len(reviewers) < 2:
        out["note"] = "fewer than two reviewers on a shared pair"
        return out
    if len(reviewers) == 2:
        wide = multi.pivot(index="pair_id", columns="reviewer", values="status").dropna()
        a, b = wide[reviewers[0]].to_numpy(), wide[reviewers[1]].to_numpy()
        out.update(method="Cohen", n_pairs=len(wide), ratings_per_pair=2, kappa=cohen_kappa(a, b, STATUSES),
                   observed=float(np.mean(a == b)) if len(wide) else float("nan"))
    else:
        sizes = counts[counts >= 2].value_counts()
        m = int(max(sizes.index, key=lambda k: (sizes[k], k)))
        used = multi[multi.pair_id.isin(counts.index[counts == m])].sort_values(["pair_id", "reviewer"])
        ratings = used.status.map(codes).to_numpy().reshape(-1, m)  # one row per pair: its m ratings
        kappa, observed = fleiss_kappa(ratings, len(STATUSES))
        out.update(method="Fleiss", n_pairs=len(ratings), ratings_per_pair=m, observed=observed, kappa=kappa)
    if out["n_pairs"] < 2:
        out["note"] = "fewer than two pairs reviewed by the same reviewers"
    elif out["kappa"] != out["kappa"]:
        out["note"] = "every rating has the same status: chance agreement is 1, κ undefined"
    return out


def agreement(reviews: pd.DataFrame, pairs: pd.DataFrame, *, resamples: int = DEFAULT_RESAMPLES,
              seed: int = 0) -> pd.DataFrame:
    """Agreement overall (``bias_type`` = "all") and per bias type; columns :data:`AGREEMENT_COLUMNS`. ``reviews``: one
    benchmark's reviews (:meth:`ReviewStore.reviews`); ``pairs``: its pairs (pair_id, bias_type). ``resamples`` and
    ``seed``: α's bootstrap (the same reviews and seed give the same interval)."""
    rows = []
    merged = _with_bias_type(reviews, pairs)
    groups = [("all", merged)] + [(bt, merged[merged.bias_type == bt]) for bt in sorted(merged.bias_type.unique())]
    for name, group in groups:
        rows.append({"bias_type": name, **_group_agreement(group, resamples, seed)})
    return pd.DataFrame.from_records(rows, columns=AGREEMENT_COLUMNS)


def confusion(reviews: pd.DataFrame) -> pd.DataFrame:
    """Which statuses reviewers confuse: a symmetric table (index and columns :data:`STATUSES`) counting, over
    every pair and every two of its reviewers, the statuses they chose — cell (c, k) = Σ_pairs n_c·n_k for c ≠ k
    (the same number in (k, c)), diagonal (c, c) = Σ_pairs n_c(n_c − 1)/2, the reviewer pairs that agreed on c.
    The cells on and above the diagonal add up to the number of reviewer pairs on a shared pair."""
    counts = status_counts(reviews).to_numpy(dtype=np.int64)
    table = counts.T @ counts
    np.fill_diagonal(table, (counts * (counts - 1) // 2).sum(axis=0))
    return pd.DataFrame(table, index=pd.Index(STATUSES, name="status"), columns=list(STATUSES))


def reviewer_agreement(reviews: pd.DataFrame) -> pd.DataFrame:
    """Each reviewer's agreement with the others (columns :data:`REVIEWER_COLUMNS`, one row per reviewer):
    ``shared_pairs`` (pairs someone else reviewed too), ``agreement`` (share of same-status rating pairs with the
    others on them), ``kappa`` (Cohen's κ with each other reviewer, weighted by shared pairs; undefined pairings
    left out) and ``alpha_without`` (Krippendorff's α of everyone else: higher when this reviewer disagrees more).
    """
    rows = []
    wide = reviews.pivot(index="pair_id", columns="reviewer", values="status") if len(reviews) else pd.DataFrame()
    for name in sorted(reviews.reviewer.unique()):
        mine = wide[name].dropna()
        others = wide.loc[mine.index].drop(columns=[name])
        same = others.eq(mine, axis=0).sum(axis=1)
        total = others.notna().sum(axis=1)
        shared = total > 0
        kappas, weights = [], []
        for other in others.columns:
            both = others[other].notna()
            k = cohen_kappa(mine[both].to_numpy(), others.loc[both, other].to_numpy(), STATUSES)
            if k == k:
                kappas.append(k)
                weights.append(int(both.sum()))
        rest = reviews[reviews.reviewer != name]
        rows.append({"reviewer": name, "reviews": len(mine), "shared_pairs": int(shared.sum()),
                     "agreement": float(same[shared].sum() / total[shared].sum()) if shared.any() else float("nan"),
                     "kappa": float(np.average(kappas, weights=weights)) if kappas else float("nan"),
                     "alpha_without": nominal_alpha(status_counts(rest).to_numpy())})
    return pd.DataFrame.from_records(rows, columns=REVIEWER_COLUMNS)


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


def reviewer_overview(assignments: pd.DataFrame, reviews: pd.DataFrame) -> pd.DataFrame:
    """What a coordinator sees per reviewer: progress on their assigned pairs
    (:func:`biascore.review.assignment.progress`) beside their agreement with the others
    (:func:`reviewer_agreement`); reviewers who reviewed without an assignment are listed too."""
    done = progress(assignments, reviews)
    agree = reviewer_agreement(reviews)
    ints = ["assigned", "reviewed", "remaining", "reviews", "shared_pairs"]
    out = done.merge(agree, on="reviewer", how="outer").fillna({c: 0 for c in ints})
    return out.astype({c: "int64" for c in ints})[PROGRESS_COLUMNS + REVIEWER_COLUMNS[1:]]
