"""The inputs shipped with the project (data/shipped.json): registered with a licence and a citation, documented in
docs/data.md, read on a bare data directory (and only there: a data directory's own file wins), and enough for
their methods — WEAT 6 as Caliskan et al. published it, a LABDet probe that trains and gives bars."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from biascore.inputs import download
from biascore import settings
from biascore.inputs import shipped
from biascore.inputs.seat_tests import gender_wordlist_path, list_seat_tests, load_gender_wordlists, load_seat_test
from biascore.methods import get
from biascore.methods.heads import counter_stereotype as cs
from biascore.methods.labdet import scorer as labdet

REPO = Path(__file__).resolve().parents[2]
DATA = settings.PROJECT_DATA
#: files under data/ that are the project's own, read from data/ directly (not stand-ins for a data-directory file)
PROJECT_FILES = {"benchmarks.json", "downloads.json", "shipped.json", "logprob_tests.json", "bangla_suffixes.txt",
                 "bangla_suffix_overrides.tsv"}
DOCS = (REPO / "docs" / "data.md").read_text(encoding="utf-8")

#: WEAT 6 of Caliskan, Bryson & Narayanan (2017, Science), supplementary materials
WEAT6 = {"targ1": ["John", "Paul", "Mike", "Kevin", "Steve", "Greg", "Jeff", "Bill"],
         "targ2": ["Amy", "Joan", "Lisa", "Sarah", "Diana", "Kate", "Ann", "Donna"],
         "attr1": ["executive", "management", "professional", "corporation", "salary", "office", "business", "career"],
         "attr2": ["home", "parents", "children", "family", "cousins", "marriage", "wedding", "relatives"]}


def test_every_file_under_data_is_registered_with_its_licence_and_documented():
    tracked = subprocess.run(["git", "ls-files", "data"], cwd=REPO, capture_output=True, text=True,
                             check=True).stdout.split()
    files = {Path(p).relative_to("data").as_posix() for p in tracked}
    registered = {f.path for f in shipped.shipped_files()}
    assert files - PROJECT_FILES == registered
    for f in shipped.shipped_files():
        assert f.licence.strip() and f.citation.strip() and f.what.strip(), f
        assert (DATA / f.path).is_file(), f.path
    for name in files:
        assert f"`{name}`" in DOCS or f"`{Path(name).name}`" in DOCS, f"docs/data.md does not name data/{name}"


def test_every_downloadable_file_has_a_licence_and_its_folder_a_row_in_the_docs():
    for entry in download.load_manifest():
        assert entry.licence.strip(), entry.path
        folder = entry.path.split("/", 1)[0]
        assert f"`{folder}/" in DOCS, f"docs/data.md has no row for {folder}/"
    assert "CC BY-NC-SA 4.0" in DOCS and "CC BY-SA 4.0" in DOCS and "CC BY-NC 4.0" in DOCS


def test_the_shipped_word_lists_are_the_published_files():
    manifest = {e.path: e.sha256 for e in download.load_manifest()}
    for part in ("female", "male", "stereotype"):
        path = f"wordlists/gender_{part}.txt"
        assert hashlib.sha256((DATA / path).read_bytes()).hexdigest() == manifest[path]
    notice = (DATA / "wordlists" / "LICENSE").read_text(encoding="utf-8")
    assert "MIT License" in notice and "Copyright (c) 2021 Masahiro Kaneko" in notice


def test_demo_weat6_holds_caliskans_word_lists():
    test = load_seat_test("demo-weat6", DATA / "nowhere")
    assert {role: list(test.examples[role]) for role in WEAT6} == WEAT6
    assert test.kind == "words" and test.describe() == "MaleNames vs FemaleNames × Career vs Family"


def test_demo_weat6_has_the_word_lists_of_the_downloaded_weat6(data_dir):
    theirs = load_seat_test("weat6", data_dir)
    assert load_seat_test("demo-weat6", data_dir).examples == theirs.examples


def test_a_bare_data_directory_gets_every_method_an_input(tmp_path):
    assert list_seat_tests(tmp_path) == ["demo-weat6"]
    assert get("labdet").input_kind.names(tmp_path) == ["demo"]
    assert gender_wordlist_path("female", tmp_path) == DATA / "wordlists" / "gender_female.txt"
    sources = cs.counter_sources(tmp_path)
    pairs, _ = cs.collect_pairs(sources.lists, data_dir=tmp_path)
    assert sources.name == "demo-gender-pairs" and set(sources.sources) == {"demo"}
    assert [(p.attribute, p.target) for p in pairs] == [("Women", "emotional"), ("girl", "weak"), ("women", "gossip")]


def test_a_data_directory_keeps_its_own_files(fixture_data, tmp_path):
    own = load_gender_wordlists(fixture_data)
    assert gender_wordlist_path("male", fixture_data) == fixture_data / "wordlists" / "gender_male.txt"
    assert len(own.female) == 15 and own.content_hash != load_gender_wordlists(tmp_path).content_hash
    assert cs.counter_sources(fixture_data).name == "crows-gender-pairs"
    assert "demo-weat6" in list_seat_tests(fixture_data)  # listed beside the directory's own tests


def test_a_snapshot_reads_only_its_own_copies(tmp_path):
    (tmp_path / "data").mkdir()
    settings.use_snapshot(tmp_path)
    try:
        assert list_seat_tests() == []
        assert shipped.data_file("seat/demo-weat6.jsonl") == tmp_path / "data" / "seat" / "demo-weat6.jsonl"
    finally:
        settings.use_snapshot(None)


def test_labdet_demo_files_are_the_expansion_of_their_lists():
    spec = json.loads((DATA / "labdet" / "Templates" / "demo_template.json").read_text(encoding="utf-8"))
    data = labdet.load_labdet("demo")
    expected_train = {t.replace("[NOUN]", n).replace("[ADJ]", a)
                      for t in spec["sentiment_templates"] for n in spec["nouns"]
                      for a in spec["positive_adjectives"] + spec["negative_adjectives"]}
    assert set(data.train["sentence"]) == expected_train and len(data.train) == 600
    positive = data.train[data.train["label"] == 1]["adj"]
    assert set(positive) == set(spec["positive_adjectives"])
    words = {c: w for c, w in spec["alternatives"].items() if c != labdet.NEUTRAL}
    assert data.words == dict(sorted(words.items())) and len(words) == 12
    assert len(data.test) == len(spec["surfacing_templates"]) * len(spec["neutral_adjectives"]) * (len(words) + 1)
    assert all("[NATIONALITY]" not in s and "[ADJ]" not in s for s in data.test["sentence"])


def test_labdet_demo_trains_the_probe_and_gives_a_bar_per_nationality(minilm, private_cache):
    from biascore.runs import runner

    result = runner.run(get("labdet"), minilm, "demo")
    table = result.table
    assert result.accuracy["svm"] >= 0.9 and result.accuracy["mlp"] >= 0.8  # the probe learned sentiment
    assert len(table) == 12 and table["n_templates"].eq(6).all() and table["n_items"].eq(48).all()
    assert np.isfinite(table[["mean", "ci_low", "ci_high", "p_value"]].to_numpy()).all()
    assert (table["ci_low"] <= table["mean"]).all() and (table["mean"] <= table["ci_high"]).all()


def test_data_download_prints_the_licences_of_what_it_fetched(tmp_path, processes):
    out = subprocess.run([sys.executable, "-m", "biascore", "data", "download", "--data-dir", str(tmp_path),
                          "--only", "wordlists", "--mirror", DATA.as_uri(), "--quiet"],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "3 downloaded" in out.stdout
    assert "Licences of these files (sources and citations: docs/data.md):" in out.stdout
    assert "  MIT: wordlists/* (3 files)" in out.stdout


def test_licence_lines_group_the_files_by_licence():
    outcomes = [download.Outcome("crows_pairs/crows_pairs_anonymized.csv", "downloaded"),
                download.Outcome("usas/mwe-en.tsv", "present"), download.Outcome("usas/LICENSE", "downloaded"),
                download.Outcome("seat/weat1.jsonl", "failed", "HTTP 404")]
    assert download.licence_lines(outcomes) == ["CC BY-SA 4.0: crows_pairs/crows_pairs_anonymized.csv",
                                                "CC BY-NC-SA 4.0 (see usas/LICENSE): usas/mwe-en.tsv, usas/LICENSE"]
