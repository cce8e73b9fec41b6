"""Widgets and drawing helpers shared by every page. No scoring logic here: pages call the engine."""
from __future__ import annotations

import html

import pandas as pd
import streamlit as st

from biascore import models as engine_models
from biascore import settings

#: Models offered in selectors before the user types their own (embedded ones first).
SUGGESTED_MODELS = ["smollm2-135m", "all-minilm-l6-v2", "gemma3-270m", "bert-base-uncased", "gpt2",
                    "xlm-roberta-base"]


@st.cache_resource(show_spinner="Loading model (once per process)…")
def get_model(name: str, kind: str = "auto", attn_implementation: str | None = None):
    """Load a model once per process (st.cache_resource); errors propagate to :func:`model_or_error`."""
    return engine_models.load_model(name, kind=kind, attn_implementation=attn_implementation)


def model_or_error(name: str, **kwargs):
    """The loaded model, or None after showing the loader's message inline (never a traceback)."""
    try:
        return get_model(name, **kwargs)
    except engine_models.ModelLoadError as exc:
        st.error(str(exc))
        return None


def model_selector(label: str = "Model", key: str = "model", default: str = engine_models.DEFAULT_MODEL,
                   options: list[str] | None = None) -> str:
    """A select box of suggested models plus a free-text field for any hub id or local path."""
    options = list(options or SUGGESTED_MODELS)
    if default not in options:
        options.insert(0, default)
    qp = st.query_params.get(key)
    if qp and qp not in options:
        options.append(qp)
    choice = st.selectbox(label, options + ["other…"], index=options.index(qp) if qp in options else
                          options.index(default), key=f"{key}_select")
    if choice == "other…":
        choice = st.text_input("Hub id, local folder or .gguf path", key=f"{key}_custom").strip() or default
    return choice


def data_dir_notice() -> None:
    """Tell the user where benchmark data is read from and how to get it."""
    st.caption(f"Benchmark data directory: `{settings.data_dir()}` — download the public benchmarks with "
               "`python -m biascore data download` (or set `BIASCORE_DATA_DIR`).")


def csv_download(frame: pd.DataFrame, file_name: str, label: str = "Download CSV", key: str | None = None) -> None:
    st.download_button(label, frame.to_csv(index=False).encode("utf-8"), file_name=file_name, mime="text/csv",
                       key=key or f"dl_{file_name}")


def escape(text: str) -> str:
    """All user or benchmark text goes through this before it reaches HTML."""
    return html.escape(str(text), quote=True)
