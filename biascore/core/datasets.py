"""Pair benchmarks: the registry in ``data/benchmarks.json`` and a loader that survives messy files.

Every benchmark loads into one frame shape::

    pair_id (int), bias_type (str), sent_more (str), sent_less (str), [extra columns], load_issue (str)

``load_issue`` is empty for a good row; otherwise it says what is wrong with the row (empty sentence,
identical sentences) so that scorers keep the row and record why it was skipped. Rows the CSV parser
cannot read at all are reported in :attr:`Benchmark.malformed` with their line numbers — nothing is
silently dropped.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from biascore.core import settings

REGISTRY_PATH = settings.PROJECT_DATA / "benchmarks.json"
CORE_COLUMNS = ["sent_more", "sent_less", "bias_type"]
#: column names recognised in a user's own CSV file, in order of preference
USER_COLUMN_ALIASES = {
    "sent_more": ["sent_more", "sent_more_bias", "more", "stereo", "sentence_more"],
    "sent_less": ["sent_less", "sent_less_bias", "less", "anti_stereo", "sentence_less"],
    "bias_type": ["bias_type", "type", "category"],
}


class BenchmarkError(ValueError):
    """A benchmark cannot be loaded; the message says why and what to do."""


@dataclass
class Benchmark:
    name: str
    frame: pd.DataFrame
    language: str
    description: str
    path: Path
    malformed: list[str] = field(default_factory=list)  # "line N: reason" for rows the parser could not read

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
        return self if n >= len(self.frame) else replace(self, frame=self.frame.head(n).copy())

    def rows(self, a: int, b: int) -> "Benchmark":
        """Rows ``a`` to ``b`` (positions) of this benchmark: one shard of a resumable run."""
        return self if (a, b) == (0, len(self.frame)) else replace(self, frame=self.frame.iloc[a:b].copy())


def registry() -> dict[str, dict]:
    return json.loads(REGISTRY_PATH.read_text(encoding="utf-8"))["benchmarks"]


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
                    "expected_rows": spec.get("expected_rows"), "description": spec.get("description", "")})
    return out


def _utf8_with_cp1252_fallback(err: UnicodeDecodeError):
    """Decode bytes that are not UTF-8 as Windows-1252 (mixed-encoding files such as crows-tl)."""
    bad = err.object[err.start:err.end]
    return bad.decode("cp1252", errors="replace"), err.end


codecs.register_error("biascore_cp1252", _utf8_with_cp1252_fallback)


def decode_bytes(raw: bytes, encoding: str) -> str:
    if encoding == "utf-8-cp1252":  # valid UTF-8 sequences as UTF-8, stray bytes as cp1252
        text = raw.decode("utf-8", errors="biascore_cp1252")
    else:
        text = raw.decode(encoding)
    return text.lstrip("\ufeff")


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


def load_benchmark(name_or_path: str, data_dir: str | Path | None = None) -> Benchmark:
    """Load a registered benchmark by name, or a user's CSV file by path.

    Raises :class:`BenchmarkError` with a clear message for unknown names, missing files (with the
    download command) and missing columns (named).
    """
    reg = registry()
    if name_or_path in reg:
        spec = reg[name_or_path]
        path = benchmark_path(name_or_path, data_dir)
        name = name_or_path
        if not path.exists():
            raise BenchmarkError(
                f"benchmark {name!r} expects {path}, which does not exist. Download the public benchmark files "
                f"with `python -m biascore data download --data-dir {settings.data_dir(data_dir)}` "
                f"or point BIASCORE_DATA_DIR / --data-dir at a folder that has them.")
        columns, extra = spec["columns"], spec.get("extra_columns", {})
        encoding, language, description = spec.get("encoding", "utf-8"), spec.get("language", ""), spec.get(
            "description", "")
    else:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise BenchmarkError(
                f"unknown benchmark {name_or_path!r}: not a registered name ({', '.join(reg)}) and not an existing "
                f"CSV file. The registered benchmarks other than demo need their files: download them with "
                f"`python -m biascore data download --data-dir {settings.data_dir(data_dir)}`.")
        name, columns, extra, encoding, language, description = path.stem, None, {}, "utf-8-cp1252", "", str(path)
    raw = path.read_bytes()
    try:
        text = decode_bytes(raw, encoding)
    except UnicodeDecodeError as exc:
        raise BenchmarkError(f"{path}: cannot decode as {encoding}: {exc}") from exc
    try:
        header, rows, malformed = _read_csv_text(text)
    except BenchmarkError as exc:
        raise BenchmarkError(f"{path}: {exc}") from exc
    header = [h.strip() for h in header]
    if columns is None:  # a user's file: find the columns by their usual names
        columns = {}
        for target, candidates in USER_COLUMN_ALIASES.items():
            found = next((c for c in candidates if c in header), None)
            if found:
                columns[target] = found
        if "bias_type" not in columns:
            columns["bias_type"] = None
        for opt in ("sent_more_en", "sent_less_en", "language"):
            if opt in header:
                extra[opt] = opt
    missing = [f"{t} (column {s!r})" for t, s in columns.items() if s is not None and s not in header]
    missing += [t for t in ("sent_more", "sent_less") if columns.get(t) is None]
    if missing:
        raise BenchmarkError(f"{path}: missing column(s): {', '.join(sorted(set(missing)))}; "
                             f"the file has: {', '.join(h for h in header if h)}")
    if not rows:
        raise BenchmarkError(f"{path}: no pairs to score (the file has a header line and no readable rows"
                             + (f"; {len(malformed)} malformed" if malformed else "") + ")")
    idx = {h: i for i, h in enumerate(header)}
    records = []
    for row in rows:
        rec = {}
        for target, src in columns.items():
            rec[target] = row[idx[src]].strip() if src else "unspecified"
        for target, src in extra.items():
            if src in idx:
                rec[target] = row[idx[src]].strip()
        records.append(rec)
    frame = pd.DataFrame.from_records(records, columns=CORE_COLUMNS + [t for t, s in extra.items() if s in idx])
    for col in frame.columns:
        frame[col] = frame[col].astype(str).map(fix_mojibake)
    frame.insert(0, "pair_id", range(len(frame)))
    frame["bias_type"] = frame["bias_type"].replace("", "unspecified")
    frame["load_issue"] = [_row_issue(m, l) for m, l in zip(frame["sent_more"], frame["sent_less"])]
    return Benchmark(name=name, frame=frame, language=language, description=description, path=path,
                     malformed=malformed)


def _row_issue(more: str, less: str) -> str:
    if not more.strip() or not less.strip():
        return "empty sentence"
    if more.split() == less.split():  # equal up to whitespace
        return "identical sentences"
    return ""
