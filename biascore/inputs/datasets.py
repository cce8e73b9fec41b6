"""Pair benchmarks: the registry in ``data/benchmarks.json`` and a loader that survives messy files.

Every benchmark loads into one frame shape::

    pair_id (int), bias_type (str), sent_more (str), sent_less (str), [extra columns], load_issue (str)

``load_issue`` is empty for a good row; otherwise it says what is wrong with the row (empty sentence,
identical sentences) so that scorers keep the row and record why it was skipped. Rows the CSV parser
cannot read at all are reported in :attr:`Benchmark.malformed` with their line numbers — nothing is
silently dropped. Rows repeating an earlier row's pair (same ``sent_more`` and ``sent_less``) are kept and
scored, and counted in :attr:`Benchmark.duplicates` (the shells warn).

An **aligned** benchmark (one language of a parallel set; a user's file with a ``source_id`` column) carries its
alignment key in ``source_id`` (the CrowS-Pairs row for the registered sets): the key every result keeps, so two
languages compare pair by pair like two models (:mod:`biascore.methods.attribution.languages`). A key that is blank
or repeats refuses the file in one line: no pair is aligned to the wrong one.

A user's benchmark (docs/cli.md: CSV, parquet, a ``datasets`` folder or a cached HuggingFace dataset, never
downloaded here) may name its columns (``columns``, :data:`USER_COLUMN_ALIASES`) and a ``split``.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
from dataclasses import dataclass, field, replace
from typing import Mapping
from pathlib import Path

import pandas as pd

from biascore import settings
from biascore.errors import BenchmarkError  # noqa: F401 - raised here, named here too

REGISTRY_PATH = settings.PROJECT_DATA / "benchmarks.json"
CORE_COLUMNS = ["sent_more", "sent_less", "bias_type"]
#: column names recognised in a user's own CSV file, in order of preference
USER_COLUMN_ALIASES = {
    "sent_more": ["sent_more", "sent_more_bias", "more", "stereo", "sentence_more"],
    "sent_less": ["sent_less", "sent_less_bias", "less", "anti_stereo", "sentence_less"],
    "bias_type": ["bias_type", "type", "category"],
}


#: the first bytes of every parquet file
PARQUET_MAGIC = b"PAR1"


@dataclass
class Benchmark:
    name: str
    frame: pd.DataFrame
    language: str
    description: str
    path: Path
    malformed: list[str] = field(default_factory=list)  # "line N: reason" for rows the parser could not read
    #: pair ids of rows that repeat an earlier row's (sent_more, sent_less); kept and scored, but not new pairs
    duplicates: list[int] = field(default_factory=list)

    def duplicates_note(self) -> str:
        """One line about the duplicated pairs ("" when there are none), for the shells to warn with."""
        if not self.duplicates:
            return ""
        ids = ", ".join(map(str, self.duplicates[:8])) + (" …" if len(self.duplicates) > 8 else "")
        return (f"{len(self.duplicates)} duplicate pair(s) in {self.name} (the same sent_more and sent_less as an "
                f"earlier row; pair ids {ids}): each is scored as its own pair, so they weigh more in B")

    @property
    def content_hash(self) -> str:
        """Hash of the pairs themselves: part of every cache key, so an edited file is rescored."""
        h = hashlib.sha256()
        for row in self.frame[["pair_id", "bias_type", "sent_more", "sent_less"]].itertuples(index=False):
            h.update(json.dumps([int(row[0]), str(row[1]), str(row[2]), str(row[3])]).encode())
        return h.hexdigest()[:20]

    def __len__(self) -> int:
        return len(self.frame)

    def first(self, n: int) -> "Benchmark":
        """This benchmark cut to its first ``n`` pairs (itself when it has no more): a ``--limit`` run."""
        if n >= len(self.frame):
            return self
        frame = self.frame.head(n).copy()
        kept = set(frame["pair_id"])
        return replace(self, frame=frame, duplicates=[i for i in self.duplicates if i in kept])

    def rows(self, a: int, b: int) -> "Benchmark":
        """Rows ``a`` to ``b`` (positions) of this benchmark: one shard of a resumable run."""
        return self if (a, b) == (0, len(self.frame)) else replace(self, frame=self.frame.iloc[a:b].copy())


def registry() -> dict[str, dict]:
    return json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["benchmarks"]


def aligned_sets() -> dict[str, dict[str, str]]:
    """Every aligned set of the registry (``alignment.set``): set name → {language: benchmark name}."""
    out: dict[str, dict[str, str]] = {}
    for name, spec in registry().items():
        if "alignment" in spec:
            out.setdefault(spec["alignment"]["set"], {})[spec["language"]] = name
    return out


def benchmark_path(name: str, data_dir: str | Path | None = None) -> Path:
    """Where a registered benchmark's file is: the data directory, or the project's ``data/`` for a built-in
    one — except in an offline snapshot, which carries every benchmark it refers to in its data directory."""
    spec = registry()[name]
    builtin = spec.get("builtin") and not (data_dir is None and settings.snapshot_root() is not None)
    base = settings.PROJECT_DATA if builtin else settings.data_dir(data_dir)
    return base / spec["file"]


def available_benchmarks(data_dir: str | Path | None = None) -> list[dict]:
    """Every registered benchmark with whether its file is present (for the CLI and the selectors)."""
    out = []
    for name, spec in registry().items():
        path = benchmark_path(name, data_dir)
        out.append({"name": name, "available": path.exists(), "path": str(path), "language": spec.get("language", ""),
                    "expected_rows": spec.get("expected_rows"), "description": spec.get("description", ""),
                    "licence": spec.get("licence", ""), "citation": spec.get("citation", "")})
    return out


def _utf8_with_cp1252_fallback(err: UnicodeDecodeError):
    """Decode bytes that are not UTF-8 as Windows-1252 (mixed-encoding files such as crows-tl)."""
    bad = err.object[err.start:err.end]
    return bad.decode("cp1252", errors="replace"), err.end


codecs.register_error("biascore_cp1252", _utf8_with_cp1252_fallback)


def fix_mojibake(text: str) -> str:
    """Undo one round of UTF-8-read-as-cp1252 (``â€™`` → ``’``) where that round-trips cleanly."""
    if not any(ch in text for ch in "âÃ"):
        return text
    try:
        return text.encode("cp1252").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return text


def _read_csv_text(text: str) -> tuple[list[str], list[list[str]], list[str]]:
    """Parse CSV text into (header, good rows, "line N: reason" for each row that could not be read).

    A record with the wrong number of fields is reported by the line it starts on. When such a record
    spans several lines — typically a stray quote that swallowed the rows after it — its lines are read
    again one by one, so the rows it swallowed are kept and only the broken line is reported.
    """
    lines = io.StringIO(text, newline="").readlines()  # split like a CSV file: on \n, \r\n, \r only
    reader = csv.reader(iter(lines))
    try:
        header = next(reader)
    except StopIteration as exc:
        raise BenchmarkError("the file is empty") from exc
    except csv.Error as exc:
        raise BenchmarkError(f"cannot read the header line: {exc}") from exc
    width = len(header)
    rows, malformed = [], []
    while True:
        start, error = reader.line_num + 1, None
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. an unclosed quote running past the field size limit
            row, error = [], str(exc)
        if error is None and (not row or all(not c.strip() for c in row)):
            continue
        if error is None and len(row) == width:
            rows.append(row)
            continue
        end = max(reader.line_num, start)
        if end == start:
            malformed.append(f"line {start}: " + (error or f"expected {width} fields, found {len(row)}"))
            continue
        for number in range(start, end + 1):  # re-read the swallowed lines one at a time
            try:
                single = next(csv.reader([lines[number - 1]]), [])
            except csv.Error as exc:
                malformed.append(f"line {number}: {exc}")
                continue
            if len(single) == width:
                rows.append(single)
            elif single and any(c.strip() for c in single):
                malformed.append(f"line {number}: expected {width} fields, found {len(single)}"
                                 + (" (unbalanced quote?)" if '"' in lines[number - 1] else ""))
    return header, rows, malformed


def load_benchmark(name_or_path: str | Path, data_dir: str | Path | None = None, *,
                   columns: Mapping[str, str] | None = None, split: str | None = None) -> Benchmark:
    """Load a registered benchmark by name, or a user's benchmark with its ``columns`` and ``split`` (see the
    module docstring). Raises :class:`BenchmarkError` with a clear message for unknown names, missing files (with
    the download command), files that are neither CSV nor parquet, and missing columns (named)."""
    reg = registry()
    name_or_path = str(name_or_path)
    if name_or_path in reg:
        if columns or split:
            raise BenchmarkError(f"{name_or_path!r} is a registered benchmark: a column mapping or split applies "
                                 "to your own files and datasets only")
        spec = reg[name_or_path]
        path = benchmark_path(name_or_path, data_dir)
        name = name_or_path
        if not path.exists():
            raise BenchmarkError(
                f"benchmark {name!r} expects {path}, which does not exist. Download the public benchmark files "
                f"with `python -m biascore data download --data-dir {settings.data_dir(data_dir)}` "
                f"or point BIASCORE_DATA_DIR / --data-dir at a folder that has them.")
        mapping, extra = spec["columns"], spec.get("extra_columns", {})
        language, description = spec.get("language", ""), spec.get("description", "")
        header, rows, malformed = _read_file(path, spec.get("encoding", "utf-8"))
    else:
        path = Path(name_or_path).expanduser()
        mapping, extra, language, description = None, {}, "", str(path)
        if path.is_file():
            name = path.stem
            header, rows, malformed = _read_file(path, "utf-8-cp1252", split)
        else:  # a datasets folder or a folder of parquet files, else a dataset in the local HuggingFace cache
            found = _read_folder(path, split) if path.is_dir() else _from_hf_cache(name_or_path, split)
            if found is None:
                raise BenchmarkError(
                    f"unknown benchmark {name_or_path!r}: not a registered name ({', '.join(reg)}), not an existing "
                    f"CSV/parquet file or datasets folder, and not a dataset in the local HuggingFace cache. The "
                    f"registered benchmarks other than demo need their files: download them with "
                    f"`python -m biascore data download --data-dir {settings.data_dir(data_dir)}`.")
            name = path.name if path.is_dir() else name_or_path.replace("/", "__")
            (header, rows), malformed = _table_rows(found), []
    header = [h.strip() for h in header]
    if mapping is None:  # a user's file: find the columns by their usual names (or as ``columns`` says)
        mapping = _user_columns(header, columns or {}, path)
        for opt in ("sent_more_en", "sent_less_en", "language", "source_id"):
            if opt in header:
                extra[opt] = opt
    missing = [f"{t} (column {s!r})" for t, s in mapping.items() if s is not None and s not in header]
    missing += [t for t in ("sent_more", "sent_less") if mapping.get(t) is None]
    if missing:
        raise BenchmarkError(f"{path}: missing column(s): {', '.join(sorted(set(missing)))}; "
                             f"the file has: {', '.join(h for h in header if h)}")
    if not rows:
        raise BenchmarkError(f"{path}: no pairs to score (the file has a header line and no readable rows"
                             + (f"; {len(malformed)} malformed" if malformed else "") + ")")
    idx = {h: i for i, h in enumerate(header)}
    sources = {**mapping, **{t: s for t, s in extra.items() if s in idx}}  # target -> column (None: unspecified)
    fixed = spec.get("constants", {}) if name_or_path in reg else {}
    records = [{t: row[idx[s]].strip() if s else fixed.get(t, "unspecified") for t, s in sources.items()}
               for row in rows]
    frame = pd.DataFrame.from_records(records, columns=CORE_COLUMNS + [t for t in sources if t not in mapping])
    for col in frame.columns:
        frame[col] = frame[col].astype(str).map(fix_mojibake)
    frame.insert(0, "pair_id", range(len(frame)))
    frame["bias_type"] = frame["bias_type"].replace("", "unspecified")
    frame["load_issue"] = [_row_issue(m, l) for m, l in zip(frame["sent_more"], frame["sent_less"])]
    duplicates = frame.loc[frame.duplicated(["sent_more", "sent_less"]), "pair_id"].astype(int).tolist()
    if "source_id" in frame:
        _check_keys(frame["source_id"], path)
    return Benchmark(name=name, frame=frame, language=language, description=description, path=path,
                     malformed=malformed, duplicates=duplicates)


def _check_keys(keys: pd.Series, path: Path) -> None:
    """Refuse a file whose alignment key (``source_id``) is blank or repeats, naming the first pair concerned."""
    blank = keys[keys.str.strip() == ""]
    if len(blank):
        raise BenchmarkError(f"{path}: alignment key missing for pair {blank.index[0]} ({len(blank)} pair(s) without "
                             "one): every pair of an aligned set needs its source id")
    repeated = keys[keys.duplicated(keep=False)]
    if len(repeated):
        key = repeated.iloc[0]
        where = ", ".join(map(str, repeated.index[repeated == key]))
        raise BenchmarkError(f"{path}: alignment key {key!r} repeats (pairs {where}): each source pair may appear "
                             "once per language")


def _user_columns(header: list[str], columns: Mapping[str, str], path: Path) -> dict[str, str | None]:
    """Which of the user's columns is sent_more / sent_less / bias_type: ``columns`` first, then the usual names."""
    unknown = sorted(set(columns) - set(USER_COLUMN_ALIASES))
    if unknown:
        raise BenchmarkError(f"column mapping: unknown target(s) {', '.join(unknown)}; map "
                             f"{', '.join(USER_COLUMN_ALIASES)} to your column names (e.g. sent_more=stereo)")
    absent = [f"{t}={c!r}" for t, c in columns.items() if c not in header]
    if absent:
        raise BenchmarkError(f"{path}: column mapping {', '.join(absent)}: no such column; the file has: "
                             f"{', '.join(h for h in header if h)}")
    mapping: dict[str, str | None] = {}
    for target, candidates in USER_COLUMN_ALIASES.items():
        mapping[target] = columns.get(target) or next((c for c in candidates if c in header), None)
    return mapping


def _read_file(path: Path, encoding: str, split: str | None = None) -> tuple[list[str], list[list[str]], list[str]]:
    """(header, rows, malformed) of a CSV or parquet file, told apart by their content: parquet starts with
    ``PAR1``; anything else must be text (a file holding binary data is refused without showing it)."""
    raw = path.read_bytes()
    if raw[:4] == PARQUET_MAGIC:
        if split:
            raise BenchmarkError(f"{path}: a split applies to datasets with several, not to a parquet file")
        return (*_table_rows(_read_parquet(path)), [])
    if path.suffix.lower() == ".parquet":
        raise BenchmarkError(f"{path}: not a parquet file (it does not start with the parquet magic bytes)")
    if _looks_binary(raw):
        raise BenchmarkError(f"{path}: neither CSV nor parquet: the file holds binary data")
    try:  # "utf-8-cp1252": valid UTF-8 sequences as UTF-8, stray bytes as cp1252
        text = raw.decode("utf-8", errors="biascore_cp1252") if encoding == "utf-8-cp1252" else raw.decode(encoding)
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{path}: cannot decode as {encoding} (byte {exc.start})") from None
    try:
        return _read_csv_text(text.lstrip("\ufeff"))
    except BenchmarkError as exc:
        raise BenchmarkError(f"{path}: {exc}") from exc


def _looks_binary(raw: bytes) -> bool:
    """Whether ``raw`` is not text: a NUL byte, or more than 1 % control bytes (other than tab, newline,
    carriage return, form feed) in its first 64 KiB."""
    head = raw[:65536]
    if b"\x00" in head:
        return True
    controls = sum(head.count(bytes([c])) for c in range(32) if c not in (9, 10, 12, 13))
    return controls > 0.01 * max(len(head), 1)


def _read_parquet(path: Path) -> pd.DataFrame:
    import pyarrow.parquet as pq
    try:
        return pq.read_table(path).to_pandas()
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        raise BenchmarkError(f"{path}: not a readable parquet file ({type(exc).__name__})") from None


def _read_folder(path: Path, split: str | None) -> pd.DataFrame:
    """A folder written by ``save_to_disk`` (a Dataset or a DatasetDict), or a folder of parquet files."""
    if (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file():
        import datasets

        try:
            loaded = datasets.load_from_disk(str(path))
        except Exception as exc:  # noqa: BLE001 - datasets raises several types for a damaged folder
            raise BenchmarkError(f"{path}: not a readable datasets folder ({type(exc).__name__})") from None
        return _one_split(loaded, split, path).to_pandas()
    parts = sorted(path.glob("*.parquet"))
    if not parts:
        raise BenchmarkError(f"{path}: a folder, but neither a datasets folder (save_to_disk) nor one holding "
                             ".parquet files")
    if split:
        raise BenchmarkError(f"{path}: a split applies to datasets with several, not to a folder of parquet files")
    return pd.concat([_read_parquet(p) for p in parts], ignore_index=True)


def _one_split(loaded, split: str | None, where: object):
    """One split of a Dataset / DatasetDict: ``split``, or the only one there is."""
    if not hasattr(loaded, "keys"):  # a Dataset
        if split and str(loaded.split or "") not in ("", split):
            raise BenchmarkError(f"{where}: holds split {loaded.split}, not {split!r}")
        return loaded
    names = list(loaded.keys())
    if split is None and len(names) == 1:
        return loaded[names[0]]
    if split not in names:
        raise BenchmarkError(f"{where}: choose a split ({', '.join(names)})" if split is None
                             else f"{where}: no split {split!r}; it has {', '.join(names)}")
    return loaded[split]


def _from_hf_cache(name: str, split: str | None) -> pd.DataFrame | None:
    """The dataset ``name`` ("owner/name" or "name") as the local HuggingFace datasets cache holds it (the
    latest cached configuration; nothing is downloaded), or None when the cache has no such dataset."""
    if not name or name.count("/") > 1 or any(c in name for c in "\\:*?\"<>|") or name.startswith("."):
        return None
    try:
        from datasets.packaged_modules.cache.cache import Cache
    except ImportError:  # pragma: no cover - datasets is a requirement
        return None
    try:
        builder = Cache(repo_id=name, dataset_name=name.split("/")[-1], version="auto", hash="auto")
    except (ValueError, FileNotFoundError):
        return None
    try:
        loaded = builder.as_dataset(split=split) if split else builder.as_dataset()
    except (ValueError, KeyError, FileNotFoundError) as exc:
        raise BenchmarkError(f"dataset {name!r} in the local HuggingFace cache: {exc}".splitlines()[0]) from None
    return _one_split(loaded, split, f"dataset {name!r}").to_pandas()


def _table_rows(frame: pd.DataFrame) -> tuple[list[str], list[list[str]]]:
    """(header, rows as strings) of a table read from parquet or datasets; a missing value is ""."""
    header = [str(c) for c in frame.columns]
    rows = [["" if v is None or (isinstance(v, float) and v != v) else str(v) for v in row]
            for row in frame.itertuples(index=False, name=None)]
    return header, rows


def _row_issue(more: str, less: str) -> str:
    if not more.strip() or not less.strip():
        return "empty sentence"
    if more.split() == less.split():  # equal up to whitespace
        return "identical sentences"
    return ""
