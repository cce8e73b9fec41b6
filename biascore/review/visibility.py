"""Who may see which reviews: blind review by default, adjudicators see everything.

Reviews are independent only if a reviewer cannot see the others' verdicts before giving their own. The rules
(applied to everything a page shows or serves — the pair view, disagreement lists, agreement tables, decision
counts, downloads):

* a **reviewer** always sees their own reviews. They see another reviewer's review of a pair (status, tags,
  comment, corrected sentences) and its adjudicated decision only after saving their own review of that pair —
  and never when the server keeps reviews blind (``BIASCORE_REVIEW_KEEP_BLIND=1``);
* an **adjudicator** (a name listed in ``BIASCORE_ADJUDICATORS``) sees every review and decision;
* nobody (no name typed yet) sees no review.

A name is what the person typed: this is a rule for honest reviewers, not authentication (docs/review.md says
how to put the dashboard behind a login). Agreement and decisions computed from :attr:`Visible.reviews` use only
what the viewer may see, so a reviewer's agreement table covers the pairs they reviewed themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from biascore import settings


@dataclass(frozen=True)
class Viewer:
    """The person looking at reviews: ``name`` as typed (stripped; empty = nobody), whether they adjudicate, and
    whether the server keeps the others' reviews hidden even after a save."""

    name: str
    adjudicator: bool = False
    keep_blind: bool = False


def viewer(name: str, adjudicators: Iterable[str] | None = None, keep_blind: bool | None = None) -> Viewer:
    """The :class:`Viewer` for a typed name; ``adjudicators`` and ``keep_blind`` default to the server settings
    (``BIASCORE_ADJUDICATORS``, ``BIASCORE_REVIEW_KEEP_BLIND``)."""
    name = (name or "").strip()
    names = settings.review_adjudicators() if adjudicators is None else {n.strip() for n in adjudicators}
    blind = settings.review_keep_blind() if keep_blind is None else bool(keep_blind)
    return Viewer(name, adjudicator=bool(name) and name in names, keep_blind=blind)


@dataclass(frozen=True)
class Visible:
    """What one viewer may see of one benchmark's reviews.

    ``revealed``: pairs whose other reviews are shown to this viewer; ``hidden``: pairs with someone else's review
    that this viewer may not see yet (their number only is safe to show)."""

    reviews: pd.DataFrame
    adjudications: pd.DataFrame
    revealed: frozenset[int]
    hidden: frozenset[int]


def visible(reviews: pd.DataFrame, adjudications: pd.DataFrame, who: Viewer) -> Visible:
    """The reviews and adjudications ``who`` may see (see the module docstring), in the store's order."""
    everyone = frozenset(int(p) for p in reviews.pair_id)
    if who.adjudicator:
        return Visible(reviews, adjudications, everyone, frozenset())
    own = reviews.reviewer == who.name if who.name else pd.Series(False, index=reviews.index)
    mine = frozenset(int(p) for p in reviews.pair_id[own])
    revealed = frozenset() if who.keep_blind else mine
    shown = own | reviews.pair_id.isin(revealed)
    others = frozenset(int(p) for p in reviews.pair_id[~own])
    return Visible(reviews[shown], adjudications[adjudications.pair_id.isin(revealed)], revealed,
                   others - revealed)
