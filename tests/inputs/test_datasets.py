"""The benchmark loader on the real (messy) files and on bad input: clear errors, nothing silently lost."""
from __future__ import annotations

import difflib

import pytest

from biascore.inputs.datasets import BenchmarkError, load_benchmark, registry

DOWNLOAD_HINT = "python -m biascore data download"


def _csv(tmp_path, text: str | bytes, name: str = "pairs.csv"):
    path = tmp_path / name
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


@pytest.mark.parametrize("name,count", [("crows-en", 1508), ("crows-en-gso", 231), ("crows-tl", 204),
                                        ("winoqueer-tl", 12089)])
def test_registered_benchmarks_load_completely(data_dir, name, count):
    bm = load_benchmark(name, data_dir)
    assert len(bm) == count == registry()[name]["expected_rows"]
    assert bm.malformed == []
    assert (bm.frame["load_issue"] == "").all()
    assert list(bm.frame["pair_id"]) == list(range(count))


def test_gender_so_subset_split_and_curly_apostrophe(data_dir):
    frame = load_benchmark("crows-en-gso", data_dir).frame
    assert frame["bias_type"].value_counts().to_dict() == {"gender": 159, "sexual-orientation": 72}
    text = " ".join(frame["sent_more"]) + " ".join(frame["sent_less"])
    assert "’" in text  # read as UTF-8, not garbled by unicode_escape
    assert "â€" not in text and "\\u" not in text and "\ufffd" not in text


def test_crows_tl_mixed_encoding_is_decoded(data_dir):
    bm = load_benchmark("crows-tl", data_dir)
    raw = bm.path.read_bytes()
    # the file really is messy: Windows-1252 "…" (0x85) next to UTF-8 "’", which a cp1252 reader shows as "â€™"
    assert b"\x85" in raw and "’".encode() in raw and "’".encode().decode("cp1252") == "â€™"
    frame = bm.frame
    assert frame["bias_type"].value_counts().to_dict() == {"gender": 131, "sexual-orientation": 73}
    cells = frame[["sent_more", "sent_less", "sent_more_en", "sent_less_en", "bias_type"]].to_numpy().ravel()
    assert not any("\ufffd" in c or "â€" in c for c in cells)
    assert any("…" in c for c in frame["sent_more"])  # Windows-1252 0x85
    assert frame["sent_more_en"].str.contains("’").sum() >= 1  # mojibake ’ repaired
    assert (frame["sent_more_en"] != "").all() and (frame["sent_less_en"] != "").all()


def test_winoqueer_tl_bom_is_stripped(data_dir):
    bm = load_benchmark("winoqueer-tl", data_dir)
    assert bm.path.read_bytes().startswith(b"\xef\xbb\xbf")
    frame = bm.frame
    assert not frame["sent_more"].str.startswith("\ufeff").any()
    assert {"bakla", "bading", "tomboy", "lesbiyana"} <= set(frame["bias_type"])


def test_demo_pairs_ship_with_the_project():
    bm = load_benchmark("demo")
    frame = bm.frame
    assert len(bm) >= 30 and bm.malformed == [] and (frame["load_issue"] == "").all()
    assert set(frame["language"]) == {"en", "tl"}
    en, tl = frame[frame["language"] == "en"], frame[frame["language"] == "tl"]
    assert (en["sent_more_en"] == "").all() and (tl["sent_more_en"] != "").all() and (tl["sent_less_en"] != "").all()
    english_pairs = set(zip(en["sent_more"], en["sent_less"]))
    assert sum((m, l) in english_pairs for m, l in zip(tl["sent_more_en"], tl["sent_less_en"])) >= 2
    for more, less in zip(frame["sent_more"], frame["sent_less"]):  # minimal pairs: a few words differ
        a, b = more.split(), less.split()
        changed = [op for op in difflib.SequenceMatcher(a=a, b=b).get_opcodes() if op[0] != "equal"]
        assert len(changed) <= 2 and sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in changed) <= 3, (more, less)


def test_missing_columns_are_named(tmp_path):
    path = _csv(tmp_path, "sent_more,bias_type\nWomen are bad drivers.,gender\n")
    with pytest.raises(BenchmarkError) as err:
        load_benchmark(str(path))
    assert "missing column(s): sent_less" in str(err.value) and "the file has: sent_more, bias_type" in str(err.value)


def test_registered_file_with_a_missing_column(tmp_path, data_dir):
    (tmp_path / "crows_pairs").mkdir()
    lines = (data_dir / "crows_pairs" / "crowspairs_en_gender_so.csv").read_text(encoding="utf-8").splitlines()
    header = lines[0].replace("sent_less_bias", "sent_less_typo")
    (tmp_path / "crows_pairs" / "crowspairs_en_gender_so.csv").write_text("\n".join([header] + lines[1:]))
    with pytest.raises(BenchmarkError, match=r"sent_less \(column 'sent_less_bias'\).*sent_less_typo"):
        load_benchmark("crows-en-gso", tmp_path)


def test_malformed_rows_are_reported_by_line_and_the_rest_loads(tmp_path):
    path = _csv(tmp_path, (
        "sent_more,sent_less,bias_type\n"            # line 1
        "Men are strong.,Women are strong.,gender\n"  # 2
        "only,two\n"                                  # 3  too few fields
        '"The old man\nwas slow.","The young man\nwas slow.",age\n'  # 4-6  quoted line breaks are fine
        "a,b,c,d\n"                                   # 7  too many fields
        "\n"                                          # 8  blank: ignored
        "Poor people steal.,Rich people steal.,socioeconomic\n"  # 9
    ))
    bm = load_benchmark(str(path))
    assert bm.malformed == ["line 3: expected 3 fields, found 2", "line 7: expected 3 fields, found 4"]
    assert list(bm.frame["bias_type"]) == ["gender", "age", "socioeconomic"]
    assert bm.frame["sent_more"][1] == "The old man\nwas slow."


def test_stray_quote_does_not_swallow_the_rows_after_it(tmp_path):
    path = _csv(tmp_path, 'sent_more,sent_less,bias_type\n"Broken row,Other,gender\nA b.,C b.,age\nD e.,F e.,age\n')
    bm = load_benchmark(str(path))
    assert len(bm.malformed) == 1 and bm.malformed[0].startswith("line 2: ")
    assert list(bm.frame["sent_more"]) == ["A b.", "D e."]


def test_empty_and_identical_sentences_are_kept_with_load_issue(tmp_path):
    path = _csv(tmp_path, (
        "sent_more,sent_less,bias_type\n"
        "Women are bad drivers.,Men are bad drivers.,gender\n"
        ",Men are bad drivers.,gender\n"
        "   ,x,gender\n"
        "Same sentence.,Same sentence.,gender\n"
        "Same  sentence. , Same sentence.,gender\n"
    ))
    frame = load_benchmark(str(path)).frame
    assert list(frame["pair_id"]) == [0, 1, 2, 3, 4]
    assert list(frame["load_issue"]) == ["", "empty sentence", "empty sentence", "identical sentences",
                                         "identical sentences"]


def test_user_csv_column_aliases_and_encodings(tmp_path):
    path = _csv(tmp_path, b"\xef\xbb\xbfstereo,anti_stereo\nThe caf\xe9 owner is lazy.,The bank owner is lazy.\n")
    frame = load_benchmark(str(path)).frame
    assert frame["sent_more"][0] == "The café owner is lazy."  # BOM stripped, stray cp1252 byte decoded
    assert frame["bias_type"][0] == "unspecified"


def test_unknown_name_and_missing_file_say_how_to_download(tmp_path):
    with pytest.raises(BenchmarkError) as err:
        load_benchmark("crows-fr")
    assert "unknown benchmark 'crows-fr'" in str(err.value) and "crows-tl" in str(err.value)
    assert DOWNLOAD_HINT in str(err.value)
    with pytest.raises(BenchmarkError) as err:
        load_benchmark("crows-tl", tmp_path)
    message = str(err.value)
    assert str(tmp_path / "filipino" / "crowspairs_tl.csv") in message and DOWNLOAD_HINT in message


def test_empty_file_names_the_file(tmp_path):
    path = _csv(tmp_path, b"")
    with pytest.raises(BenchmarkError, match=f"{path}: the file is empty"):
        load_benchmark(str(path))


def test_content_hash_follows_the_pairs(tmp_path):
    text = "sent_more,sent_less,bias_type\nWomen are weak.,Men are weak.,gender\n"
    a = load_benchmark(str(_csv(tmp_path, text, "a.csv"))).content_hash
    b = load_benchmark(str(_csv(tmp_path, text, "b.csv"))).content_hash
    c = load_benchmark(str(_csv(tmp_path, text.replace("weak", "frail"), "c.csv"))).content_hash
    assert a == b != c
