"""The reviewed benchmark as a dataset folder: parquet files and a dataset card (docs/review.md, "Exports").

``review export --format dataset --out DIR/`` writes ``DIR/README.md`` (the card: configs, language, source
licence, reviewers, decisions and agreement), ``DIR/corrected.csv`` and one ``DIR/<table>/<table>.parquet`` per
table of :data:`TABLES`, under a temporary name renamed into place; a non-empty destination is refused.
"""
from __future__ import annotations

import io
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from biascore.inputs.datasets import Benchmark, registry
from biascore.inputs.download import load_manifest
from biascore.review.agreement import agreement
from biascore.review.corrections import corrected_frame, decision_counts, final_decisions, reviewable_pairs
from biascore.review.store import ReviewError

TABLES = ("corrected", "decisions", "reviews", "adjudications")
CORRECTED_CSV = "corrected.csv"
KAPPA_NAMES = {"Cohen": "Cohen's", "Fleiss": "Fleiss'"}


@dataclass(frozen=True)
class DatasetExport:
    """What :func:`export_dataset` wrote: the folder, rows per table, the decision counts and the card's text."""

    path: Path
    rows: dict[str, int]
    counts: dict[str, int]
    card: str


def source_licence(bm: Benchmark) -> tuple[str, str]:
    """(licence, source URL) of a registered benchmark's file from data/downloads.json; for the demo pairs and a
    user's own file, what is known."""
    spec = registry().get(bm.name)
    if spec is None:
        return "not known (a user's own file)", ""
    if spec.get("builtin"):
        return "not stated (the demo pairs shipped with biascore)", ""
    entry = next((f for f in load_manifest() if f.path == spec["file"]), None)
    return (entry.licence or "not stated", entry.url or "") if entry else ("not stated", "")


def _fmt(x: float) -> str:
    return "—" if x != x else f"{x:.3f}"


def _card(bm: Benchmark, reviews: pd.DataFrame, rows: dict[str, int], counts: dict[str, int],
          table: pd.DataFrame) -> str:
    import yaml
    licence, url = source_licence(bm)
    spec = registry().get(bm.name)
    about = spec.get("description", "") if spec else "a user's own file"
    configs = [{"config_name": name, **({"default": True} if name == "corrected" else {}),
                "data_files": [{"split": "train", "path": f"{name}/*.parquet"}]} for name in TABLES]
    header = {"pretty_name": f"{bm.name} with translation reviews", "language": ["tl", "en"],
              "license": "other", "configs": configs}
    overall = table.set_index("bias_type").loc["all"] if len(table) else None
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).strip(), "---", "",
             f"# {bm.name} with translation reviews", "",
             f"The pairs of the benchmark `{bm.name}` ({about}) reviewed by translators with biascore's "
             "translation review: each reviewer gave each pair a status (accept, needs correction, reject), issue "
             "tags, a comment and, where needed, corrected sentences; disagreements were adjudicated.", "", "## Source",
             "", f"- benchmark: `{bm.name}`" + (f" — {url}" if url else ""),
             f"- licence of the source: {licence}. The corrections are derived from it; check its terms before "
             "redistributing.", "", "## Reviews", "", f"- reviewers: {reviews.reviewer.nunique()}",
             f"- reviews: {len(reviews)}", f"- pairs reviewed: {reviews.pair_id.nunique()} of {sum(counts.values())}",
             "", "Final decision per pair (an adjudicated decision first; otherwise the reviewers' shared decision):",
             "", "| decision | pairs |", "| --- | --- |", *[f"| {k} | {v} |" for k, v in counts.items()], "",
             "## Agreement on the status", ""]
    if overall is not None:
        lines += [f"- Krippendorff's α (nominal, every pair with two or more reviews): {_fmt(overall.alpha)}, "
                  f"95% bootstrap interval [{_fmt(overall.alpha_low)}, {_fmt(overall.alpha_high)}] over "
                  f"{int(overall.alpha_pairs)} pairs",
                  f"- {KAPPA_NAMES.get(overall.method, KAPPA_NAMES['Cohen'])} κ: {_fmt(overall.kappa)} over "
                  f"{int(overall.n_pairs)} pairs" + (f" ({overall.note})" if overall.note else ""), "",
                  "| bias type | α | α 95% interval | pairs (α) | κ | method |", "| --- | --- | --- | --- | --- | --- |",
                  *[f"| {r.bias_type} | {_fmt(r.alpha)} | [{_fmt(r.alpha_low)}, {_fmt(r.alpha_high)}] | "
                    f"{r.alpha_pairs} | {_fmt(r.kappa)} | {r.method} |" for r in table.itertuples()], ""]
    lines += ["## Files", "", "| config | file | rows |", "| --- | --- | --- |",
              *[f"| {name} | `{name}/{name}.parquet` | {rows[name]} |" for name in TABLES],
              f"| — | `{CORRECTED_CSV}` | {rows['corrected']} |", "",
              "`corrected` keeps the accepted pairs and the corrected ones (a corrected sentence replaces the "
              "original); rejected, unresolved and unreviewed pairs are left out (their counts are above). "
              "`source_pair_id` is the pair's id in the source benchmark.", "",
              "## Loading", "", "```python", "import datasets",
              'corrected = datasets.load_dataset("parquet", data_dir="<this folder>/corrected")["train"]',
              'reviews = datasets.load_dataset("<this folder>", "reviews")["train"]', "```", "",
              "Scoring the corrected benchmark with biascore: "
              f"`python -m biascore score --model MODEL --benchmark <this folder>/{CORRECTED_CSV}`.", ""]
    return "\n".join(lines)


def _write_parquet(frame: pd.DataFrame, path: Path) -> None:
    """``frame`` as parquet with explicit column types, so an empty table has the same schema as a full one:
    ``tags`` a list of strings, integer and boolean columns as such, everything else strings."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    columns = {}
    for name in frame.columns:
        values = frame[name].tolist()
        if name == "tags":
            columns[name] = pa.array([list(v) for v in values], type=pa.list_(pa.string()))
        elif pd.api.types.is_bool_dtype(frame[name]):
            columns[name] = pa.array(values, type=pa.bool_())
        elif pd.api.types.is_integer_dtype(frame[name]):
            columns[name] = pa.array(values, type=pa.int64())
        else:
            columns[name] = pa.array([str(v) for v in values], type=pa.string())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)


def export_dataset(out: str | os.PathLike, bm: Benchmark, reviews: pd.DataFrame, adjudications: pd.DataFrame, *,
                   resamples: int = 1000, seed: int = 0) -> DatasetExport:
    """Write the dataset folder ``out`` (see the module docstring) for benchmark ``bm`` from its ``reviews`` and
    ``adjudications`` (:meth:`ReviewStore.reviews` / ``adjudications`` of that benchmark). Raises
    :class:`ReviewError` when ``out`` exists and is not an empty folder."""
    out = Path(out).expanduser()
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ReviewError("exists and is not an empty folder; choose a new folder name", out)
    pairs = reviewable_pairs(bm)
    decisions = final_decisions(pairs.pair_id, reviews, adjudications)
    corrected = corrected_frame(pairs, decisions)
    counts = decision_counts(decisions)
    decisions = decisions.merge(pairs[["pair_id", "bias_type"]], on="pair_id", how="left")
    tables = {"corrected": corrected, "decisions": decisions, "reviews": reviews.reset_index(drop=True),
              "adjudications": adjudications.reset_index(drop=True)}
    rows = {name: len(frame) for name, frame in tables.items()}
    card = _card(bm, reviews, rows, counts, agreement(reviews, pairs, resamples=resamples, seed=seed))
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    except OSError as exc:
        raise ReviewError(f"cannot create the folder ({exc.strerror or exc})", out) from exc
    try:
        for name, frame in tables.items():
            _write_parquet(frame, tmp / name / f"{name}.parquet")
        corrected.to_csv(tmp / CORRECTED_CSV, index=False)
        (tmp / "README.md").write_text(card, encoding="utf-8")
        if out.exists():
            out.rmdir()  # empty (checked above); a file appearing meanwhile makes this fail, not overwrite
        tmp.rename(out)
    except OSError as exc:
        raise ReviewError(f"cannot write the dataset ({exc.strerror or exc})", out) from exc
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return DatasetExport(out, rows, counts, card)


def dataset_zip(bm: Benchmark, reviews: pd.DataFrame, adjudications: pd.DataFrame, **kwargs) -> bytes:
    """The dataset folder as a zip archive (the page's download): the files under ``<benchmark>-reviewed/``."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / f"{Path(bm.name).name}-reviewed"
        export_dataset(folder, bm, reviews, adjudications, **kwargs)
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
            for file in sorted(folder.rglob("*")):
                if file.is_file():
                    zf.write(file, file.relative_to(Path(tmp)).as_posix())
        return buffer.getvalue()
