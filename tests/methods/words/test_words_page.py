"""AppTest for the Words page: the tables shown are the engine's (biascore.methods.words.table), filters,
a word's pairs with links to Token attributions, two models side by side, Score now, literal text only."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs

import pandas as pd
from streamlit.testing.v1 import AppTest

from biascore.methods.attribution.token_view import pair_table
from biascore.methods.words.table import compare_words, word_occurrences, word_pairs, word_table

REPO = Path(__file__).resolve().parents[3]
MODEL = "smollm2-135m"


def open_words(**query) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.query_params.update(query)
    at.run()
    at.switch_page("views/pages/words.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_table(at: AppTest, column: str) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if column in df.value.columns)


def assert_same(shown: pd.DataFrame, expected: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(shown.reset_index(drop=True), expected.reset_index(drop=True), check_dtype=False)


def test_words_table_is_the_engines_and_filters_apply(demo_scores):
    at = open_words(benchmark="demo", model=MODEL)
    assert not at.error
    occ = word_occurrences(demo_scores[MODEL])
    assert_same(shown_table(at, "n_occurrences"), word_table(occ, min_count=2))
    assert at.slider(key="words_min_count").value == 2
    bias_type = sorted(occ.bias_type.unique())[0]
    at.multiselect(key="words_types").set_value([bias_type]).run()
    at.slider(key="words_min_count").set_value(1).run()
    assert not at.exception
    assert_same(shown_table(at, "n_occurrences"), word_table(occ, [bias_type], 1))
    assert at.get("download_button"), "no CSV export"


def test_a_words_pairs_link_to_token_attributions(demo_scores):
    frame = demo_scores[MODEL]
    occ = word_occurrences(frame)
    word = word_table(occ).word_type.iloc[0]
    at = open_words(benchmark="demo", model=MODEL, word=word.upper())  # the URL's word is normalised too
    assert not at.exception and not at.error
    expected = word_pairs(occ, pair_table(frame), word)
    pairs = shown_table(at, "occurrences")
    assert_same(pairs.drop(columns="open"), expected)
    assert pairs.open.tolist() == [f"/token_attributions?benchmark=demo&model={MODEL}&pair={p}"
                                   for p in expected.pair_id]
    link = at.get("page_link")[0].proto  # the first (most negative b) pair until another row is clicked
    assert "token_attributions" in link.page
    assert parse_qs(link.query_string) == {"benchmark": ["demo"], "model": [MODEL],
                                           "pair": [str(expected.pair_id.iloc[0])]}
    # benchmark text reaches the page only as table cells and st.text, never through markdown
    sentences = set(frame.sent_more) | set(frame.sent_less)
    for md in at.markdown:
        assert not any(s in md.value for s in sentences), md.value
    assert any(t.value == f"word: {word}" for t in at.text)


def test_two_models_side_by_side(demo_scores, random_mlm):
    at = open_words(benchmark="demo", model=MODEL)
    at.selectbox(key="words_compare").set_value(random_mlm.name).run()
    assert not at.exception and not at.error
    expected = compare_words({MODEL: word_occurrences(demo_scores[MODEL]),
                              random_mlm.name: word_occurrences(demo_scores[random_mlm.name])}, min_count=2)
    assert_same(shown_table(at, "mean_b difference"), expected)
    assert at.query_params["compare"] in ([random_mlm.name], random_mlm.name)
    word = expected.word_type.iloc[0]
    at.query_params["word"] = word
    at.run()
    assert not at.exception
    assert len(at.tabs) == 2 and len(at.get("page_link")) == 2


def test_unscored_model_offers_score_now(demo_scores):
    at = open_words(benchmark="demo", model="gpt2")
    assert not at.exception
    assert any("has not been scored" in i.value for i in at.info)
    assert at.button(key="words_score_now")
