"""The exactness tests again under another CPU kernel path, so that an assertion which holds only for this
machine's kernels fails here, not on the next machine (docs/reproducibility.md).

The variant re-runs every test marked ``exactness`` in a fresh pytest process whose environment selects other
kernels on every axis at once: PyTorch's plain (non-vectorised) ATen kernels instead of the best the CPU has (the
path furthest from any vectorised one: AVX2 and AVX-512 lie between), MKL limited to AVX2, numpy without its
AVX-512 code paths and one OpenMP thread instead of the default number (torch caps OMP_NUM_THREADS at the number
of cores, so more threads than cores cannot be asked for this way). The exactness tests of the suite itself run
on the native path with the default threads, so each axis is checked both ways. That process has its own cache
and its own temporary folder, so every number is computed there, under those kernels. The variables are read
when the libraries start, which is why a subprocess is needed (the nesting is what this test checks). CI
(.ci/run) runs this file once, beside the bare clone's suite, rather than inside it.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: numpy's AVX-512 feature groups (NPY_DISABLE_CPU_FEATURES ignores the ones a CPU does not have)
NUMPY_AVX512 = "AVX512F AVX512CD AVX512_SKX AVX512_CLX AVX512_CNL AVX512_ICL AVX512_SPR"
VARIANTS = {
    "plain-kernels-mkl-avx2-numpy-without-avx512-one-thread": {
        "ATEN_CPU_CAPABILITY": "default", "MKL_ENABLE_INSTRUCTIONS": "AVX2", "NPY_DISABLE_CPU_FEATURES": NUMPY_AVX512,
        "OMP_NUM_THREADS": "1"},
}
EXPECTED_CAPABILITY = {"avx2": "AVX2", "default": "DEFAULT"}


def _capability(env: dict) -> str:
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300).stdout.strip()


def _outcomes(junit: Path) -> tuple[dict[str, int], list[str]]:
    """Counts of the child's run, and the reasons of its skipped tests."""
    suite = ET.parse(junit).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {k: int(suite.get(k, 0)) for k in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    reasons = [s.get("message", "") for s in suite.iter("skipped")]
    return counts, reasons


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_exactness_tests_pass_under_other_kernel_paths(variant, tmp_path, processes):
    env = {**os.environ, **VARIANTS[variant], "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("BIASCORE_CACHE_DIR", None)  # the child's conftest makes its own, empty cache
    wanted = EXPECTED_CAPABILITY[VARIANTS[variant]["ATEN_CPU_CAPABILITY"]]
    got = _capability(env)
    if got != wanted and wanted == "AVX2":  # a CPU without AVX2 runs the plain kernels instead
        assert got == "DEFAULT", got
    else:
        assert got == wanted, f"ATEN_CPU_CAPABILITY was not honoured: {got}"
    junit = tmp_path / "junit.xml"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "0", "-m", "exactness", "-q", "-p", "no:cacheprovider", "--no-header",
         f"--basetemp={tmp_path / 'tmp'}", f"--junitxml={junit}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1500)
    tail = proc.stdout[-6000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, f"exactness tests under {variant} ({VARIANTS[variant]}):\n{tail}"
    counts, skipped = _outcomes(junit)
    assert counts["failures"] == counts["errors"] == 0 and counts["passed"] > 0, counts
    # not vacuous: a test was skipped there only for want of the shared files (never where they are required)
    assert all("needs " in reason and "biascore data download" in reason for reason in skipped), skipped
