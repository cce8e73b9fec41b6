"""The dataset export (`review export --format dataset`): parquet tables read back by `datasets.load_dataset` and
pyarrow equal what the store and the engine give, the card states counts, agreement, reviewers, source and
licence, the CSV beside them is read by the custom-CSV loader and scored by `score --benchmark`, and an existing
folder is never overwritten."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from biascore.cli.main import main
from biascore.inputs.datasets import load_benchmark
from biascore.review.agreement import agreement
from biascore.review.corrections import corrected_frame, decision_counts, final_decisions, reviewable_pairs
from biascore.review.export import TABLES, export_dataset
from biascore.review.store import ReviewError, ReviewStore

REPO = Path(__file__).resolve().parents[2]
A, N, R = "accept", "needs correction", "reject"


@pytest.fixture(scope="module")
def reviewed(tmp_path_factory):
    """A review database of the demo benchmark: two reviewers on every pair, corrections, disagreements, one of
    them adjudicated."""
    db = tmp_path_factory.mktemp("db") / "reviews.sqlite"
    store = ReviewStore(db)
    ids = list(reviewable_pairs(load_benchmark("demo")).pair_id)
    plan = [(A, A)] * 8 + [(R, R), (A, R), (N, N), (A, N), (R, N), (A, A), (N, N), (R, R)]
    for i, (pid, (a, b)) in enumerate(zip(ids, plan)):
        fix = f"Itinamang pangungusap bilang {i}." if N in (a, b) else ""
        store.save("demo", pid, "Ana", a, ["mistranslation"] if a != A else [], f"Ana, pair {pid}: 'ok' <b>",
                   fix if a == N else "")
        store.save("demo", pid, "Ben", b, [], "", fix if b == N else "")
    store.adjudicate("demo", ids[9], "Cara", N, "decided", "", "Ang pinal na pangungusap.")
    return db, ids


def test_the_exported_dataset_reads_back_and_scores(reviewed, tmp_path, tiny_mlm, capsys, processes):
    import datasets

    db, ids = reviewed
    out = tmp_path / "demo-reviewed"
    done = subprocess.run([sys.executable, "-m", "biascore", "review", "export", "--format", "dataset", "--db", str(db),
                           "--benchmark", "demo", "--out", str(out)], cwd=REPO, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    store, bm = ReviewStore(db), load_benchmark("demo")
    pairs, reviews, adjudications = reviewable_pairs(bm), store.reviews("demo"), store.adjudications("demo")
    decisions = final_decisions(pairs.pair_id, reviews, adjudications)
    expected = corrected_frame(pairs, decisions)
    assert sorted(p.name for p in out.iterdir()) == sorted(["README.md", *TABLES, "corrected.csv"])

    # datasets: one table per folder with the parquet builder, and every table by the card's configs
    cache = str(tmp_path / "hf-cache")
    corrected = datasets.load_dataset("parquet", data_dir=str(out / "corrected"), cache_dir=cache)["train"]
    pd.testing.assert_frame_equal(corrected.to_pandas(), expected, check_dtype=False)
    back = datasets.load_dataset(str(out), "reviews", cache_dir=cache)["train"].to_pandas()
    assert back.tags.map(tuple).tolist() == reviews.tags.tolist()
    pd.testing.assert_frame_equal(back.drop(columns="tags"), reviews.drop(columns="tags"), check_dtype=False)
    default = datasets.load_dataset(str(out), cache_dir=cache)["train"]
    assert default.num_rows == len(expected)
    # pyarrow, independently
    adj = pq.read_table(out / "adjudications" / "adjudications.parquet").to_pandas()
    assert adj[["pair_id", "status", "corrected_less", "adjudicator"]].values.tolist() == [
        [ids[9], N, "Ang pinal na pangungusap.", "Cara"]]
    dec = pq.read_table(out / "decisions" / "decisions.parquet").to_pandas()
    assert len(dec) == len(pairs) and dec.decision.value_counts().to_dict() == {
        k: v for k, v in decision_counts(decisions).items() if v}

    # the card: YAML header with the configs, counts per final decision, agreement, reviewers, source, licence
    card = (out / "README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---")[1])
    assert [c["config_name"] for c in header["configs"]] == list(TABLES) and header["configs"][0]["default"]
    for decision, n in decision_counts(decisions).items():
        assert f"| {decision} | {n} |" in card
    overall = agreement(reviews, pairs).set_index("bias_type").loc["all"]
    assert f"Krippendorff's α (nominal, every pair with two or more reviews): {overall.alpha:.3f}" in card
    assert f"[{overall.alpha_low:.3f}, {overall.alpha_high:.3f}]" in card and "Cohen's κ" in card
    assert "- reviewers: 2" in card and f"- reviews: {len(reviews)}" in card and "benchmark: `demo`" in card
    assert "licence of the source: not stated (the demo pairs shipped with biascore)" in card
    assert "<b>" not in card  # reviewer text stays in the tables, not in the card

    # the custom-CSV loader reads the CSV beside the parquet files, and `score --benchmark` scores it
    loaded = load_benchmark(str(out / "corrected.csv"))
    assert loaded.frame.sent_more.tolist() == corrected["sent_more"] and not loaded.malformed
    # … and the parquet export (the file and its folder) loads as the same benchmark
    for source in (out / "corrected" / "corrected.parquet", out / "corrected"):
        as_parquet = load_benchmark(str(source))
        pd.testing.assert_frame_equal(as_parquet.frame, loaded.frame)
        assert as_parquet.content_hash == loaded.content_hash
    assert main(["score", "--model", tiny_mlm.name, "--benchmark", str(out / "corrected.csv")]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.strip().startswith("all"))
    from biascore.methods.attribution.scorer import summarize
    from biascore.runs import runner
    from biascore.methods import get

    direct = summarize(runner.run(get("attribution"), tiny_mlm, loaded).frame).set_index("bias_type").loc["all"]
    assert int(line.split()[1]) == direct.n and float(line.split()[2]) == pytest.approx(direct.score, abs=0.005)


def test_an_existing_folder_is_not_overwritten(reviewed, tmp_path):
    db, _ = reviewed
    store, bm = ReviewStore(db), load_benchmark("demo")
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    with pytest.raises(ReviewError, match="not an empty folder"):
        export_dataset(taken, bm, store.reviews("demo"), store.adjudications("demo"), resamples=50)
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # no temporary folder left
    empty = tmp_path / "empty"
    empty.mkdir()
    done = export_dataset(empty, bm, store.reviews("demo").iloc[:0], store.adjudications("demo").iloc[:0],
                          resamples=50)
    assert done.rows["reviews"] == 0 and done.counts["unreviewed"] == 16
    assert pq.read_table(empty / "reviews" / "reviews.parquet").schema.field("tags").type == pa.list_(pa.string())
