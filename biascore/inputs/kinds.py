"""The input kinds shared by several methods (a method with an input of its own declares it in its folder): pair
benchmarks, rows keyed by ``pair_id`` (``--limit N`` keeps the first N pairs; the pair count is part of the key),
and SEAT/WEAT tests."""
from __future__ import annotations

from pathlib import Path

from biascore.inputs.datasets import Benchmark, available_benchmarks, benchmark_path, load_benchmark, registry
from biascore.contract.input_kind import InputKind
from biascore.inputs.seat_tests import list_seat_tests, load_seat_test, seat_test_path


def _benchmark_files(bm: Benchmark, data_dir: Path | None) -> list[Path]:
    if bm.name in registry():
        return [benchmark_path(bm.name, data_dir)]
    return [Path(bm.path)] if bm.path else []


PAIRS = InputKind(
    name="pairs", flag="--benchmark", noun="benchmark", default="demo",
    help="pair benchmark name (see `biascore benchmarks`) or a CSV file with sent_more, sent_less[, bias_type]",
    load=lambda name, data_dir: load_benchmark(name, data_dir),
    names=lambda data_dir: [b["name"] for b in available_benchmarks(data_dir) if b["available"]],
    files=_benchmark_files, ids=lambda bm: [int(x) for x in bm.frame["pair_id"]], subset=lambda bm, a, b: bm.rows(a, b),
    first=lambda bm, n: bm.first(n), extra_key=lambda bm: {"n_pairs": len(bm.frame)}, unit="pair",
)


SEAT = InputKind(
    name="seat", flag="--seat-test", noun="SEAT test", default="weat6b",
    help="SEAT/WEAT test name in <data-dir>/seat/ (file stem, e.g. sent-weat6, weat6b) or a .jsonl path",
    load=lambda name, data_dir: load_seat_test(name, data_dir), names=lambda data_dir: list_seat_tests(data_dir),
    files=lambda test, data_dir: [seat_test_path(test.name, data_dir)],
)
