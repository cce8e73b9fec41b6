"""One scored pair as an object: its tokens, b(u), words and verdict, drawn as a red/blue heatmap in notebooks.

:class:`PairResult` is the attribution method's :class:`~biascore.contract.result.Result`; ``result.pair(i)``
gives the :class:`Pair` with pair id ``i``, and :func:`biascore.score_pair` returns a one-pair result. In
Jupyter a pair shows as two rows of coloured tokens (red: b(u) < 0, the token pushes the model toward the
more-biased sentence; blue: away; grey: modified, not scored) — the dashboard's colour convention — with every
piece of text escaped (:func:`biascore.display.html`), so benchmark text stays literal.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from biascore import display
from biascore.contract.result import Result, html_card
from biascore.methods.attribution.ties import verdict_text, verdicts
from biascore.methods.attribution import token_view
from biascore.methods.attribution.token_view import Level, sentence_units


@dataclass
class Pair:
    """One pair of an attribution result (the frame's row as a dict in ``row``)."""

    row: dict[str, Any]
    model: str = ""
    conventions: dict = field(default_factory=dict)

    @property
    def pair_id(self) -> int:
        return int(self.row["pair_id"])

    @property
    def sjsd(self) -> float:
        return float(self.row["sjsd"])

    @property
    def biased(self) -> bool:
        return bool(self.row["biased"])

    @property
    def skipped_reason(self) -> str:
        return str(self.row.get("skipped_reason") or "")

    @property
    def tokens(self) -> list[str]:
        return [str(t) for t in self.row["tokens"]]

    @property
    def bu(self) -> list[float]:
        return [float(b) for b in self.row["bu"]]

    @property
    def words(self) -> list[tuple[str, float]]:
        """(word, b) for every word made of shared tokens only (b = mean b(u) of them; a modified word is left out)."""
        return [(str(w), float(b)) for w, b in zip(self.row["words"], self.row["word_bu"])]

    def units(self, side: str = "more", level: Level = "token") -> pd.DataFrame:
        """The display units of one sentence (text, span, b, scored) at token or word level."""
        return sentence_units(self.row, side, level)  # type: ignore[arg-type]

    def verdict(self, metric: str = "attribution") -> str:
        """The verdict in words under ``metric`` (``attribution``: S_JSD; ``pll``; ``lmeval``): biased, not
        biased, or ``tie`` when the two compared scores are equal within the score's tie rule
        (:mod:`biascore.methods.attribution.ties`: the frame's own verdict rule, PLL scores rounded one by one)."""
        if self.skipped_reason:
            return f"not scored: {self.skipped_reason}"
        return verdict_text(str(verdicts(pd.DataFrame([self.row]), metric).iloc[0]), metric)

    def heatmap_html(self, level: Level = "token") -> str:
        """Both sentences as coloured token boxes (inline styles only; no script, no outside request)."""
        if self.skipped_reason:
            return f"<p>{display.html(self.verdict())}</p>"
        salience = token_view.salience(self.row)
        limit = salience.limit(level)
        rows = []
        for label, units in salience.units(level):
            boxes = "".join(_box(u.text, u.b, u.scored, limit) for u in units.itertuples(index=False))
            rows.append(f"<div style='margin:2px 0'><span style='display:inline-block;width:7em;color:#555'>"
                        f"{display.html(label)}</span>{boxes}</div>")
        return "".join(rows)

    def _repr_html_(self) -> str:
        facts = {"pair": self.pair_id, "bias type": self.row.get("bias_type", ""),
                 "S_JSD": f"{self.sjsd:+.5f}" if not math.isnan(self.sjsd) else "—", "verdict": self.verdict(),
                 **({"model": self.model} if self.model else {}), **self.conventions}
        table = pd.DataFrame({"token": self.tokens, "b(u)": self.bu}) if not self.skipped_reason else pd.DataFrame()
        return html_card("b(u): red pushes toward the more-biased sentence, blue away; grey = modified",
                         table, facts, body=self.heatmap_html())

    def __repr__(self) -> str:
        return f"<Pair {self.pair_id}: S_JSD {self.sjsd:+.5f}, {self.verdict()}>"


def _box(text: str, b: float, scored: bool, limit: float) -> str:
    if not scored or math.isnan(b):
        style, title = "background:#d9d9d9;color:#333", "modified (not scored)"
    else:
        t = max(-1.0, min(1.0, b / limit)) if limit else 0.0
        r, g, bl = (255, int(255 * (1 + t)), int(255 * (1 + t))) if t < 0 else (int(255 * (1 - t)), int(255 * (1 - t)), 255)
        style, title = f"background:rgb({r},{g},{bl})", f"b = {b:+.6f}"
    return (f"<span title='{display.html(title)}' style='{style};padding:1px 3px;margin:1px;border-radius:3px;"
            f"display:inline-block'>{display.html(text)}</span>")


class PairResult(Result):
    """An attribution result: a :class:`~biascore.contract.result.Result` whose rows are pairs."""

    def pair(self, pair_id: int) -> Pair:
        """The pair with this pair id (its tokens, b(u), words, verdict; a heatmap in notebooks)."""
        hit = self.frame[self.frame["pair_id"] == int(pair_id)]
        if hit.empty:
            raise KeyError(f"no pair {pair_id} in this result ({len(self.frame)} pairs)")
        return Pair(hit.iloc[0].to_dict(), self.model, self.conventions)
