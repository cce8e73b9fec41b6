"""Semantic fields on any clone: the real spaCy + pymusas tagger built from the USAS lexicon excerpt the project
wrote itself (tests/fixtures/data/usas: tags and field names in our words), the word alignment, the table, the
engine's word scores (SmolLM2 on the shipped demo pairs), the CLI and the page. tests/methods/fields/test_fields.py
checks the same against the published English lexicon where ../shared is present."""
from __future__ import annotations

import csv
import re

import pandas as pd
import pytest

from biascore.runs import runner
from biascore.methods import get
from biascore.methods.fields import scorer as fields
from biascore.methods.fields import tagging
from conftest import FIXTURE_DATA, REPO
from tests.methods.fields.test_fields import (assert_words_are_the_engines, fields_of, hand_frame,
                                              mwe_lookup_both_ways)

PAGE = str(REPO / "views" / "pages" / "semantic_fields.py")


@pytest.fixture
def names(fixture_data) -> dict[str, str]:
    return tagging.field_names()


def test_words_get_the_fields_of_their_lexicon_tags(names):
    frame = hand_frame([("Women are too emotional to run a company.",
                         [("Women", -0.1), ("emotional", -0.2), ("run", 0.0), ("company", 0.1)])])
    words = fields.word_fields(frame, tagging.tag_sentences(frame["sent_more"]), senses="all")
    assert fields_of(words, "Women") == {names["S2.1"]}                        # S2.1f
    assert fields_of(words, "emotional") == {names["E1"]}                      # E1
    assert fields_of(words, "company") == {names["I2.1"], names["S5"]}         # I2.1 S5+: every candidate tag
    assert fields_of(words, "run") == {names["Z99"]}                           # not in the excerpt: Unmatched
    top = fields.word_fields(frame, tagging.tag_sentences(frame["sent_more"]), senses="top")
    assert fields_of(top, "company") == {names["I2.1"]}                        # the first-ranked tag only


def test_multi_word_expression_gets_one_field(names):
    frame = hand_frame([("She spent all day cooking.", [("all", -0.1), ("day", 0.2), ("cooking", 0.0)])])
    tagged = tagging.tag_sentences(frame["sent_more"])
    assert list(tagged.tok_tags.iloc[0][2:4]) == ["T1.3", "T1.3"]               # all_DET day_NOUN
    words = fields.word_fields(frame, tagged)
    assert fields_of(words, "all") == fields_of(words, "day") == {names["T1.3"]}  # not "all" alone (N5.1+)
    assert fields_of(words, "cooking") == {names["F1"]}


def test_indexed_mwe_lookup_matches_pymusas(fixture_data):
    """Our MWE index gives exactly pymusas's own tags and MWE spans (its linear scan) on the fixture lexicon."""
    sentences = ["She spent all day cooking.", "They take care of the children and look after the home.",
                 "Bisexual people cannot make up their minds.", "*  odd   spacing\tand a tab"]
    fast, reference = mwe_lookup_both_ways(tagging.get_tagger("en").nlp, sentences)
    assert fast == reference
    assert any(len(span) and span[0][1] - span[0][0] > 1 for sent in fast for _tags, span in sent)  # MWEs found


def test_cached_lexicons_equal_pymusas_readers(fixture_data):
    from pymusas.lexicon_collection import LexiconCollection, MWELexiconCollection

    tables = tagging.lexicon_tables("en")
    single = FIXTURE_DATA / "usas" / "semantic_lexicon_en.tsv"
    assert tables["single"] == LexiconCollection.from_tsv(single, include_pos=True)
    assert tables["lemma"] == LexiconCollection.from_tsv(single, include_pos=False)
    mwe = MWELexiconCollection.from_tsv(FIXTURE_DATA / "usas" / "mwe-en.tsv")
    assert list(tables["mwe"].items()) == list(mwe.items())


def test_score_fields_uses_the_engines_word_scores(smollm, fixture_data):

    result = fields.fields_result(runner.run(get("fields"), smollm, "demo", min_count=1, top=0))
    scores = runner.run(get("attribution"), smollm, "demo").frame.set_index("pair_id")
    assert len(result.words) and result.untagged == {"tl": int((scores["language"] == "tl").sum())}
    assert set(scores.loc[result.words["pair_id"], "language"]) == {"en"}  # the Filipino pairs are left out
    assert_words_are_the_engines(result, scores)


def test_cli_prints_and_writes_csv(smollm, tmp_path, capsys, fixture_data):
    from biascore.cli.main import main

    out = tmp_path / "fields.csv"
    assert main(["fields", "--model", "smollm2-135m", "--benchmark", "demo", "--min-count", "3", "--top", "3",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "smollm2-135m on demo" in printed and "left out (no USAS lexicon)" in printed
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    expected = fields.fields_result(runner.run(get("fields"), smollm, "demo", min_count=3, top=3)).table
    assert [r["field"] for r in rows] == list(expected["field"]) and len(rows) == 3
    assert [float(r["up_pct"]) for r in rows] == pytest.approx(list(expected["up_pct"]))


def test_page_scores_on_demand_and_shows_the_engines_numbers(smollm, fixture_data):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    st.cache_data.clear()  # a server reads one data directory; this process may have shown the page on another
    at = AppTest.from_file(PAGE, default_timeout=600)
    at.query_params["benchmark"], at.query_params["model"] = "demo", "smollm2-135m"
    at.run()
    assert not at.exception
    if at.button:  # not cached yet in this session: the page offers to score, with a progress bar
        at.button(key="sf_score").click().run()
        assert not at.exception
    engine = fields.fields_result(runner.run(get("fields"), smollm, "demo", min_count=1, top=0))
    at.slider(key="sf_min_count").set_value(3).run()
    shown = at.dataframe[0].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, fields.field_table(engine.words, 3, 10), check_dtype=False)
    chosen = at.selectbox(key="sf_field").value
    words_shown = at.dataframe[1].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(words_shown, fields.field_words(engine.words, chosen), check_dtype=False)
    for pid, link in zip(at.dataframe[2].value["pair_id"], at.dataframe[2].value["open"]):
        assert re.fullmatch(rf"/token_attributions\?benchmark=demo&model=smollm2-135m&pair={pid}", link)
