"""Display units and figures from a hand-made attribution row (engine-independent drawing tests)."""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from biascore.api import RankedUnits
from biascore.methods.attribution.token_view import (color_limit, filter_pairs, pair_table, salience, sentence_units,
                                 strongest_token)
from views.kit.charts import estimates_chart, ranked_bar_chart, token_heatmap
from biascore.display import plotly_label as escape
from tests.attribution_rows import LESS, MORE, hand_made_row


def test_token_units_text_b_and_modified():
    row = hand_made_row()
    more = sentence_units(row, "more")
    assert list(more.text) == ["Women", "don", "'", "t", "know", "how", "to", "drive", "<", "b", ">", "."]
    assert not more.scored[0] and math.isnan(more.b[0])
    assert more.b[1:].tolist() == pytest.approx(row["bu"])
    less = sentence_units(row, "less")
    assert less.text[0] == "Men" and not less.scored[0]
    assert less.b[1:].tolist() == pytest.approx(row["bu"])  # shared tokens carry the same b(u) on both sides


def test_word_units_average_the_shared_tokens():
    row = hand_made_row()
    words = sentence_units(row, "more", "word")
    assert list(words.text) == ["Women", "don't", "know", "how", "to", "drive", "<", "b", ">", "."]
    assert words.b[1] == pytest.approx(np.mean(row["bu"][0:3]))  # don ' t
    assert words.b[2] == pytest.approx(row["bu"][3])
    assert not words.scored[0]
    for start, end, text in zip(words.start, words.end, words.text):
        assert MORE[start:end] == text
    less_words = sentence_units(row, "less", "word")
    assert LESS[less_words.start[1]:less_words.end[1]] == "don't"


def test_ranked_units_and_strongest_token():
    row = hand_made_row()
    ranked = RankedUnits(salience(row)).units()
    assert ranked.b.tolist() == sorted(row["bu"])
    assert ranked.text[0] == ">"  # b = -0.10, the strongest push toward the biased sentence
    assert strongest_token(row) == (".", pytest.approx(0.11))
    assert strongest_token({"bu": [], "tokens": []})[0] == ""


def test_pair_table_and_filters():
    rows = []
    for i, (bt, shift) in enumerate([("gender", -0.2), ("gender", 0.3), ("sexual-orientation", -0.05)]):
        r = hand_made_row()
        r.update(pair_id=i, bias_type=bt, bu=[b + shift for b in r["bu"]])
        r["sjsd"] = float(np.mean(r["bu"]))
        r["biased"] = r["sjsd"] < 0
        rows.append(r)
    rows[2]["sent_more"] = "Gay people cannot <script>"
    table = pair_table(pd.DataFrame(rows))
    assert table.biased.tolist() == [True, False, True]
    assert filter_pairs(table, biased=True).pair_id.tolist() == [0, 2]
    assert filter_pairs(table, bias_types=["gender"], sort_by="sjsd", ascending=False).pair_id.tolist() == [1, 0]
    assert filter_pairs(table, text="<SCRIPT").pair_id.tolist() == [2]
    assert filter_pairs(table, text="(").empty  # literal search, not a regex
    strongest = filter_pairs(table, sort_by="strongest_abs", ascending=False)
    assert strongest.pair_id.tolist()[0] == 1  # max |b| = 0.11 + 0.3


def test_heatmap_escapes_text_and_centres_the_scale():
    row = hand_made_row()
    more, less = sentence_units(row, "more"), sentence_units(row, "less")
    limit = color_limit(more, less)
    assert limit == pytest.approx(0.11)
    fig = token_heatmap([("more <i>", more), ("less", less)], limit=limit)
    assert fig.layout.coloraxis.cmid == 0 and fig.layout.coloraxis.cmin == -limit
    texts = [t for tr in fig.data for t in tr.text]
    assert "&lt;" in texts and "<" not in texts
    assert list(fig.layout.yaxis.ticktext) == ["more &lt;i&gt;", "less"]
    scored = [tr for tr in fig.data if tr.marker.coloraxis == "coloraxis"]
    modified = [tr for tr in fig.data if tr.marker.coloraxis is None]
    assert list(scored[0].marker.color) == pytest.approx(row["bu"])
    assert [list(tr.text) for tr in modified] == [["Women"], ["Men"]]
    assert all(tr.marker.pattern.shape == "/" for tr in modified)
    bars = ranked_bar_chart(RankedUnits(salience(row)).units(), limit=limit)
    assert list(bars.data[0].x) == sorted(row["bu"])


def test_heatmap_wraps_long_sentences_without_reordering():
    row = hand_made_row()
    more = sentence_units(row, "more")
    fig = token_heatmap([("more", more)], limit=1.0, wrap=12)
    boxes = sorted((y, base, text) for tr in fig.data for y, base, text in zip(tr.y, tr.base, tr.text))
    assert [t for _, _, t in boxes] == [escape(t) for t in more.text]  # reading order kept across lines
    assert max(y for y, _, _ in boxes) >= 2  # wrapped onto several lines
    widths = {t: w for tr in fig.data for t, w in zip(tr.text, tr.x)}
    assert all(base + widths[text] <= 12 or base == 0 for _, base, text in boxes)


def test_overview_chart_has_the_unbiased_line():
    from views.kit.attribution import b_estimates

    grid = pd.DataFrame({"model": ["m"] * 2, "benchmark": ["demo"] * 2, "bias_type": ["all", "gender"],
                         "score": [55.0, 60.0], "ci_low": [50.0, 52.0], "ci_high": [60.0, 68.0]})
    fig = estimates_chart(b_estimates(grid))
    assert any(s.y0 == 50 and s.y1 == 50 for s in fig.layout.shapes)
    assert list(fig.data[0].error_y.array) == [5.0, 8.0]
