"""Page links: the one way a page reads its URL's parameters (``?model=…&input=…&n=…``).

A parameter either **sets** the page — its control starts at that value, and the page writes the value it shows
back to the address bar, so the address bar is always the link to this view ("share this view" is copying it) —
or is **refused** in one visible line naming it, and removed from the address bar, so a bad value never travels
on in a shared link. Nothing falls back silently. Values from a URL reach the page as literal text.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Sequence

import streamlit as st

from biascore.display import code_span, markdown_literal
from biascore.api import OptionError, Options, Widget, parse_text

#: session state: the refusal line of each parameter, shown again on later reruns (see :func:`link_value`)
_REFUSED = "_link_refusals"


def link_value(key: str, control: str | None = None) -> str | None:
    """The URL's ``key``; the line refusing an earlier value of it is shown again while the page still shows
    what it put in its place — the address bar's value, or the value of the ``control`` (a widget key) whose
    change started this rerun — so a rerun does not wipe the refusal, and forgotten once that changes."""
    value = st.query_params.get(key)
    memory = st.session_state.setdefault(_REFUSED, {})
    if key in memory:
        line, replacement = memory[key]
        shown = link_text(st.session_state[control]) if control in st.session_state else value
        if shown is None or shown == replacement:
            st.warning(line, icon="🔗")
        else:
            del memory[key]
    return value


def refuse(key: str, value: str | None, why: str, replacement: Any = None) -> None:
    """One visible line saying the link's ``key=value`` was not applied and why; the parameter leaves the URL
    (``replacement``: what the page shows instead, as the address bar will hold it). ``value`` None: the value
    is not repeated (a model link may name a server path, never shown back)."""
    named = code_span(key) + (f"={code_span(value)}" if value is not None else "")
    line = f"The link's {named} was not applied: {markdown_literal(why)}."
    st.warning(line, icon="🔗")
    st.session_state.setdefault(_REFUSED, {})[key] = (line, None if replacement is None else link_text(replacement))
    st.query_params.pop(key, None)


def link_choice(key: str, choices: Sequence[Any], default: Any = None, *, noun: str | None = None,
                label: Callable[[Any], str] | None = None, control: str | None = None) -> Any:
    """The choice the URL's ``key`` names among ``choices`` (by its text, or by ``label(choice)``), else
    ``default``; a value that names none of them is refused in one line (:func:`refuse`). ``control``: the key
    of the widget that shows the choice (:func:`link_value`)."""
    value = link_value(key, control)
    if value is None:
        return default
    for choice in choices:
        if value == str(choice) or (label is not None and value == label(choice)):
            return choice
    shown = [label(c) if label else str(c) for c in choices]
    listing = ", ".join(shown[:8]) + (f" … ({len(shown)} in all)" if len(shown) > 8 else "")
    refuse(key, value, f"it is not one of the {noun or key + ' values'} offered here ({listing or 'none'})"
           + (f"; showing {label(default) if label else default}" if default is not None else ""),
           replacement=None if default is None else (label(default) if label else default))
    return default


def link_option(options: type[Options], widget: Widget, control: str | None = None) -> Widget:
    """``widget`` starting at the value the URL gives its option (parsed, then checked with ``options.build``), or
    as it is when the URL has none or it was refused in one line. ``control``: the key of the widget that shows the
    option (:func:`link_value`)."""
    text = link_value(widget.name, control)
    if text is None:
        return widget
    try:
        value = parse_text(next(s for s in options.specs() if s.name == widget.name), text)
        options.build(**{widget.name: value})
    except (ValueError, OptionError) as exc:
        refuse(widget.name, text, str(exc).replace(f"--{widget.name.replace('_', '-')}: ", ""), widget.default)
        return widget
    return dataclasses.replace(widget, default=value)


def link_text(value: Any) -> str:
    """How a value is written in a link (the inverse of :func:`biascore.api.parse_text`)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return f"{value:g}" if isinstance(value, float) else str(value)


def keep(key: str, value: Any, default: Any = None) -> None:
    """Write ``value`` to the address bar under ``key`` (left out when it is ``default`` or None)."""
    if value is None or value == default:
        st.query_params.pop(key, None)
    elif st.query_params.get(key) != link_text(value):
        st.query_params[key] = link_text(value)
