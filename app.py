"""Bias Attribution Explorer — Streamlit entry point (``streamlit run app.py``).

Pages are listed here with st.navigation; each lives in pages/ and only draws what the engine computes.
A page whose file is not in this checkout is left out of the menu.
"""
from pathlib import Path

import streamlit as st

st.set_page_config(page_title="Bias Attribution Explorer", page_icon="⚖️", layout="wide")

HERE = Path(__file__).parent
PAGES = [
    ("pages/overview.py", "Overview", "📊"),
    ("pages/token_attributions.py", "Token attributions", "🔎"),
    ("pages/try_pair.py", "Try a pair", "✍️"),
    ("pages/translation_review.py", "Translation review", "🇵🇭"),
    ("pages/semantic_fields.py", "Semantic fields", "🏷️"),
    ("pages/attention_heads.py", "Attention heads", "🧠"),
    ("pages/nationality.py", "Nationality (LABDet)", "🌍"),
    ("pages/association_tests.py", "Association tests", "📐"),
]

pages = [st.Page(path, title=title, icon=icon, url_path=Path(path).stem)
         for path, title, icon in PAGES if (HERE / path).exists()]
nav = st.navigation(pages)
nav.run()
