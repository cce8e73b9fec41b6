"""Sweeps (`python -m biascore sweep`): the same cached results as the single commands, on a local Ray instance
and with the local executor; a killed worker is retried and the result is complete; a failing task is
reported by name while the others finish; a second sweep is answered from the cache without loading a model;
the spec file; the status files and the dashboard's sweep panel."""
from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from biascore.cli.main import main
from biascore.store.cache import ResultCache
from biascore.models.handle import ModelHandle
from biascore.models.loading import model_identity
from reproducibility_contract import compare_frames
from biascore.methods.attribution.scorer import summarize
from biascore.runs import runner
from biascore.methods import get
from biascore.models.spec import ModelSpec
from biascore.sweep.spec import SpecError, Task, build_spec
from biascore.sweep.status import SweepStatus, read_sweeps
from tests.conftest import TINY_MLM as TINY_MLM_PATH
from waits import SAFETY_MS, SAFETY_S
from tests.tiny_models import save_random_causal_lm

REPO = Path(__file__).resolve().parents[2]
TINY_MLM = str(TINY_MLM_PATH)
#: the tests that sweep the tiny trained MLM over crows-en-gso
SHARED = pytest.mark.shared("tiny_mlm", "data")
BENCHMARKS = ["demo", "crows-en-gso"]
METRICS = ["attribution", "pll"]
UNKNOWN = "no-such-org/no-such-model"


@pytest.fixture(scope="module")
def causal_model(tmp_path_factory) -> str:
    """A seeded random 2-layer GPT-2 with a WordPiece tokenizer (MiniLM's), saved to a folder."""
    return save_random_causal_lm(tmp_path_factory.mktemp("tiny-causal"))


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(list(argv))
    return rc, out.getvalue()


def sweep_args(models: list[str], cache: Path, *extra: str) -> list[str]:
    return ["sweep", "--models", *models, "--benchmarks", *BENCHMARKS, "--metrics", *METRICS,
            "--cache-dir", str(cache), *extra]


def assert_same_run(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Two runs of one model × benchmark in different processes (Ray workers, the test process): the same pairs,
    tokens and words; the numbers within the reproducibility contract (docs/reproducibility.md)."""
    agreement = compare_frames(a, b)
    assert agreement.within_contract, agreement.problems
    numbers = ["bu", "word_bu", "sjsd", "biased", "pll_more", "pll_less", "logp_more", "logp_less"]
    pd.testing.assert_frame_equal(a.drop(columns=numbers), b.drop(columns=numbers))


def same_verdicts(frames: list[tuple[pd.DataFrame, pd.DataFrame]]) -> bool:
    """Whether no S_JSD verdict differs between the runs (then B, the share of biased pairs, is the same)."""
    return all(compare_frames(a, b).flips == 0 for a, b in frames)


def cached_frame(model: str, benchmark: str, cache: Path) -> pd.DataFrame:
    """The per-pair frame of ``model`` on ``benchmark`` read from ``cache`` (a model load would fail the test)."""
    handle = ModelHandle.standin(model, model_identity(model), f"{model} on {benchmark} is not in {cache}")
    return runner.run(get("attribution"), handle, benchmark, cache=ResultCache(cache)).frame


def latest_task_records(cache: Path) -> dict[str, dict]:
    folder = sorted((cache / "sweeps").iterdir())[-1]
    return {rec["task"]: rec for rec in (json.loads(p.read_text()) for p in (folder / "tasks").glob("*.json"))}


def overview_lines(output: str) -> list[str]:
    lines = output.splitlines()
    start = lines.index("B / PLL bias score by bias type (% of pairs; 50 = unbiased)")
    return lines[start:start + 2 + len(BENCHMARKS) * 2 * len(METRICS)]


@pytest.fixture(scope="module")
def single_commands(causal_model, tmp_path_factory) -> Path:
    """Every model × benchmark scored by `python -m biascore score` into its own cache."""
    cache = tmp_path_factory.mktemp("single")
    for model in (TINY_MLM, causal_model):
        for bench in BENCHMARKS:
            rc, _ = run_cli("score", "--model", model, "--benchmark", bench, "--cache-dir", str(cache))
            assert rc == 0
    return cache


# --------------------------------------------------------------------------------------------- Ray
def kill_worker_when_computing(cache: Path, task: str, found: dict, timeout_s: float = 300) -> None:
    """SIGKILL the worker running ``task`` once it is scoring pairs (its status file has a pair count)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not found:
        for path in cache.glob("sweeps/*/tasks/*.json"):
            try:
                rec = json.loads(path.read_text())
            except ValueError:
                continue
            if rec.get("task") == task and rec.get("state") == "running" and rec.get("attempt") == 1 \
                    and rec.get("pairs_total"):
                os.kill(int(rec["pid"]), signal.SIGKILL)
                found.update(rec)
                return
        time.sleep(0.02)


@pytest.fixture(scope="module")
def ray_sweep(ray_instance, causal_model, tmp_path_factory):
    """One sweep on the local Ray instance: two models, an unknown model, two benchmarks, two metrics; the
    worker scoring the tiny MLM on crows-en-gso is killed mid-run."""
    cache = tmp_path_factory.mktemp("ray-sweep")
    victim = f"{TINY_MLM} × crows-en-gso"
    killed: dict = {}
    killer = threading.Thread(target=kill_worker_when_computing, args=(cache, victim, killed), daemon=True)
    killer.start()
    rc, out = run_cli(*sweep_args([TINY_MLM, causal_model, UNKNOWN], cache, "--ray"))
    killer.join(timeout=1)
    return {"cache": cache, "rc": rc, "out": out, "killed": killed, "victim": victim}


@SHARED
def test_ray_sweep_results_equal_the_single_commands(ray_sweep, single_commands, causal_model):
    for model in (TINY_MLM, causal_model):
        for bench in BENCHMARKS:
            swept = cached_frame(model, bench, ray_sweep["cache"])
            assert_same_run(cached_frame(model, bench, single_commands), swept)
            for metric, label in (("attribution", "B"), ("pll", "PLL")):
                overall = summarize(swept, metric).set_index("bias_type").loc["all", "score"]
                row = next(l for l in overview_lines(ray_sweep["out"])  # model, precision, benchmark, metric
                           if l.split()[:5] == [model, "exact", "(float32)", bench, label])
                assert row.split()[6] == f"{overall:.2f}"


@SHARED
def test_ray_sweep_reports_the_unknown_model_by_name_and_finishes_the_rest(ray_sweep):
    assert ray_sweep["rc"] == 1
    out = ray_sweep["out"]
    for bench in BENCHMARKS:
        assert f"FAILED {UNKNOWN} × {bench}: ModelLoadError" in out
    assert "4 of 6 task(s) done, 2 failed" in out
    states = {t: r["state"] for t, r in latest_task_records(ray_sweep["cache"]).items()}
    assert sorted(states.values()) == ["done"] * 4 + ["failed"] * 2


@SHARED
def test_ray_worker_killed_mid_run_is_retried_and_the_result_is_complete(ray_sweep):
    assert ray_sweep["killed"], "the victim task was never seen scoring pairs"
    rec = latest_task_records(ray_sweep["cache"])[ray_sweep["victim"]]
    assert rec["state"] == "done" and rec["attempt"] == 2 and rec["pid"] != ray_sweep["killed"]["pid"]
    frame = cached_frame(TINY_MLM, "crows-en-gso", ray_sweep["cache"])
    assert len(frame) == 231 and frame["pair_id"].is_unique  # each pair once
    assert not list((ray_sweep["cache"] / "attribution").glob("*.shards"))  # finished: no shards left over


@SHARED
def test_second_ray_sweep_is_answered_from_the_cache_without_loading_a_model(ray_sweep, causal_model):
    rc, out = run_cli(*sweep_args([TINY_MLM, causal_model], ray_sweep["cache"], "--ray"))
    assert rc == 0 and "4 of 4 task(s) done, 0 failed; model loads: 0" in out
    records = latest_task_records(ray_sweep["cache"])
    assert len(records) == 4 and all(r["state"] == "done" and r["model_loaded"] is False for r in records.values())
    assert overview_lines(out) == overview_lines(ray_sweep["out"])


@SHARED
def test_ray_worker_dying_on_its_last_attempt_is_reported_by_name(ray_instance, tmp_path):
    """--retries 0 and the worker killed mid-run: the task is reported failed with the crash, never dropped."""
    victim = f"{TINY_MLM} × crows-en-gso"
    killed: dict = {}
    killer = threading.Thread(target=kill_worker_when_computing, args=(tmp_path, victim, killed), daemon=True)
    killer.start()
    rc, out = run_cli("sweep", "--models", TINY_MLM, "--benchmarks", "crows-en-gso", "--cache-dir", str(tmp_path),
                      "--ray", "--retries", "0")
    killer.join(timeout=1)
    assert killed and rc == 1
    assert f"FAILED {victim}: WorkerCrashedError: the worker running it died (1 attempt(s))" in out
    assert latest_task_records(tmp_path)[victim]["state"] == "failed"


@SHARED
def test_overview_page_lists_what_the_sweep_produced(ray_sweep, causal_model, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(ray_sweep["cache"]))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=SAFETY_S)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    wide = next(df.value for df in at.dataframe if "all" in df.value.columns)
    assert {(m, b) for m, b in zip(wide["model"], wide["benchmark"])} == {
        (m, b) for m in (TINY_MLM, causal_model) for b in BENCHMARKS}
    # the sweep finished with two failed tasks: the panel names them
    texts = [t.value for t in at.text]
    assert sum(t.startswith(f"failed: {UNKNOWN} × ") for t in texts) == 2


# --------------------------------------------------------------------------------------------- local
@SHARED
def test_local_sweep_equals_the_ray_sweep_and_resumes_from_the_cache(ray_sweep, causal_model, tmp_path,
                                                                    monkeypatch):
    rc, out = run_cli(*sweep_args([TINY_MLM, causal_model, UNKNOWN], tmp_path))
    assert rc == 1 and f"FAILED {UNKNOWN} × demo" in out and f"FAILED {UNKNOWN} × crows-en-gso" in out
    runs = [(cached_frame(model, bench, ray_sweep["cache"]), cached_frame(model, bench, tmp_path))
            for model in (TINY_MLM, causal_model) for bench in BENCHMARKS]
    for ray_run, local_run in runs:  # this process vs Ray's workers
        assert_same_run(ray_run, local_run)
    if same_verdicts(runs):  # B differs only through a verdict within its bound
        assert overview_lines(out) == overview_lines(ray_sweep["out"])

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded for a cached result")

    monkeypatch.setattr("biascore.models.loading.load_model", no_load)
    rc, again = run_cli(*sweep_args([TINY_MLM, causal_model], tmp_path))
    assert rc == 0 and "model loads: 0" in again and overview_lines(again) == overview_lines(out)


# --------------------------------------------------------------------------------------------- spec
def test_spec_from_yaml_and_toml_with_cli_overrides(tmp_path):
    (tmp_path / "s.yaml").write_text("models: [a, b]\nbenchmarks: demo\nmetrics: [pll]\nlimit: 5\n")
    (tmp_path / "s.toml").write_text('models = ["a", "b"]\nbenchmarks = ["demo"]\nmetrics = ["pll"]\nlimit = 5\n')
    for name in ("s.yaml", "s.toml"):
        spec = build_spec(tmp_path / name, models=["c"])
        assert spec.models == ["c"] and spec.benchmarks == ["demo"] and spec.limit == 5
        assert spec.tasks() == [Task(ModelSpec("c"), "pairs", "demo", ("pll",))]
    spec = build_spec(None, models=["m"], benchmarks=["x", "y"], metrics=["attribution", "pll", "seat"],
                      seat_tests=["sent-weat6"])
    assert [t.name for t in spec.tasks()] == ["m × x", "m × y", "m × seat:sent-weat6"]
    assert spec.tasks()[0].metrics == ("attribution", "pll")


def test_an_aligned_set_sweeps_its_languages():
    """Languages × models like any sweep: an aligned set's name among the benchmarks runs each language's."""
    spec = build_spec(None, models=["m", "n"], benchmarks=["demo-aligned", "demo"], metrics=["attribution"])
    langs = ["ar", "de", "en", "fi", "fr", "id", "ko", "th", "vi", "zh"]
    assert [t.name for t in spec.tasks()] == [f"{m} × {b}" for m in ("m", "n")
                                              for b in [f"demo-aligned-{lang}" for lang in langs] + ["demo"]]


@pytest.mark.parametrize("text, message", [
    ("models: [a]\nbenchmarks: [demo]\nmodles: [b]\n", "unknown key(s) modles"),
    ("models: [a]\nmetrics: [attribution]\n", "metric attribution needs its inputs: --benchmarks"),
    ("models: [a]\nbenchmarks: [demo]\nmetrics: [bleu]\n", "unknown metric(s) bleu"),
    ("models: [a]\nmetrics: [seat]\n", "metric seat needs its inputs"),
    ("models: [a\n", "cannot parse"),
    ("models: [a]\nbenchmarks: [demo]\nlimit: ten\n", "'limit' must be a number of pairs or null"),
])
def test_bad_spec_is_one_clear_line(tmp_path, capsys, text, message):
    (tmp_path / "bad.yaml").write_text(text)
    with pytest.raises(SpecError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build_spec(tmp_path / "bad.yaml")
    assert main(["sweep", "--spec", str(tmp_path / "bad.yaml"), "--cache-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ")


# --------------------------------------------------------------------------------------------- status
def test_status_files_and_the_dashboard_panel_show_a_sweep_in_progress(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    names = ["m × a", "m × b", "m × c", "m × d"]
    status = SweepStatus.create(tmp_path, names, "ray auto")
    status.task("m × a", "running")
    status.task("m × a", "done", seconds=1.0, model_loaded=True)
    status.task("m × b", "running")
    status.progress("m × b", 64, 231)
    status.task("m × c", "running")
    status.task("m × c", "failed", error="ModelLoadError: could not load model 'm'")
    (sweep,) = read_sweeps(tmp_path)
    assert sweep.in_progress and sweep.counts == {"pending": 1, "running": 1, "done": 1, "failed": 1}
    assert sweep.running == [("m × b", 64, 231)]
    assert sweep.failed == [("m × c", "ModelLoadError: could not load model 'm'")]

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path))
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=SAFETY_S)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    texts = [t.value for t in at.text]
    assert "running: m × b (64/231 pairs)" in texts
    assert "failed: m × c: ModelLoadError: could not load model 'm'" in texts
    assert any("1 done · 1 running · 1 failed · 1 pending" in str(p.proto.text) for p in at.get("progress"))

    status.task("m × b", "done")
    status.task("m × d", "running")   # a retried task counts its attempts
    status.task("m × d", "running")
    assert status.read_task("m × d")["attempt"] == 2
    status.finish()
    (sweep,) = read_sweeps(tmp_path)
    assert not sweep.in_progress and not sweep.interrupted
    assert read_sweeps(tmp_path, finished_since=time.time() + 1) == []


def test_a_sweep_whose_driver_died_shows_as_interrupted(tmp_path, processes):
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    status = SweepStatus.create(tmp_path, ["m × a"], "local")
    sweep_json = Path(status.root) / "sweep.json"
    sweep_json.write_text(json.dumps({**json.loads(sweep_json.read_text()), "pid": int(dead.stdout)}))
    (sweep,) = read_sweeps(tmp_path)
    assert sweep.interrupted and not sweep.in_progress


def test_seat_task_equals_the_seat_command(tmp_path, random_mlm, fixture_data):
    """The SEAT metric runs the association scorer's own entry point: the same row as `python -m biascore seat`
    (one process, the same batches: the same bits)."""
    out, model, test = tmp_path / "seat.csv", random_mlm.name, "names-career-family"
    assert main(["seat", "--model", model, "--test", test, "--out", str(out),
                 "--cache-dir", str(tmp_path / "single")]) == 0
    rc, text = run_cli("sweep", "--models", model, "--metrics", "seat", "--seat-tests", test,
                       "--cache-dir", str(tmp_path / "sweep"))
    assert rc == 0 and f"seat: {model} × seat:{test}" in text
    single = pd.read_csv(out).iloc[0]
    swept = ResultCache(tmp_path / "sweep").entries("seat")
    assert len(swept) == 1
    row = pd.read_parquet(swept[0]["path"]).iloc[0]
    assert (row["effect_size"], row["p_value"]) == (single["effect_size"], single["p_value"])


def test_browser_overview_follows_a_running_sweep_without_reload(tmp_path, browser):
    """A real browser on the Overview: the sweep panel updates by itself as the status files change."""
    from tests.views.test_e2e_browser import dashboard_server

    cache = tmp_path / "cache"
    status = SweepStatus.create(cache, ["m × a", "m × b", "m × c"], "ray auto")
    status.task("m × a", "running")
    status.task("m × a", "done")
    status.task("m × b", "running")
    status.progress("m × b", 10, 100)
    with dashboard_server({"BIASCORE_CACHE_DIR": str(cache)}, tmp_path / "streamlit.log") as url:
        page = browser.new_page()
        page.set_default_timeout(SAFETY_MS)
        page.goto(url, wait_until="domcontentloaded")
        page.get_by_text("1 done · 1 running · 0 failed · 1 pending", exact=False).wait_for(timeout=SAFETY_MS)
        page.get_by_text("running: m × b (10/100 pairs)").wait_for(timeout=SAFETY_MS)
        status.progress("m × b", 50, 100)
        page.get_by_text("running: m × b (50/100 pairs)").wait_for(timeout=SAFETY_MS)
        status.task("m × b", "done")
        status.task("m × c", "running")
        status.task("m × c", "failed", error="ModelLoadError: <b>not</b> a model")
        page.get_by_text("2 done · 0 running · 1 failed · 0 pending", exact=False).wait_for(timeout=SAFETY_MS)
        page.get_by_text("failed: m × c: ModelLoadError: <b>not</b> a model").wait_for(timeout=SAFETY_MS)  # literal
        status.finish()
        page.get_by_text("Sweep finished").wait_for(timeout=SAFETY_MS)
        page.close()


def test_ray_task_options_ask_for_a_gpu_only_on_a_gpu_cluster():
    from biascore import settings
    from biascore.sweep.ray_runner import task_options

    cpu, gpu = task_options(0, 3, "/c", "/d"), task_options(8, 3, "/c", "/d")
    assert (cpu["num_gpus"], gpu["num_gpus"]) == (0, 1)
    assert gpu["num_cpus"] == 1 and gpu["max_retries"] == 3 and gpu["retry_exceptions"] is False
    env = gpu["runtime_env"]["env_vars"]
    assert env["BIASCORE_CACHE_DIR"] == "/c" and env["BIASCORE_DATA_DIR"] == "/d"
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(settings.REPO_ROOT)


def test_a_sweep_with_options_stores_what_run_stores_with_them(tmp_path, random_mlm, fixture_data, capsys):
    """Any method's options reach a sweep through its Options specs (``--options`` and the spec file's
    ``options:``): the sweep stores the entry `biascore run` stores with the same options (one entry, one
    key), and a run with those options is then answered from the sweep's cache without computing."""
    model, test, cache = random_mlm.name, "names-career-family", tmp_path / "cache"
    rc, text = run_cli("sweep", "--models", model, "--metrics", "seat", "heads-counter", "--seat-tests", test,
                       "--options", "seat.n_samples=200", "seat.seed=3", "--cache-dir", str(cache))
    assert rc == 0 and "2 of 2 task(s) done" in text  # heads-counter: its fixed input without a flag
    (entry,) = ResultCache(cache).entries("seat")
    assert (entry["n_samples"], entry["seed"]) == (200, 3)
    rc, _ = run_cli("seat", "--model", model, "--test", test, "--n-samples", "200", "--seed", "3",
                    "--cache-dir", str(cache))
    assert rc == 0 and len(ResultCache(cache).entries("seat")) == 1  # the same key: nothing new stored

    (tmp_path / "s.yaml").write_text(f"models: [{model}]\nseat_tests: [{test}]\nmetrics: [seat, labdet]\n"
                                     "labdet_langs: [en]\noptions: {seat: {n_samples: 300}, labdet: {n_boot: 150, "
                                     "nationalities: [de, fr]}}\n")
    spec = build_spec(tmp_path / "s.yaml", options={"seat": {"seed": 4}})
    assert spec.method_options() == {"seat": {"n_samples": 300, "seed": 4},
                                     "labdet": {"n_boot": 150, "nationalities": ["de", "fr"]}}
    capsys.readouterr()
    for bad, message in [(["--options", "seat.n_samples=5"], "--n-samples: must be at least 100, got 5"),
                         (["--options", "seat.nope=1"], "seat has no option 'nope'"),
                         (["--options", "labdet.n_boot=500"], "options given for labdet, which is not among"),
                         (["--options", "seat.seed=x"], "--seed: expected a whole number, got 'x'"),
                         (["--options", "n_samples"], "--options takes METHOD.OPTION=VALUE")]:
        assert main(["sweep", "--models", model, "--metrics", "seat", "--seat-tests", test, *bad,
                     "--cache-dir", str(cache)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], (bad, err)


def test_every_input_kind_has_a_sweep_flag():
    from biascore.cli.main import build_parser
    from biascore.sweep.spec import input_field, input_kinds

    sweep = build_parser()._subparsers._group_actions[0].choices["sweep"]
    flags = {s for a in sweep._actions for s in a.option_strings}
    for kind in input_kinds():
        assert "--" + input_field(kind).replace("_", "-") in flags, kind
    args = sweep.parse_args(["--models", "m", "--metrics", "logprob", "--logprob-test-inputs", "en-gender-career"])
    from biascore.sweep.cli import _input_args
    assert _input_args(args) == {"logprob-test": ["en-gender-career"]}
    assert build_spec(None, models=["m"], metrics=["logprob"], inputs=_input_args(args)).tasks() == [
        Task(ModelSpec("m"), "logprob-test", "en-gender-career", ("logprob",))]


def test_removed_fast_exact_is_refused_with_one_line(tmp_path, random_mlm):
    """--fast-exact is gone (slower than float32, docs/performance.md): the flag exits 2 and a spec file that still
    sets fast_exact names the removal, instead of silently running exact."""
    for argv in (["score", "--model", random_mlm.name, "--benchmark", "demo"],
                 ["sweep", "--models", random_mlm.name, "--benchmarks", "demo"]):
        with pytest.raises(SystemExit) as exit_:
            run_cli(*argv, "--fast-exact", "--cache-dir", str(tmp_path / "c"))
        assert exit_.value.code == 2
    spec = tmp_path / "spec.yaml"
    spec.write_text("models: [m]\nbenchmarks: [demo]\nfast_exact: true\n")
    with pytest.raises(SpecError, match="fast_exact was removed"):
        build_spec(spec)
