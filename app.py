"""Bias Attribution Explorer — Streamlit entry point (``streamlit run app.py``).

The menu comes from the engine's scorer registry (:func:`biascore.methods.scorers`): each method lists
the pages under views/ that draw its results. Pages only draw what the engine computes.
(The folder is not called pages/: Streamlit treats a pages/ folder as its own multipage app and runs a
shared deep link on a fresh server without this file.)

An exception a page does not handle is shown as one line (views.common.error_line: no traceback, and no
server path in public mode) and logged with its traceback on the server's console. The same holds without
.streamlit/config.toml (e.g. when started from another folder): showErrorDetails is set here too.
``BIASCORE_RAISE_PAGE_ERRORS=1`` (set by the test suite) lets such exceptions through instead, so that a test
sees a crash as a crash.
"""
import logging
import os
from pathlib import Path

import streamlit as st

from biascore.methods import scorers
from views.common import show_error

st.set_option("client.showErrorDetails", "none")
st.set_page_config(page_title="Bias Attribution Explorer", page_icon="⚖️", layout="wide")

pages = [st.Page(page.path, title=page.title, icon=page.icon, url_path=Path(page.path).stem)
         for entry in scorers() for page in entry.pages]
nav = st.navigation(pages)
try:
    nav.run()
except Exception as exc:  # st.stop / st.rerun are BaseExceptions and pass through
    if os.environ.get("BIASCORE_RAISE_PAGE_ERRORS") == "1":
        raise
    logging.getLogger("biascore.app").exception("page %s failed", nav.url_path)
    show_error(exc)
