"""The shell kit every page uses: text that stays text, one-line errors, downloads. No scoring logic here:
pages ask the runner's door (:mod:`biascore.runs.runner`) through :mod:`views.kit.scoring` and :mod:`views.kit.models`."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from biascore import api, settings
from biascore.display import markdown_literal
from biascore.errors import one_line


def public_text(text: object) -> str:
    """``text`` for the page: in public mode with every server path reduced to its last component."""
    return api.redact_paths(str(text)) if settings.public_mode() else str(text)


def csv_download(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", key: str | None = None) -> None:
    """A CSV download. Downloads never rerun the page (``on_click="ignore"``): a rerun renews the page's deferred
    downloads' ids, and a second download clicked before the browser has the new ids fails (Streamlit 1.67)."""
    st.download_button(label, frame.to_csv(index=False).encode("utf-8"), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}", on_click="ignore")


def literal(text: object, label: str | None = None) -> None:
    """Show benchmark or user text exactly as written: ``st.text`` parses no markdown and no HTML, so no
    link, image, bold or formula renders and the browser fetches nothing. ``label`` (our own words) goes in
    front, also as plain text."""
    st.text(f"{label}: {text}" if label else str(text))


def error_text(exc: BaseException, public_text: str | None = None) -> str:
    """An exception as one line for a markdown-rendering element (``st.error``, toasts), every character literal
    (:func:`biascore.display.markdown_literal`). In public mode the line names no server path: an error's
    path-free ``reason`` when it has one (e.g. ``ReviewError``), else ``public_text`` when given, else
    :func:`biascore.errors.one_line`'s line with paths replaced. A served model's server that stopped
    answering is said to be down, without the command line's advice."""
    line = one_line(exc)
    if isinstance(exc, api.ServedUnavailable):
        line = one_line(RuntimeError(f"The model's server is down: it {exc.cause}. The pairs finished so far are "
                                     "kept; scoring resumes from them once it is back."))
        public_text = public_text or line
    if settings.public_mode():
        line = getattr(exc, "reason", None) or public_text or line
    return markdown_literal(line)


def show_error(exc: BaseException, public_text: str | None = None) -> None:
    """An exception as one literal line on the page (never a traceback; no server path in public mode)."""
    st.error(error_text(exc, public_text), icon="⚠️")
