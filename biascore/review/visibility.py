"""Who may see which reviews: blind review by default, adjudicators see everything (docs/review.md, "Who sees what").

Applied to everything a page shows or serves: a **reviewer** sees their own reviews, and another's review of a
pair and its adjudicated decision only after saving their own review of it (never with
``BIASCORE_REVIEW_KEEP_BLIND=1``); an **adjudicator** (listed in ``BIASCORE_ADJUDICATORS``) sees everything;
nobody sees nothing. A name is what the person typed (a rule for honest reviewers, not authentication); agreement
and decisions computed from :attr:`Visible.reviews` use only what the viewer may see.
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
    return Visible(reviews[shown], adjudications[adjudications.pair_id.isin(revealed)], revealed, others - revealed)
