"""A result record that round-trips: ``Result.to_parquet`` → ``biascore.load_result`` gives the same result
(frame, meta, options, summary, pairs) for several methods; ``Result.to_json`` is the run's record (config,
versions, fingerprint, input hash, seeds, timings); ``show``/``save_html`` outside Jupyter; the lazy API in
``dir(biascore)``."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pandas as pd
import pytest

import biascore
from biascore.api import ResultFileError, load_result

from conftest import FIXTURE_DATA, REPO


@pytest.fixture(scope="module")
def results(random_mlm, random_causal, tmp_path_factory):
    """Three methods' results on hermetic models and data: pairs (attribution, causal), SEAT (association,
    masked) and LABDet (masked), each computed into a private cache."""
    cache = tmp_path_factory.mktemp("record-cache")
    common = dict(cache_dir=cache, data_dir=FIXTURE_DATA, progress=False)
    return {
        "attribution": biascore.run("attribution", random_causal, "crows-en-gso", limit=12, **common),
        "seat": biascore.run("seat", random_mlm, "names-career-family", n_samples=200, **common),
        "labdet": biascore.run("labdet", random_mlm, "en", n_boot=200, **common),
    }


@pytest.mark.parametrize("name", ["attribution", "seat", "labdet"])
def test_saved_result_loads_back_equal(results, name, tmp_path):
    result = results[name]
    path = result.to_parquet(tmp_path / f"{name}.parquet")
    back = load_result(path, data_dir=FIXTURE_DATA)
    assert type(back) is type(result) and back.method.name == result.method.name
    pd.testing.assert_frame_equal(back.frame.reset_index(drop=True), result.frame.reset_index(drop=True),
                                  check_dtype=False)
    assert back.meta == json.loads(json.dumps(result.meta, default=str))
    assert back.options == result.options
    pd.testing.assert_frame_equal(back.summary(), result.summary())
    assert back.headline() == result.headline() and back.describe() == result.describe()
    if name == "attribution":
        for pid in result.frame["pair_id"].head(4):
            assert repr(back.pair(pid)) == repr(result.pair(pid))
            assert back.pair(pid).tokens == result.pair(pid).tokens


def test_loaded_result_without_its_data_still_summarises(results, tmp_path):
    path = results["labdet"].to_parquet(tmp_path / "l.parquet")
    back = load_result(path, data_dir=tmp_path)  # the data directory has no LABDet files
    assert back.input is None
    pd.testing.assert_frame_equal(back.summary(), results["labdet"].summary())


def test_not_a_result_file_is_one_line(tmp_path):
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(bytes(range(256)) * 4)
    plain = tmp_path / "plain.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(plain)
    for path, match in ((junk, "not a parquet file"), (plain, "holds a table but no biascore result"),
                        (tmp_path / "missing.parquet", "no result file")):
        with pytest.raises(ResultFileError, match=match) as err:
            load_result(path)
        assert "\n" not in str(err.value) and "\\x" not in str(err.value)


def test_results_json_holds_the_run(results, tmp_path):
    result = results["labdet"]
    text = result.to_json(tmp_path / "r.json")
    record = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert json.loads(text) == record
    assert record["config"]["method"] == "labdet" and record["config"]["options"]["n_boot"] == 200
    assert record["model"]["fingerprint"] == result.meta["model_fingerprint"] != ""
    assert record["input"]["hash"] == result.meta["input_hash"] != ""
    assert record["seeds"] == {"seed": 0}
    for package in ("biascore", "torch", "transformers", "python"):
        assert record["versions"][package] and record["versions_read"][package]
    assert record["versions"]["biascore"] == biascore.ENGINE_VERSION
    assert record["timings"]["compute_s"] >= 0 and "this_call_s" in record["timings"]
    assert re.match(r"\d{4}-\d\d-\d\dT", record["timings"]["finished_at"])
    assert len(record["results"]) == len(result.summary())
    # the record survives the parquet round trip (timings of the computation included)
    back = load_result(result.to_parquet(tmp_path / "r.parquet"), data_dir=FIXTURE_DATA)
    again = json.loads(back.to_json())
    assert again["versions"] == record["versions"] and again["results"] == record["results"]
    assert again["timings"]["compute_s"] == record["timings"]["compute_s"]


def test_show_and_save_html_outside_jupyter(results, tmp_path, capsys):
    result = results["attribution"]
    result.show()
    out = capsys.readouterr().out
    assert out.startswith(result.headline() + "\n")
    assert all(str(c) in out for c in result.summary().columns)
    page = result.save_html(tmp_path / "r.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "biascore-result" in page and "<script" not in page


def test_api_names_are_in_dir_and_the_docstring_links_exist(processes):
    names = dir(biascore)
    for name in ("run", "load_model", "load_result", "score_pair", "methods", "benchmarks"):
        assert name in names and callable(getattr(biascore, name))
    for link in re.findall(r"docs/[\w-]+\.md", biascore.__doc__):
        assert (REPO / link).is_file(), link
    # ``import biascore`` stays light: dir() imports nothing heavy
    code = "import sys, biascore; dir(biascore); print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True).stdout.strip() == "False"


# --------------------------------------------------------------------------- every result file (issue 33, item 3)
def _rewrite_record(src, dst, **meta_changes):
    """A copy of a result file whose record's meta has ``meta_changes`` (another engine, another method version)."""
    import pyarrow.parquet as pq

    from biascore.contract.result import RECORD_KEY

    table = pq.read_table(src)
    record = json.loads(table.schema.metadata[RECORD_KEY])
    record["meta"].update(meta_changes)
    pq.write_table(table.replace_schema_metadata({**table.schema.metadata, RECORD_KEY: json.dumps(record)}), dst)
    return dst


@pytest.fixture(scope="module")
def score_out(random_mlm, tmp_path_factory):
    """`score --out x.parquet` of one model on one benchmark and on two, into a private cache, and the result the
    API gives."""
    from biascore.cli.main import main

    tmp = tmp_path_factory.mktemp("score-out")
    cache = tmp / "cache"
    common = ["--benchmark", "demo", "--limit", "6", "--cache-dir", str(cache)]
    assert main(["score", "--model", str(random_mlm.source), *common, "--out", str(tmp / "one.parquet")]) == 0
    assert main(["score", "--model", str(random_mlm.source), "--benchmark", "demo,crows-en-gso", "--limit", "6",
                 "--data-dir", str(FIXTURE_DATA), "--cache-dir", str(cache), "--out", str(tmp / "two.parquet")]) == 0
    result = biascore.run("attribution", random_mlm, "demo", limit=6, cache_dir=cache, progress=False)
    return tmp, cache, result


def test_score_out_parquet_loads_back_as_the_result(score_out):
    tmp, _, result = score_out
    back = biascore.load_result(tmp / "one.parquet")
    pd.testing.assert_frame_equal(back.frame, result.frame, check_dtype=False)
    pd.testing.assert_frame_equal(back.summary(), result.summary())
    assert back.pair(int(result.frame.pair_id.iloc[0])).tokens == result.pair(int(result.frame.pair_id.iloc[0])).tokens
    with pytest.raises(ResultFileError) as err:
        biascore.load_result(tmp / "two.parquet")
    assert str(err.value).endswith("holds 2 attribution results stacked (--out of several models or inputs): write "
                                   "one model on one input to a file to load it as a result")


def test_the_caches_own_files_load_as_the_result(score_out):
    _, cache, result = score_out
    stored = cache / "attribution" / f"{result.digest}.parquet"
    assert stored.is_file()
    back = biascore.load_result(stored, data_dir=FIXTURE_DATA)
    pd.testing.assert_frame_equal(back.frame, result.frame, check_dtype=False)
    pd.testing.assert_frame_equal(back.summary(), result.summary())
    derived = list((cache / "attribution.derived").glob("*.parquet"))
    assert len(derived) == 2  # demo's and crows-en-gso's: each read as the result it was derived for
    loaded = {r.input_name: r for r in (biascore.load_result(p, data_dir=FIXTURE_DATA) for p in derived)}
    pd.testing.assert_frame_equal(loaded["demo"].summary(), result.summary())
    assert len(loaded["crows-en-gso"].frame) == 6


def test_files_of_another_engine_or_method_version_are_refused_at_load(score_out, tmp_path):
    from biascore.store.cache import ResultCache, rekey_file
    from biascore.runs.runner import key_of
    from biascore.version import ENGINE_VERSION

    tmp, cache, result = score_out
    old = _rewrite_record(tmp / "one.parquet", tmp_path / "old.parquet", engine_version="1.0.0")
    with pytest.raises(ResultFileError) as err:
        biascore.load_result(old)
    assert str(err.value) == (f"{old} was computed by biascore engine 1.0.0, not this engine ({ENGINE_VERSION}): its "
                              "numbers are not this engine's; run attribution on this model and input again")
    older = _rewrite_record(tmp / "one.parquet", tmp_path / "older.parquet", method_version=0)
    with pytest.raises(ResultFileError, match=r"computed by version 0 of attribution, not this one \(1\)"):
        biascore.load_result(older)
    src = cache / "attribution" / f"{result.digest}.parquet"
    key = key_of(ResultCache.entry_meta(src), engine_version="1.0.0")
    old_cache = tmp_path / "cache" / "attribution" / f"{key.digest}.parquet"
    old_cache.parent.mkdir(parents=True)
    rekey_file(src, key, old_cache)
    with pytest.raises(ResultFileError, match=r"computed by biascore engine 1\.0\.0, not this engine") as err:
        biascore.load_result(old_cache)
    assert "\n" not in str(err.value) and "Result.to_parquet" not in str(err.value)


def test_an_edited_footer_copy_of_the_engine_version_is_refused_at_load(score_out, tmp_path):
    """The record's meta is the one source of the engine version; the ``biascore`` footer entry (a result file's
    description, a cache file's key) repeats it and is checked against it: edited, the file is refused."""
    import pyarrow.parquet as pq

    tmp, cache, result = score_out
    for src in (tmp / "one.parquet", cache / "attribution" / f"{result.digest}.parquet"):
        table = pq.read_table(src)
        footer = json.loads(table.schema.metadata[b"biascore"])
        footer["engine_version"] = "9.9.9"
        bad = tmp_path / src.parent.name / src.name  # (a cache file stays in its method's folder)
        bad.parent.mkdir(exist_ok=True)
        pq.write_table(table.replace_schema_metadata({**table.schema.metadata, b"biascore": json.dumps(footer)}), bad)
        with pytest.raises(ResultFileError) as err:
            biascore.load_result(bad, data_dir=FIXTURE_DATA)
        assert "\n" not in str(err.value) and ("9.9.9" in str(err.value) or "edited" in str(err.value)), err.value


def test_a_file_whose_columns_are_not_its_schema_is_refused_at_load(score_out, tmp_path):
    import pyarrow.parquet as pq

    tmp, _, _ = score_out
    table = pq.read_table(tmp / "one.parquet")
    for drop in (["skipped_reason"], ["sjsd"]):
        bad = tmp_path / f"no_{drop[0]}.parquet"
        pq.write_table(table.drop_columns(drop), bad)
        with pytest.raises(ResultFileError) as err:  # at load, not a KeyError in summary() or pair() later
            biascore.load_result(bad)
        assert str(err.value) == (f"{bad}: its columns are not the attribution result schema (missing {drop[0]}; "
                                  "`biascore methods --schema attribution` lists them)")
