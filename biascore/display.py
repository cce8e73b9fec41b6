"""Text on its way to a browser or a notebook: the one module that makes benchmark and user text literal.

Benchmark sentences, tokens, model names and typed text may contain markdown, HTML or formulas
(``**x**``, ``<img src=…>``, ``$x^2$``). Wherever such text is put into something that renders, it goes
through one of these functions first, chosen by what renders it. Plain-text sinks (``st.text``, dataframes,
terminals) need none of this.
"""
from __future__ import annotations

import html as _html
import re
import string

_PUNCTUATION = set(string.punctuation)


def html(text: object) -> str:
    """``text`` for HTML (notebooks' ``_repr_html_``, any HTML we build): ``& < > " '`` as entities."""
    return _html.escape(str(text), quote=True)


def plotly_label(text: object) -> str:
    """``text`` for a plotly label or hover text: plotly.js reads a few tags (``<b>``, ``<a href>``, ``<br>``), so
    ``& < >`` become entities, which plotly shows as the characters (quotes stay: it would show ``&quot;``)."""
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def markdown_literal(text: object) -> str:
    """``text`` for a markdown-rendering element (alerts, captions): one line, every ASCII punctuation mark
    backslash-escaped (CommonMark), so no link, image, emphasis, HTML or math renders."""
    one_line = " ".join(str(text).split())
    return "".join("\\" + ch if ch in _PUNCTUATION else ch for ch in one_line)


def code_span(text: object) -> str:
    """``text`` (a model, benchmark or bias type in our own markdown) as a code span, shown verbatim: fenced
    with one more backtick than its longest backtick run."""
    text = str(text).replace("\n", " ")
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {text} {fence}"


def script_token(token: object) -> str:
    """A token for a widget that puts it into ``<script>`` JSON unescaped (bertviz), which no escaping survives:
    ``<``/``>`` become the look-alikes ‹/›, so no text can close or open a tag."""
    return str(token).replace("<", "‹").replace(">", "›")
