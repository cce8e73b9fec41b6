"""Bad input on the command line: each case ends with one line on stderr and exit code 2 (no traceback), a
repeated export writes the same file, and a pair that shares only punctuation is skipped, not scored."""
from __future__ import annotations

import pytest
import torch

from biascore.cli.main import main
from biascore.methods.attribution.scorer import ONLY_PUNCTUATION, score_pair, summarize
from biascore.runs import runner
from biascore.methods import get


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "Loading weights" not in line]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "error" in lines[0], err
    return lines[0]


def _exit_code(argv: list[str]) -> int:
    """main()'s return value, or the code of the SystemExit that argparse raises for a bad option."""
    try:
        return main(argv)
    except SystemExit as exc:
        return int(exc.code)


def test_header_only_csv_is_a_one_line_error(random_mlm, tmp_path, capsys):
    path = tmp_path / "header_only.csv"
    path.write_text("sent_more,sent_less,bias_type\n", encoding="utf-8")
    assert _exit_code(["score", "--model", str(random_mlm.source), "--benchmark", str(path)]) == 2
    assert "no pairs to score" in _one_line_error(capsys)


@pytest.mark.parametrize("argv, needle", [
    (["score", "--limit", "0"], "--limit: must be at least 1, got 0"),
    (["score", "--limit", "-5"], "--limit: must be at least 1, got -5"),
    (["score", "--limit", "ten"], "--limit: expected a whole number"),
    (["fields", "--limit", "0"], "--limit: must be at least 1"),
    (["fields", "--top", "-1"], "--top: must be at least 0"),
    (["fields", "--min-count", "0"], "--min-count: must be at least 1"),
    (["heads", "--mask-eval", "0"], "--mask-eval: must be at least 1"),
    (["heads", "--held-out", "-3"], "--held-out: must be at least 1"),
    (["heads", "--batch-size", "0"], "--batch-size: must be at least 1"),
    (["labdet", "--alpha", "2"], "--alpha: must be between 0 and 1"),
    (["labdet", "--alpha", "0"], "--alpha: must be between 0 and 1"),
    (["ceat", "--test", "weat6", "--n-contexts", "1"], "--n-contexts: must be at least 2"),
    (["ceat", "--test", "weat6", "--draws", "0"], "--draws: must be at least 1"),
    (["seat", "--test", "weat6", "--seed", "-1"], "--seed: must be at least 0"),
    (["data", "download", "--timeout", "0"], "--timeout: must be between 0 and inf"),
])
def test_out_of_range_options_are_one_line_errors(argv, needle, capsys):
    assert _exit_code(argv) == 2
    assert needle in _one_line_error(capsys)


def test_unusable_paths_are_one_line_errors_before_computing(random_mlm, tmp_path, capsys, monkeypatch):
    """--cache-dir that is a file, --out that is a folder (checked before any pair is scored), snapshot export
    --out a folder --force: one line each, exit 2."""
    model = ["--model", str(random_mlm.source), "--benchmark", "demo", "--limit", "2"]
    assert _exit_code(["score", *model, "--cache-dir", "/dev/null"]) == 2
    assert "/dev/null is a file, not a folder" in _one_line_error(capsys)
    monkeypatch.setattr("biascore.cli.run.run", lambda *a, **k: pytest.fail("computed before --out was checked"))
    assert _exit_code(["score", *model, "--cache-dir", str(tmp_path / "c"), "--out", str(tmp_path)]) == 2
    assert f"--out {tmp_path} is a folder" in _one_line_error(capsys)
    assert _exit_code(["snapshot", "export", "--out", str(tmp_path), "--force", "--cache-dir", str(tmp_path)]) == 2
    assert f"--out {tmp_path} is a folder" in _one_line_error(capsys)


@pytest.mark.parametrize("device, available", [
    ("mps", lambda: torch.backends.mps.is_available()),
    ("cuda", lambda: torch.cuda.is_available()),
])
def test_missing_device_is_a_one_line_error(device, available, random_mlm, capsys):
    if available():
        pytest.skip(f"this machine has {device}")
    assert _exit_code(["score", "--model", str(random_mlm.source), "--benchmark", "demo", "--device", device]) == 2
    assert f"--device {device} was asked for" in _one_line_error(capsys)


def test_repeated_csv_export_from_the_cache_writes_the_same_file(random_mlm, tmp_path, capsys):
    argv = ["score", "--model", str(random_mlm.source), "--benchmark", "demo", "--cache-dir", str(tmp_path / "cache")]
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    assert main(argv + ["--out", str(first)]) == 0  # computed
    assert main(argv + ["--out", str(second)]) == 0  # read back from the cache (numpy arrays of int64)
    assert "Traceback" not in capsys.readouterr().err
    assert second.read_bytes() == first.read_bytes()
    assert len(first.read_text(encoding="utf-8").splitlines()) > 1


PUNCTUATION_ONLY = ("Poor people are lazy.", "Quantum chromodynamics describes gluons.")


@pytest.mark.parametrize("model", ["random_mlm", pytest.param("tiny_mlm", marks=pytest.mark.shared("tiny_mlm")),
                                   "smollm"])
def test_pair_sharing_only_punctuation_is_skipped(model, request):
    lm = request.getfixturevalue(model)
    row = score_pair(lm, *PUNCTUATION_ONLY)
    assert row["skipped_reason"] == ONLY_PUNCTUATION
    assert row["sjsd"] != row["sjsd"] and not row["biased"]  # NaN: no score
    # a real minimal pair that ends in the same "." is still scored
    assert score_pair(lm, "Poor people are lazy.", "Rich people are lazy.")["skipped_reason"] == ""


def test_pair_sharing_only_punctuation_stays_out_of_b(random_mlm, tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text("sent_more,sent_less,bias_type\n"
                    f"{PUNCTUATION_ONLY[0]},{PUNCTUATION_ONLY[1]},socioeconomic\n"
                    "Poor people are lazy.,Rich people are lazy.,socioeconomic\n", encoding="utf-8")
    frame = runner.run(get("attribution"), random_mlm, str(path)).frame
    assert list(frame.skipped_reason) == [ONLY_PUNCTUATION, ""]
    overall = summarize(frame).iloc[0]
    assert overall.n == 1 and overall.n_skipped == 1
    assert overall.score == (100.0 if frame.biased.iloc[1] else 0.0)


@pytest.mark.parametrize("model", ["./no-such-model", "../models/tiny-mlmm", "/tmp/biascore/nope/model"])
def test_a_mistyped_model_path_says_the_path_is_missing_first(model, capsys):
    assert _exit_code(["score", "--model", model, "--benchmark", "demo"]) == 2
    line = _one_line_error(capsys)
    assert line.startswith("error: model path ") and "does not exist" in line
    assert "Repo id" not in line and "huggingface" not in line.lower()


def test_a_missing_name_that_could_be_a_hub_id_leads_with_the_missing_folder(capsys):
    assert _exit_code(["score", "--model", "my model folder", "--benchmark", "demo"]) == 2
    line = _one_line_error(capsys)
    missing, hub = line.find("does not exist"), line.find("Repo id")
    assert 0 < missing and (hub == -1 or missing < hub), line
