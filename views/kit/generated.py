"""The page of a method without a page of its own (:mod:`views.menu`), generated from its contract alone: its
options as controls, its input as a picker, "Score now" through the runner's door, its headline metric and its
typed views (:meth:`~biascore.api.Method.drawn`, drawn by :mod:`views.kit.drawn`)."""
from __future__ import annotations

import streamlit as st

from biascore import api
from biascore.runs import runner
from biascore.display import code_span, markdown_literal
from views.kit.common import show_error
from views.kit.models import data_dir_notice, model_for_cache, model_label, model_selector, served_refusal
from views.kit.scoring import score_now_for
from views.kit.drawn import draw_all
from views.kit.widgets import headline_metric, input_picker, option_inputs, result_caption


def method_page(name: str) -> None:
    """Draw the generated page of the registered method ``name``."""
    method = api.method(name)
    st.title(method.summary_line[:1].upper() + method.summary_line[1:])
    st.caption(markdown_literal(f"{method.name} · {method.paper}") + (f"  \n{markdown_literal(method.formula)}"
                                                                        if method.formula else ""))
    data_dir_notice()
    top = st.columns(2)
    with top[0]:
        model = model_selector(scorer=method.cache_folder)
    with top[1]:
        input_name = input_picker(method)
    options = option_inputs(method, key=f"{name}_opt")
    if options is None or served_refusal(model, method):
        st.stop()
    handle = model_for_cache(model)
    if handle is None:
        st.stop()
    values = options.as_dict()
    try:
        result = runner.run(method, handle, input_name, only_cached=True, **values)
    except (api.NotApplicable, ValueError, FileNotFoundError) as exc:
        show_error(exc)
        st.stop()
    if result is None:
        st.info(f"No stored {name} result for {code_span(model_label(model))} on {code_span(str(input_name))} with "
                "these options yet.")
        if score_now_for(method, model, input_name, key=f"{name}_score", label="Score now",
                         text=f"{name}: {method.input_kind.unit}s", **values):
            st.rerun()
        st.stop()
    result_caption(result)
    headline_metric(result)
    draw_all(method.drawn(result), key=name)


def page_for(name: str):
    """The generated page of method ``name`` as a callable for ``st.Page`` (named for it: Streamlit tells pages
    apart by their callable's name)."""
    def draw() -> None:
        method_page(name)

    draw.__name__ = draw.__qualname__ = "generated_" + "".join(c if c.isalnum() else "_" for c in name)
    return draw
