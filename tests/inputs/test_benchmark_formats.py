"""Benchmarks beyond CSV: parquet files (by content, whatever their name), ``datasets`` folders
(``save_to_disk``), a dataset name in the local HuggingFace cache, a column mapping (API and CLI), duplicated
pairs counted and warned, and files that are neither CSV nor parquet refused in one line without their bytes."""
from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import biascore
from biascore.cli.main import main
from biascore.inputs.datasets import BenchmarkError, load_benchmark

PAIRS = pd.DataFrame({
    "stereo": ["Women can't drive.", "He is a nurse.", "Women can't drive.", "Poor people are lazy."],
    "anti": ["Men can't drive.", "She is a nurse.", "Men can't drive.", "Rich people are lazy."],
    "category": ["gender", "gender", "gender", "socioeconomic"],
})
MAPPING = {"sent_more": "stereo", "sent_less": "anti", "bias_type": "category"}


def _same_pairs(bm) -> None:
    assert bm.frame[["sent_more", "sent_less", "bias_type"]].values.tolist() == \
        PAIRS[["stereo", "anti", "category"]].values.tolist()
    assert bm.duplicates == [2]  # row 2 repeats row 0
    assert "1 duplicate pair(s)" in bm.duplicates_note() and "pair ids 2" in bm.duplicates_note()


def test_parquet_with_a_column_mapping_equals_the_csv(tmp_path):
    PAIRS.to_parquet(tmp_path / "p.parquet")
    PAIRS.to_csv(tmp_path / "p.csv", index=False)
    from_parquet = load_benchmark(tmp_path / "p.parquet", columns=MAPPING)
    _same_pairs(from_parquet)
    from_csv = load_benchmark(tmp_path / "p.csv", columns=MAPPING)
    pd.testing.assert_frame_equal(from_parquet.frame, from_csv.frame)
    assert from_parquet.content_hash == from_csv.content_hash
    # parquet is recognised by its content: the same bytes named .csv load the same
    shutil.copy(tmp_path / "p.parquet", tmp_path / "really-parquet.csv")
    pd.testing.assert_frame_equal(load_benchmark(tmp_path / "really-parquet.csv", columns=MAPPING).frame,
                                  from_parquet.frame)


def test_usual_column_names_need_no_mapping_and_bad_mappings_are_one_line(tmp_path):
    PAIRS.rename(columns={"stereo": "sent_more", "anti": "sent_less", "category": "bias_type"}).to_parquet(
        tmp_path / "usual.parquet")
    _same_pairs(load_benchmark(tmp_path / "usual.parquet"))
    PAIRS.to_parquet(tmp_path / "p.parquet")
    for columns, needle in (({"sent_more": "nope", "sent_less": "anti"}, "sent_more='nope': no such column"),
                            ({"more_text": "stereo"}, "unknown target(s) more_text"),
                            (None, "missing column(s): sent_less")):
        with pytest.raises(BenchmarkError, match=needle.replace("(", r"\(").replace(")", r"\)")) as err:
            load_benchmark(tmp_path / "p.parquet", columns=columns)
        assert "\n" not in str(err.value)
    with pytest.raises(BenchmarkError, match="registered benchmark"):
        load_benchmark("demo", columns=MAPPING)


def test_saved_datasets_folders(tmp_path):
    import datasets

    ds = datasets.Dataset.from_pandas(PAIRS)
    ds.save_to_disk(str(tmp_path / "one"))
    _same_pairs(load_benchmark(tmp_path / "one", columns=MAPPING))
    datasets.DatasetDict({"train": ds, "test": ds.select([0, 1, 2])}).save_to_disk(str(tmp_path / "two"))
    with pytest.raises(BenchmarkError, match=r"choose a split \(train, test\)"):
        load_benchmark(tmp_path / "two", columns=MAPPING)
    assert len(load_benchmark(tmp_path / "two", columns=MAPPING, split="test").frame) == 3
    with pytest.raises(BenchmarkError, match="no split 'dev'"):
        load_benchmark(tmp_path / "two", columns=MAPPING, split="dev")
    # a folder of parquet files (e.g. a review export's table folder)
    (tmp_path / "parts").mkdir()
    PAIRS.iloc[:2].to_parquet(tmp_path / "parts" / "a.parquet")
    PAIRS.iloc[2:].to_parquet(tmp_path / "parts" / "b.parquet")
    _same_pairs(load_benchmark(tmp_path / "parts", columns=MAPPING))


@pytest.fixture
def hf_cache(tmp_path, monkeypatch):
    """A local HuggingFace datasets cache holding the dataset ``testorg/pairs`` as ``load_dataset`` leaves a
    Hub dataset there (``<cache>/testorg___pairs/default/0.0.0/<hash>/``), built offline from PAIRS."""
    import datasets

    PAIRS.to_parquet(tmp_path / "p.parquet")
    builder = datasets.load_dataset_builder("parquet", data_files={"train": str(tmp_path / "p.parquet")},
                                            cache_dir=str(tmp_path / "build"))
    builder.download_and_prepare()
    built = next(p for p in Path(builder.cache_dir).parent.iterdir() if p.is_dir())
    cache = tmp_path / "hf-datasets"
    target = cache / "testorg___pairs" / "default" / "0.0.0" / built.name
    shutil.copytree(built, target)
    for arrow in target.glob("parquet-*.arrow"):
        arrow.rename(arrow.with_name(arrow.name.replace("parquet-", "pairs-", 1)))
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(cache))
    return cache


def test_a_dataset_name_in_the_local_huggingface_cache(hf_cache):
    bm = load_benchmark("testorg/pairs", columns=MAPPING)
    _same_pairs(bm)
    assert bm.name == "testorg__pairs"
    with pytest.raises(BenchmarkError, match="not a dataset in the local HuggingFace cache"):
        load_benchmark("testorg/absent")


@pytest.mark.parametrize("name, content, needle", [
    ("random.csv", os.urandom(4096), "neither CSV nor parquet: the file holds binary data"),
    ("fake.parquet", b"sent_more,sent_less\na b,a c\n", "not a parquet file"),
    ("cut.parquet", b"PAR1" + bytes(range(256)) * 8, "not a readable parquet file"),
])
def test_files_that_are_neither_csv_nor_parquet(tmp_path, name, content, needle):
    (tmp_path / name).write_bytes(content)
    with pytest.raises(BenchmarkError, match=needle) as err:
        load_benchmark(tmp_path / name)
    message = str(err.value)
    assert "\n" not in message and "\\x" not in message and message.isprintable()


def test_cli_parquet_benchmark_with_columns_warns_about_duplicates(random_mlm, tmp_path, capsys):
    PAIRS.to_parquet(tmp_path / "p.parquet")
    out = tmp_path / "scores.csv"
    assert main(["score", "--model", str(random_mlm.source), "--benchmark", str(tmp_path / "p.parquet"),
                 "--columns", "sent_more=stereo", "sent_less=anti", "bias_type=category", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: 1 duplicate pair(s) in p" in err
    assert len(pd.read_csv(out)) == len(PAIRS)
    # a random-bytes .csv: one line, exit 2, none of its bytes
    (tmp_path / "random.csv").write_bytes(os.urandom(4096))
    assert main(["score", "--model", str(random_mlm.source), "--benchmark", str(tmp_path / "random.csv")]) == 2
    lines = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(lines) == 1 and "neither CSV nor parquet" in lines[0] and lines[0].isprintable()
    assert main(["score", "--model", str(random_mlm.source), "--benchmark", str(tmp_path / "p.parquet"),
                 "--columns", "sent_more"]) == 2
    assert "expected TARGET=COLUMN" in capsys.readouterr().err


def test_api_columns_and_the_duplicate_warning(random_mlm, tmp_path):
    PAIRS.to_parquet(tmp_path / "p.parquet")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = biascore.run("attribution", random_mlm, tmp_path / "p.parquet", columns=MAPPING, progress=False,
                              cache_dir=tmp_path / "cache")
    assert [w.category.__name__ for w in caught] == ["DuplicatePairsWarning"]
    assert len(result.frame) == len(PAIRS) and result.input.duplicates == [2]
    bench = biascore.load_benchmark(tmp_path / "p.parquet", columns=MAPPING)
    with pytest.warns(biascore.api.DuplicatePairsWarning):
        again = biascore.run("attribution", random_mlm, bench, progress=False, cache_dir=tmp_path / "cache",
                             only_cached=True)
    assert again is not None  # the same pairs: the same cached result
