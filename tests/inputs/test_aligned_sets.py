"""The multilingual catalogue: every language of the S_JSD paper's gender set and of Dutch CrowS-Pairs' aligned set is
a registered benchmark with its alignment key, licence and citation; bad alignment keys are refused in one line; the
word rule for scripts with combining marks or without spaces."""
from __future__ import annotations

import pytest

from biascore.inputs.datasets import BenchmarkError, load_benchmark, registry
from biascore.models.pair_tokens import word_spans

SJSD = [f"sjsd-gender-{lang}" for lang in ("ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh")]
DUTCH = ["crows-nl-nl", "crows-nl-en", "crows-nl-fr"]


def test_every_language_is_registered_with_its_key_licence_and_citation(data_dir):
    keys = {}
    for name in SJSD + DUTCH:
        spec, bm = registry()[name], load_benchmark(name, data_dir)
        assert spec["licence"] and spec["citation"] and spec["alignment"]["set"] and spec["language"] == bm.language
        assert spec["file"].startswith("multilingual/") and len(bm) == spec["expected_rows"] and bm.malformed == []
        assert bm.frame.source_id.is_unique
        keys[name] = list(bm.frame.source_id)
    assert all(keys[n] == keys[SJSD[0]] for n in SJSD) and len(keys[SJSD[0]]) == 212
    assert all(sorted(keys[n]) == sorted(keys[DUTCH[0]]) for n in DUTCH) and len(keys[DUTCH[0]]) == 1463
    de = load_benchmark("sjsd-gender-de", data_dir).frame
    assert set(de.bias_type) == {"gender"} and de.sent_more_en.str.len().gt(0).all()


def test_the_identical_indonesian_pair_is_skipped_with_its_reason(data_dir):
    frame = load_benchmark("sjsd-gender-id", data_dir).frame
    bad = frame[frame.load_issue != ""]
    assert list(bad.source_id) == ["29"] and list(bad.load_issue) == ["identical sentences"]


@pytest.mark.parametrize("rows,message", [
    ("1,a b,a c\n1,d e,d f\n", "alignment key '1' repeats (pairs 0, 1)"),
    ("1,a b,a c\n ,d e,d f\n", "alignment key missing for pair 1"),
])
def test_a_bad_alignment_key_refuses_the_file_in_one_line(tmp_path, rows, message):
    path = tmp_path / "pairs.csv"
    path.write_text("source_id,sent_more,sent_less\n" + rows, encoding="utf-8")
    with pytest.raises(BenchmarkError) as caught:
        load_benchmark(path)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def _words(text):
    return [text[a:b] for a, b in word_spans(text)]


def test_word_rule_keeps_marks_and_cuts_scripts_without_spaces():
    # Arabic vowel signs (shadda, damma) stay inside their word: four words and a full stop
    assert _words("تساءل عمَّا إذا اعتُبر.") == ["تساءل", "عمَّا", "إذا", "اعتُبر", "."]
    assert _words("这个男人。") == ["这", "个", "男", "人", "。"]  # each Han character a word
    assert _words("don't mag-aaral, O’Brien") == ["don't", "mag-aaral", ",", "O’Brien"]
    # Thai: PyThaiNLP's dictionary words ("women tend to be shy by nature"), whatever the model's tokens
    assert _words("ผู้หญิงมักขี้อายโดยธรรมชาติ CAD") == ["ผู้หญิง", "มัก", "ขี้อาย", "โดยธรรมชาติ", "CAD"]
