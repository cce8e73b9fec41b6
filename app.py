"""Bias Attribution Explorer — Streamlit entry point (``streamlit run app.py``).

Pages are listed here with st.navigation; each lives in views/ and only draws what the engine computes.
(The folder is not called pages/: Streamlit treats a pages/ folder as its own multipage app and runs a
shared deep link on a fresh server without this file.)
A page whose file is not in this checkout is left out of the menu.

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

from views.common import show_error

st.set_option("client.showErrorDetails", "none")
st.set_page_config(page_title="Bias Attribution Explorer", page_icon="⚖️", layout="wide")

HERE = Path(__file__).parent
PAGES = [
    ("views/overview.py", "Overview", "📊"),
    ("views/token_attributions.py", "Token attributions", "🔎"),
    ("views/try_pair.py", "Try a pair", "✍️"),
    ("views/translation_review.py", "Translation review", "🇵🇭"),
    ("views/semantic_fields.py", "Semantic fields", "🏷️"),
    ("views/attention_heads.py", "Attention heads", "🧠"),
    ("views/nationality.py", "Nationality (LABDet)", "🌍"),
    ("views/association_tests.py", "Association tests", "📐"),
]

pages = [st.Page(path, title=title, icon=icon, url_path=Path(path).stem)
         for path, title, icon in PAGES if (HERE / path).exists()]
nav = st.navigation(pages)
try:
    nav.run()
except Exception as exc:  # st.stop / st.rerun are BaseExceptions and pass through
    if os.environ.get("BIASCORE_RAISE_PAGE_ERRORS") == "1":
        raise
    logging.getLogger("biascore.app").exception("page %s failed", nav.url_path)
    show_error(exc)
