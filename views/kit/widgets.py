"""A method's page parts drawn from its contract: option controls from its ``Options`` specs, an input picker
from its input kind, its headline metric (:mod:`biascore.contract.presentation` describes them; this module only
draws). Generated pages (:mod:`views.kit.generated`) are made of these and the typed views (:mod:`views.kit.drawn`);
bespoke pages use them for the options they offer."""
from __future__ import annotations

from typing import Sequence

import streamlit as st

from biascore import settings
from biascore.display import code_span
from biascore.api import (Headline, Method, OptionError, Options, Result, Widget, option_widgets, precision_of,
                          widget_value)
from views.kit.common import show_error
from views.kit.models import active_snapshot, model_label
from views.kit.links import keep, link_choice, link_option


def _control(w: Widget, key: str):
    label, help_text = w.label, w.help or None
    if w.kind == "switch":
        return st.checkbox(label, value=bool(w.default), help=help_text, key=key)
    if w.kind == "choice":
        options = ([None] if w.optional else []) + list(w.choices or ())
        index = options.index(w.default) if w.default in options else 0
        return st.selectbox(label, options, index=index, help=help_text, key=key,
                            format_func=lambda v: "(default)" if v is None else str(v))
    if w.kind == "choices":
        return st.multiselect(label, list(w.choices or ()), default=list(w.default or ()), help=help_text, key=key)
    if w.kind in ("integer", "number"):
        cast = int if w.kind == "integer" else float
        low = None if w.minimum is None or w.exclusive else cast(w.minimum)
        high = None if w.maximum is None or w.exclusive else cast(w.maximum)
        value = cast(w.default) if w.default is not None else low
        return st.number_input(label, min_value=low, max_value=high, value=value, help=help_text, key=key,
                               step=1 if cast is int else None, format=None if cast is int else "%g")
    default = ", ".join(map(str, w.default)) if isinstance(w.default, tuple) else ("" if w.default is None else
                                                                                   str(w.default))
    return st.text_input(label, value=default, help=help_text, key=key)


def option_inputs(method: Method, key: str, only: Sequence[str] | None = None, columns: int = 3) -> Options | None:
    """Controls for ``method``'s options (``only`` these, the rest at their defaults), in ``columns`` columns;
    the validated ``Options``, or None after a one-line error (the same check as the CLI's and the API's).
    Each control starts at the link's value of its option (``?name=value``; a bad one is refused in one line,
    :mod:`views.kit.links`), and the address bar follows what the controls show."""
    widgets = [w for w in option_widgets(method.Options) if only is None or w.name in only]
    values = {}
    cols = st.columns(max(1, min(columns, len(widgets)))) if widgets else []
    for i, w in enumerate(widgets):
        control = f"{key}_{w.name}"
        shown = link_option(method.Options, w, control)
        with cols[i % len(cols)]:
            values[w.name] = widget_value(w, _control(shown, control))
        keep(w.name, values[w.name], default=w.default)
    try:
        return method.Options.build(**values)
    except OptionError as exc:
        show_error(exc)
        return None


def input_picker(method: Method, key: str = "input", widget_key: str | None = None) -> str | None:
    """A select box of the inputs ``method`` can read (its input kind's fixed choices, else its names in the data
    directory), synced with the URL parameter ``key``; None for a method without an input choice, or when none
    is present."""
    kind = method.input_kind
    if kind.name == "none" or not kind.selectable:
        return None
    present = kind.names(settings.data_dir())
    names = list(kind.choices or present) or ([kind.default] if kind.default else [])
    if not names:
        st.info(f"No {kind.noun} in the data directory yet.")
        return None
    # the default when present, else the first present (a bare clone: the shipped demo input)
    fallback = kind.default if kind.default in present or not present else present[0]
    default = fallback if fallback in names else names[0]
    control = widget_key or f"{key}_select"
    wanted = link_choice(key, names, default, noun=kind.noun + "s", control=control)
    choice = st.selectbox(kind.noun[:1].upper() + kind.noun[1:], names, index=names.index(wanted),
                          key=control, help=kind.help, format_func=kind.label or str)
    keep(key, choice)
    return choice


def headline_metric(result: Result) -> None:
    """The headline number of ``result`` (its method's :class:`~biascore.contract.presentation.Headline` for its
    options) as a metric, its direction in the help; nothing when the method declares none or the summary has no
    such rows."""
    headline: Headline | None = result.method.headline(result.options)
    value = None if headline is None else headline.value(result.method.summary(result))
    if value is not None:
        st.metric(headline.name, f"{value:.4g}", help=headline.direction)
        st.caption(f"{headline.name}: {headline.direction}")


def precision_caption(source, subject: str | None = None) -> bool:
    """Label a result whose numbers are not exact (quantized, bf16/fp16 or served) from what it stored
    (:func:`biascore.models.precision.precision_of`), named ``subject`` (literal text); every page labels its results
    through here. True when labelled (nothing is drawn for an exact result)."""
    precision = precision_of(source)
    if precision.exact:
        return False
    who = f"{code_span(subject)}: " if subject else ""
    st.caption(f"{'⚠️' if precision.kind == 'approximate' else 'ℹ️'} {who}{code_span(precision.label)} — "
               f"{precision.note}.")
    return True


def result_caption(result) -> None:
    """What a result was computed from and how (model, input, precision, conventions), as a caption, and the
    precision label of a result that is not exact (:func:`precision_caption`)."""
    conventions = "; ".join(f"{k} {v}" for k, v in result.conventions.items())
    st.caption(f"{code_span(model_label(result.model))} on {code_span(result.input_name)} · "
               f"{code_span(result.precision)}" + (f" · conventions: {code_span(conventions)}" if conventions else "")
               + (" · read-only snapshot" if active_snapshot() is not None else ""))
    precision_caption(result, model_label(result.model))
