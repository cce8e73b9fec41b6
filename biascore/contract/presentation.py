"""How a method's options and results are presented, described once for every shell (LIT's ``config_spec`` /
``output_spec`` model): the dashboard draws these descriptions (its widgets module), the CLI generates its
flags from the same option specs (:mod:`biascore.cli.options`). Nothing here draws or imports a shell: a
:class:`Widget` per option (:func:`option_widgets`; the validation stays
:meth:`~biascore.contract.options.Options.build`'s, so a page accepts and refuses what the CLI and API do), the
default :class:`View` s of a result, its :class:`Headline` (lm-eval's metric spec is the model) and the precision
lines of a table (:class:`~biascore.models.precision.Precision`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

import pandas as pd

from biascore.contract.options import Options, OptionSpec
from biascore.contract.views import Chart, Table
from biascore.models.precision import Precision, PrecisionKind, precision_of  # noqa: F401 - the one precision type

WidgetKind = Literal["switch", "choice", "choices", "integer", "number", "text"]


@dataclass(frozen=True)
class Widget:
    """One option as an input control, whatever the shell draws it with."""

    name: str
    label: str
    kind: WidgetKind
    default: Any
    help: str
    choices: tuple | None = None
    minimum: float | None = None
    maximum: float | None = None
    exclusive: bool = False
    #: the option may be left unset (None: the method's default behaviour)
    optional: bool = False
    #: the option takes several values (a tuple)
    many: bool = False


def _kind(spec: OptionSpec) -> WidgetKind:
    if spec.is_tuple:
        return "choices" if spec.choices is not None else "text"
    if spec.choices is not None:
        return "choice"
    if spec.base is bool:
        return "switch"
    if spec.base is int:
        return "integer"
    if spec.base is float:
        return "number"
    return "text"


def option_widgets(options: type[Options]) -> list[Widget]:
    """The input controls of a method's ``Options`` class, in field order."""
    return [Widget(s.name, s.name.replace("_", " "), _kind(s), s.default, s.help, s.choices, s.minimum, s.maximum,
                   s.exclusive, s.optional or (s.default is None), s.is_tuple) for s in options.specs()]


def widget_value(widget: Widget, raw: Any) -> Any:
    """A value a shell read from a control, as the option takes it (``Options.build`` then validates it): an empty
    text or choice is None for an optional option; several words of a text list are a tuple."""
    if widget.kind == "text" and isinstance(raw, str):
        raw = raw.strip()
        if not raw:
            return None if widget.optional else ""
        if widget.many:
            return tuple(w.strip() for w in raw.split(",") if w.strip())
    if widget.kind == "choices":
        return tuple(raw) if raw else None
    if widget.kind == "choice" and raw in ("", None):
        return None
    return raw


@dataclass(frozen=True)
class View:
    """A default view of a result (see the module docstring). ``bar``: ``label`` names each bar, ``value`` its
    length, ``low``/``high`` its interval (optional); ``heatmap``: ``rows`` × ``columns`` → ``value``."""

    kind: Literal["table", "bar", "heatmap"] = "table"
    title: str = ""
    frame: Literal["summary", "result"] = "summary"
    label: str | None = None
    value: str | None = None
    low: str | None = None
    high: str | None = None
    rows: str | None = None
    columns: str | None = None
    #: a line drawn across a bar chart (e.g. 50 for B, 0 for an effect size)
    reference: float | None = None

    def typed(self, frame: pd.DataFrame, name: str) -> Table | Chart:
        """This view of ``frame`` as the kit's typed :class:`~biascore.contract.views.Table` or ``Chart``."""
        if self.kind == "table":
            return Table(frame, self.title, name)
        return Chart(frame, self.kind, str(self.value), self.label, self.low, self.high, self.rows, self.columns,
                     self.reference, self.title)


class Drawing:
    """What a bespoke page draws with beyond a method's typed views (its cached runs, tie labels, head and word
    tables): a method's ``drawing`` is a subclass of this (the class, never an instance) whose attributes are the
    functions and names themselves — a function read from a class is the plain function, so its signature and
    docstring are its own and a reader and a type checker follow it to its module — read through the registry
    (``biascore.method(name).drawing.…``), so that a page imports no module of a method's folder."""


@dataclass(frozen=True)
class Headline:
    """The metric a method is read by: ``name`` (as shown), taken from ``column`` of the method's summary table
    (the rows where ``where`` holds, e.g. ``{"bias_type": "all"}``), aggregated by ``aggregation`` (``first``:
    one row; ``mean``; ``max_abs``: the largest magnitude), read as ``direction`` says (e.g. "50 = unbiased;
    above 50 = prefers the stereotype")."""

    name: str
    column: str
    direction: str
    aggregation: Literal["first", "mean", "max_abs"] = "first"
    where: tuple[tuple[str, Any], ...] = ()

    @property
    def group(self) -> str | None:
        """The column the summary is split by when the headline is taken from its ``all`` row (e.g. ``bias_type``),
        so a table of several results can put each group in a column of its own; None otherwise."""
        return next((column for column, wanted in self.where if wanted == "all"), None)

    def value(self, summary: pd.DataFrame) -> float | None:
        """The headline number of one result's summary table, or None when it has no such rows."""
        rows = summary
        for column, wanted in self.where:
            rows = rows[rows[column] == wanted]
        values = pd.to_numeric(rows[self.column], errors="coerce").dropna() if self.column in rows else pd.Series()
        if values.empty:
            return None
        if self.aggregation == "mean":
            return float(values.mean())
        if self.aggregation == "max_abs":
            return float(values.loc[values.abs().idxmax()])
        return float(values.iloc[0])


def precision_lines(results: Sequence[Any]) -> list[str]:
    """What every CLI command prints about its numbers: one line per model and precision among ``results``
    (results, or anything with ``model`` that :func:`precision_of` reads): ``precision: M: exact (float32)``, or
    ``precision: M: approximate (int4 weights) — <its note>``."""
    seen: dict[tuple[str, str], Precision] = {}
    for r in results:
        p = precision_of(r)
        seen.setdefault((str(r.model), p.label), p)
    return [f"precision: {model}: {p.label}" + (f" — {p.note}" if p.note else "") for (model, _), p in seen.items()]


def with_precision(frame: pd.DataFrame, results: Sequence[Any]) -> pd.DataFrame:
    """``frame`` (a table of ``results``) with a ``precision`` column: the one label when the results share one,
    else by each row's ``model`` (a stacked table), else ``model: label`` for each model (a side-by-side table)."""
    if "precision" in frame.columns or not results:
        return frame
    labels = {str(r.model): precision_of(r).label for r in results}
    if len(set(labels.values())) == 1:
        return frame.assign(precision=next(iter(labels.values())))
    if "model" in frame.columns:
        return frame.assign(precision=frame["model"].astype(str).map(labels))
    return frame.assign(precision="; ".join(f"{m}: {label}" for m, label in labels.items()))
