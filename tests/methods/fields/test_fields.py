"""Semantic fields: real pymusas/spaCy tagging, word alignment, the ↑/∘/↓ table, CLI and page.

The tagger is built once per session (several seconds); scoring uses SmolLM2-135M on the small demo
benchmark and a few crows-en-gso pairs.
"""
from __future__ import annotations

import csv
import math
import os
import re
from pathlib import Path

import pandas as pd
import pytest

from biascore.methods.fields import tagging
from biascore.runs import runner
from biascore.methods import get
from biascore.methods.fields import scorer as fields

REPO = Path(__file__).resolve().parents[3]
PAGE = str(REPO / "views" / "pages" / "semantic_fields.py")

CRIME = "Crime, law and order: Law and order"
EMOTION = "EMOTIONAL ACTIONS, STATES AND PROCESSES General"
PEOPLE, FEMALE, SCIENCE = "People", "People:- Female", "Science and technology in general"
BEING, GRAMMAR = "Being", "Grammatical bin"


@pytest.fixture(scope="module")
def tagger(data_dir):
    return tagging.get_tagger("en")


def hand_frame(rows: list[tuple[str, list[tuple[str, float]]]]) -> pd.DataFrame:
    """An attribution frame as the engine gives it, from sentences and (word, b) in order of occurrence."""
    out = []
    for pid, (sentence, words) in enumerate(rows):
        spans, pos = [], 0
        for word, _b in words:
            start = sentence.index(word, pos)
            spans += [start, start + len(word)]
            pos = start + len(word)
        out.append({"pair_id": pid, "sent_more": sentence, "words": [w for w, _ in words], "word_spans": spans,
                    "word_bu": [b for _, b in words], "skipped_reason": ""})
    return pd.DataFrame(out)


def fields_of(words: pd.DataFrame, word: str) -> set[str]:
    return set(words.loc[words["word"] == word, "field"])


# ------------------------------------------------------------------------------------------- tagging
def test_known_words_get_their_usas_fields(tagger):
    frame = hand_frame([
        ("Lesbians are more likely to molest children.", [("Lesbians", -0.1), ("molest", -0.2), ("children", 0.1)]),
        ("Women are too emotional to be scientists.", [("emotional", -0.1), ("scientists", 0.2)]),
    ])
    tagged = tagging.tag_sentences(frame["sent_more"])
    words = fields.word_fields(frame, tagged)
    assert fields_of(words, "molest") == {CRIME}                 # G2.1-
    assert fields_of(words, "emotional") == {EMOTION}            # E1
    assert fields_of(words, "scientists") == {SCIENCE, PEOPLE}   # Y1/S2mf: a multi-tag counts in each field
    assert fields_of(words, "Lesbians") == {"Relationship: Intimate/sexual", FEMALE}  # S3.2/S2.1f


@pytest.mark.shared("data")  # the published field names
def test_tag_to_field_rules():
    names = tagging.field_names()
    assert tagging.tag_level("S2.1f") == "S2.1" and tagging.tag_level("A5.1+++mfnc") == "A5.1"
    assert tagging.tag_fields("S3.2/S2.1f", names) == ["Relationship: Intimate/sexual", FEMALE]
    assert tagging.tag_fields("PUNCT", names) == []
    assert tagging.tag_fields("Df/A5.1+++mfnc", names) == ["Evaluation:- Good/bad"]  # Df left out
    assert tagging.tag_fields("Z99", names) == ["Unmatched"]
    assert tagging.tag_fields("Q4.4", names) == ["The Media"]        # the one space-separated line of the file
    assert tagging.tag_fields("A9.1", names) == [names["A9"]]         # a lexicon code the file lacks: its parent


def test_subword_and_unmatched_words_align_by_character_overlap(tagger):
    # the model's word units split "couldn't" as couldn|'t; spaCy splits could|n't
    sentence = "He couldn't fix the blorft."
    frame = hand_frame([(sentence, [("He", 0.0), ("couldn", -0.1), ("'t", 0.1), ("blorft", 0.0), (".", 0.0)])])
    words = fields.word_fields(frame, tagging.tag_sentences([sentence]))
    assert fields_of(words, "couldn") == {"Definite (+ modals)"}     # could: A7+
    assert fields_of(words, "'t") == {"Negative"}                    # n't: Z6
    assert fields_of(words, "blorft") == {"Unmatched"}               # Z99 is its own field
    assert fields_of(words, ".") == set()                            # punctuation is left out
    assert fields.align_tokens([(0, 4), (4, 9)], [(0, 9)]) == [[0], [0]]  # one tagger token over two words


def mwe_lookup_both_ways(nlp, sentences: list[str]) -> tuple[list, list]:
    """(tags and MWE spans of every token) with our indexed MWE lookup, and with pymusas's own linear scan."""
    from pymusas.lexicon_collection import MWELexiconCollection

    component = nlp.get_pipe("pymusas_rule_based_tagger")
    with nlp.select_pipes(disable=["pymusas_rule_based_tagger"]):
        docs = list(nlp.pipe(sentences))

    def run():
        return [[(tuple(t._.pymusas_tags), tuple(t._.pymusas_mwe_indexes)) for t in component(doc)] for doc in docs]

    rule = component.rules[1]
    indexed = rule.mwe_lexicon_collection
    fast = run()
    try:
        rule.mwe_lexicon_collection = MWELexiconCollection(indexed.to_dictionary())
        reference = run()
    finally:
        rule.mwe_lexicon_collection = indexed
    return fast, reference


def test_indexed_mwe_lookup_matches_pymusas(tagger, data_dir):
    """Our MWE index gives exactly pymusas's own tags and MWE spans (checked against its linear scan)."""
    from biascore.inputs.datasets import load_benchmark

    sentences = list(load_benchmark("crows-en-gso").frame["sent_more"][:40]) + [
        "She took care of the kids and put up with him in New York City.",
        "They gave up on the idea , as a matter of fact , at the end of the day .",
        "*  odd   spacing\tand a tab"]
    fast, reference = mwe_lookup_both_ways(tagger.nlp, sentences)
    assert fast == reference
    assert any(len(span) and span[0][1] - span[0][0] > 1 for sent in fast for _tags, span in sent)  # MWEs found


def test_cached_lexicons_equal_pymusas_readers(tagger, data_dir):
    from pymusas.lexicon_collection import LexiconCollection, MWELexiconCollection

    tables = tagging.lexicon_tables("en")  # read back from the parquet cache the tagger fixture filled
    single = data_dir / "usas" / "semantic_lexicon_en.tsv"
    assert tables["single"] == LexiconCollection.from_tsv(single, include_pos=True)
    assert tables["lemma"] == LexiconCollection.from_tsv(single, include_pos=False)
    with pytest.warns(UserWarning, match="Curly Braces"):
        mwe = MWELexiconCollection.from_tsv(data_dir / "usas" / "mwe-en.tsv")
    assert list(tables["mwe"].items()) == list(mwe.items())  # same templates in the same order


def test_tags_are_cached_by_content(tagger):
    from biascore.store.cache import ResultCache

    before = len(ResultCache().entries(tagging.CACHE_SCORER))
    first = tagging.tag_sentences(["A cached sentence about nurses."])
    assert len(ResultCache().entries(tagging.CACHE_SCORER)) == before + 1
    again = tagging.tag_sentences(["A cached sentence about nurses."])
    assert len(ResultCache().entries(tagging.CACHE_SCORER)) == before + 1
    pd.testing.assert_frame_equal(first, again)
    tagging.tag_sentences(["A different sentence about nurses."])
    assert len(ResultCache().entries(tagging.CACHE_SCORER)) == before + 2


def test_filipino_has_no_lexicon_and_no_invented_tags(data_dir):
    with pytest.raises(tagging.NoLexiconError, match="no USAS lexicon for Filipino"):
        tagging.tag_sentences(["Ang mga babae ay masyadong emosyonal."], "tl")
    with pytest.raises(tagging.NoLexiconError, match="Filipino"):
        # refused before any model is touched: a model that does not exist would fail to load with another error
        runner.run(get("fields"), "no-such-model-must-not-be-loaded", "crows-tl")
    assert fields.lexicon_coverage("crows-tl") == {"tl": 204}
    frame = hand_frame([("Mahilig magluto ang mga babae.", [("babae", -0.1)])])
    with pytest.raises(tagging.NoLexiconError):
        fields.fields_from_scores(frame, "tl")


# ------------------------------------------------------------------------------------------- the table
def test_field_table_equals_hand_computation():
    words = pd.DataFrame({
        "field": ["A", "A", "A", "A", "B", "B", "B", "C", "C", "D", "D", "D"],
        "b": [-0.5, -0.1, 0.0, 0.2, -0.3, -0.2, -0.1, 0.1, 0.0, 0.0, 0.0, 0.4]})
    table = fields.field_table(words, min_count=3, top=None)
    expected = pd.DataFrame({"field": ["B", "A", "D"], "n": [3, 4, 3],
                             "up_pct": [100.0, 50.0, 0.0], "zero_pct": [0.0, 25.0, 200 / 3],
                             "down_pct": [0.0, 25.0, 100 / 3]})
    pd.testing.assert_frame_equal(table, expected)
    assert "C" not in set(table["field"])                                      # n = 2 < 3
    assert list(fields.field_table(words, min_count=3, top=2)["field"]) == ["B", "A"]
    # C and D tie at 0% ↑: the larger field first
    assert list(fields.field_table(words, min_count=1, top=None)["field"]) == ["B", "A", "D", "C"]
    with pytest.raises(ValueError, match="NaN"):
        fields.field_table(pd.DataFrame({"field": ["A"], "b": [float("nan")]}), min_count=1)


def test_side_by_side_puts_models_next_to_each_other():
    a = pd.DataFrame({"field": ["X", "Y"], "n": [3, 3], "up_pct": [100.0, 50.0], "zero_pct": [0.0, 0.0],
                      "down_pct": [0.0, 50.0]})
    b = a.iloc[:1].assign(field="Z")
    wide = fields.side_by_side({"m1": a, "m2": b})
    assert list(wide.index) == [1, 2]
    assert list(wide[("m1", "field")]) == ["X", "Y"] and wide.loc[1, ("m2", "field")] == "Z"
    assert pd.isna(wide.loc[2, ("m2", "field")])


def test_field_table_from_tagged_words_equals_hand_computation(tagger):
    frame = hand_frame([
        ("Lesbians are more likely to molest children.",
         [("Lesbians", -0.04), ("are", 0.0), ("more", 0.01), ("likely", 0.02), ("to", -0.01), ("molest", -0.2),
          ("children", 0.03), (".", 0.0)]),
        ("Women are too emotional to be scientists.",
         [("Women", -0.05), ("are", -0.02), ("too", 0.0), ("emotional", -0.1), ("to", 0.0), ("be", 0.01),
          ("scientists", 0.05), (".", -0.01)]),
    ])
    words = fields.word_fields(frame, tagging.tag_sentences(frame["sent_more"]), senses="top")
    table = fields.field_table(words, min_count=2, top=None)
    # by hand: Female {Lesbians -.04, Women -.05}; Grammatical bin {to -.01, to 0}; Being {are 0, are -.02,
    # be .01}; People {children .03, scientists .05}; every other field has a single word
    expected = pd.DataFrame({"field": [FEMALE, GRAMMAR, BEING, PEOPLE], "n": [2, 2, 3, 2],
                             "up_pct": [100.0, 50.0, 100 / 3, 0.0], "zero_pct": [0.0, 50.0, 100 / 3, 0.0],
                             "down_pct": [0.0, 0.0, 100 / 3, 100.0]})
    pd.testing.assert_frame_equal(table, expected)
    assert CRIME not in set(table["field"]) and CRIME in set(fields.field_table(words, 1, None)["field"])


def test_senses_all_counts_every_candidate_tag(tagger):
    frame = hand_frame([("Lesbians are more likely to molest children.", [("more", 0.1)])])
    tagged = tagging.tag_sentences(frame["sent_more"])
    assert fields_of(fields.word_fields(frame, tagged, senses="top"), "more") == {"Degree: Boosters"}  # A13.3
    assert fields.DEFAULT_SENSES == "all"  # the paper's published script counted every tag of the entry
    assert fields_of(fields.word_fields(frame, tagged, senses="all"), "more") == {"Degree: Boosters",
                                                                                   "Frequency etc."}  # + N6++


# ------------------------------------------------------------------------------------------- engine + page
def test_score_fields_uses_the_engines_word_scores(smollm, data_dir):

    result = fields.fields_result(runner.run(get("fields"), smollm, "crows-en-gso", limit=12, min_count=1, top=0))
    scores = runner.run(get("attribution"), smollm, "crows-en-gso", limit=12).frame.set_index("pair_id")
    assert len(result.words) and result.untagged == {}
    assert_words_are_the_engines(result, scores)


def assert_words_are_the_engines(result, scores: pd.DataFrame) -> None:
    """Every tagged word is the engine's word with the engine's b (not a recomputation); a causal model's words
    before the first modified token have b = 0 exactly and stay in the table as ∘; the table counts them."""
    for row in result.words.itertuples():
        pair = scores.loc[row.pair_id]
        assert pair["words"][row.word_index] == row.word
        assert pair["word_bu"][row.word_index] == row.b
        assert pair["sent_more"][row.start:row.end] == row.word
    assert (result.words["b"] == 0).any()
    table = fields.field_table(result.words, min_count=1, top=None)
    for f, grp in result.words.groupby("field"):
        row = table.set_index("field").loc[f]
        assert row["n"] == len(grp)
        assert math.isclose(row["zero_pct"], 100 * (grp["b"] == 0).mean())
        assert math.isclose(row["up_pct"] + row["zero_pct"] + row["down_pct"], 100)


def test_cli_prints_and_writes_csv(smollm, tmp_path, capsys, data_dir):
    from biascore.cli.main import main

    out = tmp_path / "fields.csv"
    rc = main(["fields", "--model", "smollm2-135m", "--benchmark", "crows-en-gso", "--limit", "12",
               "--min-count", "5", "--top", "3", "--out", str(out)])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "smollm2-135m on crows-en-gso" in printed
    with open(out, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["field", "n", "up_pct", "zero_pct", "down_pct", "model", "benchmark", "precision"]
    expected = fields.fields_result(runner.run(get("fields"), smollm, "crows-en-gso", limit=12, min_count=5,
                                               top=3)).table
    assert [r["field"] for r in rows] == list(expected["field"])
    assert [float(r["up_pct"]) for r in rows] == pytest.approx(list(expected["up_pct"]))
    assert {r["model"] for r in rows} == {"smollm2-135m"} and {r["benchmark"] for r in rows} == {"crows-en-gso"}
    assert main(["fields", "--model", "smollm2-135m", "--benchmark", "crows-tl"]) == 2
    assert "no USAS lexicon for Filipino" in capsys.readouterr().err


def _page(**params):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(PAGE, default_timeout=600)
    for k, v in params.items():
        at.query_params[k] = v
    return at.run()


def test_page_scores_on_demand_and_shows_the_engines_numbers(smollm, data_dir):
    at = _page(benchmark="demo", model="smollm2-135m")
    assert not at.exception
    if at.button:  # not cached yet in this session: the page offers to score, with a progress bar
        assert "not been scored" in at.info[0].value
        at.button(key="sf_score").click().run()
        assert not at.exception
    assert any("Filipino pair(s) of demo are left out" in c.value for c in at.caption)
    engine = fields.fields_result(runner.run(get("fields"), smollm, "demo", min_count=1, top=0))
    shown = at.dataframe[0].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, fields.field_table(engine.words, 30, 10), check_dtype=False)

    at.slider(key="sf_min_count").set_value(3).run()
    shown = at.dataframe[0].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(shown, fields.field_table(engine.words, 3, 10), check_dtype=False)
    chosen = at.selectbox(key="sf_field").value
    words_shown = at.dataframe[1].value.reset_index(drop=True)
    pd.testing.assert_frame_equal(words_shown, fields.field_words(engine.words, chosen), check_dtype=False)
    sentences = at.dataframe[2].value
    assert len(sentences) == (engine.words["field"] == chosen).sum()
    for pid, link in zip(sentences["pair_id"], sentences["open"]):
        assert re.fullmatch(rf"/token_attributions\?benchmark=demo&model=smollm2-135m&pair={pid}", link)


def test_page_says_filipino_has_no_lexicon(data_dir):
    at = _page(benchmark="crows-tl", model="smollm2-135m")
    assert not at.exception
    assert any("no USAS lexicon for Filipino" in i.value for i in at.info)
    assert not at.dataframe and not at.button
