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
from biascore.core.result import ResultFileError, load_result

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
    for path, match in ((junk, "not a parquet file"), (plain, "no biascore result record"),
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
