"""The typed views (biascore/contract/views.py): what a plugin declares is what the kit draws — the units and word
level of a token salience, its ranked units, the pair table's filters, the head grid, the right-to-left layout."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biascore.api import Chart, HeadGrid, PairTable, RankedUnits, Table, TokenSalience
from biascore.contract.presentation import View
from biascore.methods.attribution.token_view import salience, sentence_units
from views.kit.charts import token_heatmap

NAN = float("nan")


def _pair(direction="ltr") -> TokenSalience:
    # "Women don't drive." / "Men don't drive.": sub-word spans, the group word modified (NaN)
    return TokenSalience.of_pair("Women don't drive.", "Men don't drive.",
                                 ([(0, 5), (6, 9), (9, 11), (12, 17), (17, 18)], [NAN, -0.4, -0.2, 0.3, 0.1]),
                                 ([(0, 3), (4, 7), (7, 9), (10, 15), (15, 16)], [NAN, -0.1, 0.0, 0.2, 0.05]),
                                 direction)


def test_token_salience_units_words_and_limit():
    view = _pair()
    (label, tokens), _ = view.units("token")
    assert label == "more-biased"
    assert tokens.text.tolist() == ["Women", "don", "'t", "drive", "."]
    assert tokens.scored.tolist() == [False, True, True, True, True]
    (_, words), _ = view.units("word")
    assert words.text.tolist() == ["Women", "don't", "drive", "."]
    assert math.isnan(words.b.iloc[0]) and not words.scored.iloc[0]  # a modified word is not scored
    assert words.b.iloc[1] == np.mean([-0.4, -0.2])  # a word: the mean of its scored sub-word units
    assert view.limit("token") == 0.4
    assert view.limit("word") == pytest.approx(0.3)  # the word level's own largest |value|


def test_ranked_units_strongest_push_toward_the_biased_sentence_first():
    ranked = RankedUnits(_pair()).units("token")
    assert ranked.text.tolist() == ["don", "'t", ".", "drive"]
    assert ranked.b.is_monotonic_increasing


def test_the_attribution_row_is_the_same_typed_view(random_mlm):
    from biascore.methods.attribution.scorer import score_pair

    row = score_pair(random_mlm, "Women don't drive.", "Men don't drive.")
    view = salience(row)
    assert [label for label, _, _ in view.sentences] == ["more-biased", "less-biased"]
    pd.testing.assert_frame_equal(view.units("word")[1][1], sentence_units(row, "less", "word"))
    scored = view.units("word")[0][1]
    assert np.allclose(scored[scored.scored].b.to_numpy(), row["word_bu"])  # the engine's own word b


def test_pair_table_filters_and_sorts_over_every_pair():
    frame = pd.DataFrame({"pair_id": [3, 1, 2], "bias_type": ["gender", "race", "gender"],
                          "sent_more": ["Women cry.", "They steal.", "Girls cry."],
                          "sent_less": ["Men cry.", "We steal.", "Boys cry."], "score": [0.5, -1.0, -0.2]})
    view = PairTable(frame, detail=lambda pair_id: [])
    assert [label for label, _, _ in view.sort_options()][:2] == ["score, lowest first", "score, highest first"]
    assert view.filtered(sort_by="score", ascending=True).pair_id.tolist() == [1, 2, 3]
    assert view.filtered(bias_types=["gender"], text="CRY", sort_by="pair_id").pair_id.tolist() == [2, 3]


def test_head_grid_and_clip():
    frame = pd.DataFrame({"layer": [0, 0, 1, 1], "head": [0, 1, 0, 1], "score": [0.5, -0.25, 0.0, 1.0]})
    assert HeadGrid(frame).matrix().tolist() == [[0.5, -0.25], [0.0, 1.0]]
    assert HeadGrid(frame, clip=True).matrix().tolist() == [[0.5, 0.0], [0.0, 1.0]]


def test_a_right_to_left_script_is_laid_out_right_to_left():
    ltr, rtl = (token_heatmap(_pair(d).units(), limit=1.0, rtl=d == "rtl") for d in ("ltr", "rtl"))
    assert ltr.layout.xaxis.autorange is True and rtl.layout.xaxis.autorange == "reversed"


def test_declared_views_are_typed_tables_and_charts():
    frame = pd.DataFrame({"bias_type": ["all"], "score": [55.0]})
    table = View("table", title="T").typed(frame, "m_demo_0")
    chart = View("bar", label="bias_type", value="score", reference=50).typed(frame, "m_demo_1")
    assert isinstance(table, Table) and table.name == "m_demo_0" and table.title == "T"
    assert isinstance(chart, Chart) and (chart.kind, chart.label, chart.value, chart.reference) == \
        ("bar", "bias_type", "score", 50)
