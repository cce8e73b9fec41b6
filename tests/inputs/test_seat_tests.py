"""The one SEAT loader (biascore.inputs.seat_tests): dedup, minimum sizes, sentence rule, names."""
import json

import pytest

from biascore.inputs.seat_tests import (SeatTestError, SeatTestNotFound, list_seat_tests, load_seat_test)


def _write(tmp_path, name, **roles):
    obj = {r: {"category": r, "examples": ex} for r, ex in roles.items()}
    path = tmp_path / f"{name}.jsonl"
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


def test_repeats_and_blanks_are_dropped_first_kept(tmp_path):
    path = _write(tmp_path, "t", targ1=["a", " a ", "b"], targ2=["c", "d"], attr1=["e", "", "e"], attr2=["f"])
    t = load_seat_test(str(path))
    assert t.X == ("a", "b") and t.A == ("e",) and t.B == ("f",)
    assert t.kind == "words" and not t.sentence_level


def test_minimum_sizes(tmp_path):
    with pytest.raises(SeatTestError, match="targ1 needs at least 2"):
        load_seat_test(str(_write(tmp_path, "t1", targ1=["a", "a"], targ2=["c", "d"], attr1=["e"], attr2=["f"])))
    with pytest.raises(SeatTestError, match="attr2 needs at least 1"):
        load_seat_test(str(_write(tmp_path, "t2", targ1=["a", "b"], targ2=["c", "d"], attr1=["e"], attr2=[" "])))


def test_sentence_rule_by_prefix_or_punctuation(data_dir):
    assert load_seat_test("sent-weat6", data_dir).kind == "sentences"
    assert load_seat_test("weat6", data_dir).kind == "words"
    # Heilman double-bind tests hold sentences without the sent- prefix
    assert load_seat_test("heilman_double_bind_competent_1", data_dir).sentence_level
    words = list_seat_tests(data_dir, kind="words")
    assert {"weat6", "heilman_double_bind_competent_one_word"} <= set(words)
    assert not any(n.startswith("sent-") or n == "heilman_double_bind_competent_1" for n in words)


def test_bangla_files_drop_their_repeated_attribute(data_dir):
    raw = json.loads((data_dir / "bangla" / "ceat_categories" / "ceat1.jsonl").read_text(encoding="utf-8-sig"))
    t = load_seat_test("bangla-c1", data_dir)
    assert t.language == "bn" and t.name == "bangla-c1"
    assert len(t.A) == len(set(x.strip() for x in raw["attr1"]["examples"])) == len(raw["attr1"]["examples"]) - 1
    assert list_seat_tests(data_dir, language="bn") == [f"bangla-c{i}" for i in range(1, 10)]


def test_names_never_reach_other_paths(data_dir):
    with pytest.raises(SeatTestNotFound):
        load_seat_test("no-such-test", data_dir)
    with pytest.raises(SeatTestError):
        load_seat_test("../etc/passwd", data_dir)


def test_a_malformed_file_stays_listed_and_says_what_is_wrong(tmp_path):
    (tmp_path / "seat").mkdir()
    _write(tmp_path / "seat", "good", targ1=["a", "b"], targ2=["c", "d"], attr1=["e"], attr2=["f"])
    (tmp_path / "seat" / "bad.jsonl").write_text("{not json", encoding="utf-8")
    assert list_seat_tests(tmp_path, kind="words") == ["bad", "demo-weat6", "good"]  # the shipped test too
    assert list_seat_tests(tmp_path, kind="sentences") == ["bad"]
    with pytest.raises(SeatTestError, match="bad.jsonl is not one JSON object"):
        load_seat_test("bad", tmp_path)

