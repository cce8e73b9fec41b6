"""Bias Attribution Explorer — Streamlit entry point (``streamlit run app.py``).

The menu comes from the engine's scorer registry (:func:`biascore.methods.scorers`): each method lists
the pages under views/ that draw its results. Pages only draw what the engine computes.
(The folder is not called pages/: Streamlit treats a pages/ folder as its own multipage app and runs a
shared deep link on a fresh server without this file.)
"""
from pathlib import Path

import streamlit as st

from biascore.methods import scorers

st.set_page_config(page_title="Bias Attribution Explorer", page_icon="⚖️", layout="wide")

pages = [st.Page(page.path, title=page.title, icon=page.icon, url_path=Path(page.path).stem)
         for entry in scorers() for page in entry.pages]
nav = st.navigation(pages)
nav.run()
