"""Bias Attribution Explorer — Streamlit entry point (``streamlit run app.py``).

The menu lists the pages of the registered methods (:func:`views.menu.menu_pages`; a method without a page of its
own gets one generated from its contract, :mod:`views.kit.generated`). Pages only draw what the engine computes.
They are in views/pages/, not in a pages/ folder beside this file: Streamlit treats that folder as its own
multipage app and runs a shared deep link on a fresh server without this file. ``BIASCORE_SNAPSHOT=demo.zip``:
a verified offline snapshot, read-only (docs/dashboard.md, "Workshops: offline snapshots").

An exception a page does not handle is shown as one line (views.kit.common.show_error: no traceback, no server path
in public mode) and logged with its traceback; showErrorDetails is set here too (for a start without
.streamlit/config.toml). ``BIASCORE_RAISE_PAGE_ERRORS=1`` (the test suite) lets such exceptions through.
"""
import logging
import os

# idle OpenMP threads sleep, not spin (before torch loads): a benchmark on every core takes none from a live pair
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
import streamlit as st  # noqa: E402

from views.kit.models import default_model_status, open_snapshot, start_default_load  # noqa: E402

start_default_load()  # the default model's first load (a conversion): started before the menu's imports
from biascore.settings import ReadOnlySnapshotError  # noqa: E402
from biascore.errors import one_line  # noqa: E402
from views.kit.common import show_error  # noqa: E402
from views.kit.generated import page_for  # noqa: E402
from views.menu import menu_pages  # noqa: E402

st.set_option("client.showErrorDetails", "none")
st.set_page_config(page_title="Bias Attribution Explorer", page_icon="⚖️", layout="wide")

pages = [st.Page(page.path or page_for(page.method), title=page.title, icon=page.icon, url_path=page.url_path)
         for page in menu_pages()]
nav = st.navigation(pages)
if not open_snapshot():  # BIASCORE_SNAPSHOT names a file that is refused: the one-line reason is shown
    st.stop()
default_model_status()  # the default model's first load, in the background: said on every page
try:
    nav.run()
except ReadOnlySnapshotError as exc:  # a part of a page that would compute, in a read-only snapshot
    st.info(one_line(exc), icon="📦")
except Exception as exc:  # st.stop / st.rerun are BaseExceptions and pass through
    if os.environ.get("BIASCORE_RAISE_PAGE_ERRORS") == "1":
        raise
    logging.getLogger("biascore.app").exception("page %s failed", nav.url_path)
    show_error(exc)
