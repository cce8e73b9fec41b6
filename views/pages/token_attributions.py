"""Token attributions: browse the scored pairs of one model on one benchmark, see b(u) of every token.

URL parameters ``benchmark``, ``model`` and ``pair`` (pair_id) select the view, so a link reproduces it.
"""
from __future__ import annotations

import streamlit as st

from biascore.display import code_span
from views.kit.attribution import DRAWING, best_run, draw_pair, pair_limit, pair_table, run_picker, verified_run
from views.kit.drawn import chosen_pair, level_toggle, pair_browser, pair_heading
from views.kit.models import data_dir_notice, model_label

st.title("Token attributions")
st.caption("b(u) of each shared token u: **red = pushes the model toward the more-biased sentence (b < 0)**, "
           "blue = away (b > 0); hatched grey = modified token (differs between the sentences, not scored). "
           "S_JSD = mean b(u); a pair is biased when S_JSD < 0, a tie when |S_JSD| ≤ 1e-6.")
data_dir_notice()

benchmark, model, run, compare = run_picker(score_key="ta_score_now", compare_key="compare_model")


frame = verified_run(model, benchmark, run)
if frame is None:
    st.stop()
pairs = DRAWING.pairs(frame, pair_table(run))
pair_browser(pairs, "ta", verdict_help="tie: |S_JSD| ≤ 1e-6, no preference within float reproducibility")
pair_id = chosen_pair(pairs)
row = frame.loc[frame.pair_id == pair_id].iloc[0].to_dict()
pair_heading(row, pair_id)
level = level_toggle("ta_level")

rows = [(model, row)]
if compare is not None:
    other = verified_run(compare, benchmark, best_run(compare, benchmark))  # None: it has said why in one line
    if other is not None:
        match = other.loc[other.pair_id == pair_id]
        if len(match):
            rows.append((compare, match.iloc[0].to_dict()))
        else:
            st.warning(f"{code_span(model_label(compare))} has no score for pair {pair_id} (it was scored on fewer pairs).")
limit = pair_limit([r for _, r in rows], level)
cols = st.columns(len(rows))
for i, (col, (name, r)) in enumerate(zip(cols, rows)):
    with col:
        draw_pair(r, level=level, limit=limit, key=f"ta_{i}", heading=model_label(name),
                  wrap=90 if len(rows) == 1 else 45)
if len(rows) > 1:
    st.caption("Both models use the same colour scale, so colours compare across them.")
