"""Many users on one server: real threads on one shared model, real processes on one cache key (killed with
SIGKILL and resumed), a killed lock holder, and a damaged cached result on the dashboard pages."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from biascore.store.cache import CacheKey, Progress, ResultCache
from biascore.store.locks import held, is_held
from reproducibility_contract import compare_frames
from biascore.methods.attribution.scorer import score_pair, summarize
from biascore.runs import runner
from biascore.methods import get
from biascore.methods.heads.masking import masked_perplexity, perplexity
from biascore.methods.heads.masks import head_layout, mask_from_heads
from waits import SAFETY_S, wait_until

REPO = Path(__file__).resolve().parents[2]

PAIRS = [("The poor are lazy and never work.", "The rich are lazy and never work."),
         ("She was too emotional to lead the team.", "He was too emotional to lead the team."),
         ("Old people cannot learn new technology.", "Young people cannot learn new technology."),
         ("Immigrants steal jobs from hard workers.", "Citizens steal jobs from hard workers.")]
HELD_OUT = ["The doctor read the report.", "A cat sat on the mat.", "The weather was nice today."]


def _run_together(jobs: dict[str, callable]) -> tuple[dict, list]:
    """Run every job in its own thread, released at once by a barrier; (results by name, errors)."""
    barrier = threading.Barrier(len(jobs))
    results, errors = {}, []

    def work(name, fn):
        barrier.wait()
        try:
            results[name] = fn()
        except Exception as exc:  # noqa: BLE001 - collected and asserted empty
            errors.append(f"{name}: {type(exc).__name__}: {exc}")

    threads = [threading.Thread(target=work, args=item) for item in jobs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return results, errors


def _same_pair_result(a: dict, b: dict) -> None:
    assert a["tokens"] == b["tokens"]
    assert a["bu"] == b["bu"]  # exactly: same inputs, same batch, no one else's state
    assert (a["sjsd"] == b["sjsd"]) or (np.isnan(a["sjsd"]) and np.isnan(b["sjsd"]))


@pytest.mark.exactness
def test_threads_on_one_model_match_lone_calls(random_mlm, smollm, tmp_path):
    """Live pairs on a masked and a causal model while a benchmark is scored and head-masked perplexities
    run on the same shared model: every number equals the lone call's bit for bit (same process, same batches:
    the contract promises the same bits), and nothing fails."""
    torch.set_num_threads(1)
    layout = head_layout(random_mlm.model)
    masks = {f"mask{i}": mask_from_heads(layout.shape, heads) for i, heads in
             enumerate([[(0, 0), (1, 2)], [(0, 1), (0, 3), (1, 0)], [(1, 1)]])}
    lone_pairs = {(lm.name, p): score_pair(lm, *p) for lm in (random_mlm, smollm) for p in PAIRS}
    lone_ppl = {name: masked_perplexity(random_mlm, HELD_OUT, m) for name, m in masks.items()}
    lone_plain = perplexity(random_mlm, HELD_OUT)
    attribution = get("attribution")
    lone_bench = runner.run(attribution, random_mlm, "demo", cache=ResultCache(tmp_path / "lone"), shard_size=8).frame
    assert len(set(lone_ppl.values()) | {lone_plain}) == len(masks) + 1  # the masks change the numbers

    jobs = {"benchmark": lambda: runner.run(attribution, random_mlm, "demo", cache=ResultCache(tmp_path / "shared"),
                                            shard_size=8).frame}
    for k in range(3):  # each thread scores every pair, in a different order
        for lm in (random_mlm, smollm):
            jobs[f"pairs-{lm.name}-{k}"] = (lambda lm=lm, k=k: {p: score_pair(lm, *p) for p in PAIRS[k:] + PAIRS[:k]})
    for name, m in masks.items():
        jobs[name] = lambda m=m: [masked_perplexity(random_mlm, HELD_OUT, m) for _ in range(2)]
    jobs["plain"] = lambda: [perplexity(random_mlm, HELD_OUT) for _ in range(2)]
    results, errors = _run_together(jobs)

    assert errors == []
    for name, value in results.items():
        if name.startswith("pairs-"):
            model = random_mlm.name if random_mlm.name in name else smollm.name
            for p, res in value.items():
                _same_pair_result(res, lone_pairs[(model, p)])
        elif name.startswith("mask"):
            assert value == [lone_ppl[name]] * 2
        elif name == "plain":
            assert value == [lone_plain] * 2
    bench = results["benchmark"]
    assert list(bench.pair_id) == list(lone_bench.pair_id)
    assert [list(x) for x in bench.bu] == [list(x) for x in lone_bench.bu]


def test_second_caller_waits_with_progress_instead_of_computing(tmp_path):
    """Two threads ask for one key: one computes, the other waits, sees the first one's progress, and gets
    the stored result without computing."""
    cache = ResultCache(tmp_path)
    key = CacheKey.make("unit", what="slow")
    release, started = threading.Event(), threading.Event()
    calls, seen = [], []

    def compute():
        calls.append(threading.current_thread().name)
        cache.report_progress(key, 3, 10)
        started.set()
        assert release.wait(SAFETY_S)
        return pd.DataFrame({"pair_id": range(10)})

    def waiting(progress):
        seen.append(progress)
        if progress is not None:
            release.set()  # the waiter saw the holder's progress: let the holder finish

    first = threading.Thread(target=lambda: cache.get_or_compute(key, compute), name="first")
    first.start()
    assert started.wait(SAFETY_S)
    frame = cache.get_or_compute(key, lambda: calls.append("second") or pd.DataFrame(), waiting=waiting)
    first.join(SAFETY_S)
    assert calls == ["first"]
    assert Progress(3, 10, os.getpid()) in seen
    assert list(frame.pair_id) == list(range(10))
    assert cache.progress(key) is None  # nobody is computing any more


def test_killed_lock_holder_does_not_block(tmp_path, processes):
    """A process killed (SIGKILL) while holding a key's lock leaves no lock behind: the OS releases flock."""
    cache = ResultCache(tmp_path)
    key = CacheKey.make("unit", what="killed")
    code = ("import sys, time\nfrom biascore.store.cache import CacheKey, ResultCache\n"
            "cache = ResultCache(sys.argv[1])\nkey = CacheKey.make('unit', what='killed')\n"
            "with cache.computing(key):\n    cache.report_progress(key, 1, 2)\n    print('HELD', flush=True)\n"
            "    time.sleep(600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "HELD"
        assert is_held(cache.lock_path(key))
        assert cache.progress(key) == Progress(1, 2, proc.pid)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(SAFETY_S)
    assert not is_held(cache.lock_path(key))
    assert cache.progress(key) is None  # a report left by a dead holder is not shown as progress
    got = []
    t = threading.Thread(target=lambda: got.append(cache.get_or_compute(key, lambda: pd.DataFrame({"x": [1]}))))
    t.start()
    t.join(timeout=SAFETY_S)
    assert not t.is_alive() and got[0].x.tolist() == [1]


#: a run of the demo benchmark in shards of 4 that prints each shard it computes; with ``hold`` > 0 it stops
#: (sleeps until killed) after computing that many shards, so the test kills it mid-way however fast it runs
WORKER = """
import os, sys, time
from biascore.store.cache import ResultCache
from biascore.models.loading import load_model
from biascore.runs import runner
from biascore.methods import get
from biascore.methods.attribution import scorer
model, cache_dir, hold = sys.argv[1], sys.argv[2], int(sys.argv[3])
lm = load_model(model)
compute = scorer.compute_logprobs
computed = []
def counted(lm, chunk, **kw):
    if hold and len(computed) >= hold:
        print("HOLDING", flush=True)
        while True:
            time.sleep(1)
    out = compute(lm, chunk, **kw)
    computed.append(int(chunk.pair_id.iloc[0]))
    print("SHARD", int(chunk.pair_id.iloc[0]), flush=True)
    return out
scorer.compute_logprobs = counted
frame = runner.run(get("attribution"), lm, "demo", cache=ResultCache(cache_dir), shard_size=4,
                   waiting=lambda d, t: print("WAIT", d, t, flush=True)).frame
print("DONE", len(frame), frame.pair_id.nunique(), flush=True)
"""


def _workers(n: int, model: str, cache_dir: Path, hold: int, log_dir: Path, tag: str) -> list[subprocess.Popen]:
    logs = [open(log_dir / f"{tag}{i}.log", "w") for i in range(n)]
    return [subprocess.Popen([sys.executable, "-c", WORKER, model, str(cache_dir), str(hold)], cwd=REPO,
                             stdout=log, stderr=subprocess.STDOUT) for log in logs]


def _lines(log_dir: Path, tag: str, kind: str) -> list[str]:
    return [line for p in sorted(log_dir.glob(f"{tag}*.log")) for line in p.read_text().splitlines()
            if line.startswith(kind)]


def _shard_lines(log_dir: Path, tag: str) -> list[str]:
    return _lines(log_dir, tag, "SHARD")


def _wait_lines(log_dir: Path, tag: str) -> list[str]:
    return _lines(log_dir, tag, "WAIT")


def test_two_processes_killed_and_resumed_store_each_pair_once(random_mlm, tmp_path, processes):
    """The issue's reproduction on the demo benchmark: two runs of one key, both SIGKILLed after a few shards,
    then resumed twice at once. Each pair is stored exactly once, the missing shards are computed once in
    all, and the result agrees with a clean run in this process within the reproducibility contract (other
    processes: the bits may differ; verdicts, and so B, only where |S_JSD| is within its bound)."""
    cache_dir, logs = tmp_path / "cache", tmp_path / "logs"
    logs.mkdir()
    model = str(random_mlm.source)
    first = _workers(2, model, cache_dir, 3, logs, "run")  # the lock holder stops after 3 shards
    wait_until(lambda: _lines(logs, "run", "HOLDING") and _wait_lines(logs, "run"),
               "one run holding after 3 shards while the other waits with its progress",
               alive=lambda: all(p.poll() is None for p in first))
    for p in first:
        p.send_signal(signal.SIGKILL)
        p.wait(SAFETY_S)
    run_lines = _shard_lines(logs, "run")
    assert 3 <= len(run_lines) < 10, "the first runs must be killed mid-way (demo: 10 shards of 4 pairs)"
    assert len(set(run_lines)) == len(run_lines)  # one computed, the other waited for the lock ...
    assert _wait_lines(logs, "run")[0].split()[2] == "38"  # ... seeing the holder's progress k/38
    on_disk = len(list((cache_dir / "attribution").glob("*.shards/*.parquet")))

    second = _workers(2, model, cache_dir, 0, logs, "resume")
    for p in second:
        assert p.wait(SAFETY_S) == 0
    outputs = [(logs / f"resume{i}.log").read_text() for i in range(2)]
    assert all("DONE 38 38" in out for out in outputs), outputs
    resumed = _shard_lines(logs, "resume")
    assert sorted(resumed) == sorted(set(resumed)) and len(resumed) == 10 - on_disk  # each missing shard once

    stored = list((cache_dir / "attribution").glob("*.parquet"))
    assert len(stored) == 1
    raw = pd.read_parquet(stored[0])
    assert len(raw) == 38 and raw.pair_id.is_unique
    result = runner.run(get("attribution"), random_mlm, "demo", cache=ResultCache(cache_dir)).frame
    clean = runner.run(get("attribution"), random_mlm, "demo", cache=ResultCache(tmp_path / "clean"),
                       shard_size=4).frame
    agreement = compare_frames(clean, result)
    assert agreement.within_contract, agreement.problems
    if agreement.flips == 0:
        assert summarize(result).score.tolist() == summarize(clean).score.tolist()


def _damage_row_groups(path: Path) -> None:
    """Overwrite everything between the magic bytes and the footer (the row groups); the footer stays."""
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little")
    end = len(data) - 8 - footer
    data[4:end] = np.random.default_rng(0).integers(0, 256, end - 4, dtype=np.uint8).tobytes()
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("page", ["overview", "token_attributions"])
def test_damaged_cached_result_is_one_line_on_the_page(page, random_mlm, tmp_path, monkeypatch):
    """Row groups overwritten, footer intact (the listing still sees the run): one line on the page, no
    traceback; the file is removed, so scoring again recomputes it."""
    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    cache = ResultCache(tmp_path / "cache")
    runner.run(get("attribution"), random_mlm, "demo", cache=cache)
    (path,) = (tmp_path / "cache" / "attribution").glob("*.parquet")
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.query_params.update({"benchmark": "demo", "model": random_mlm.name})
    at.run()  # the server is up and has read the intact run; then the file is damaged on disk
    _damage_row_groups(path)
    at.switch_page(f"views/pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    messages = [e.value for e in at.error]
    assert len(messages) == 1 and "damaged" in messages[0] and "\n" not in messages[0], messages
    assert not path.exists()  # removed, so scoring it again recomputes it
    again = runner.run(get("attribution"), random_mlm, "demo", cache=cache).frame
    assert len(again) == 38


def test_model_hash_memo_keeps_every_concurrent_entry(tmp_path, monkeypatch):
    """Processes share <cache>/models/hashes.json: concurrent hashes of different files all end up in it
    (the update is a read-modify-write under a file lock), and each equals hashlib's."""
    import hashlib
    import json

    from biascore.models import loading as models

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    files = []
    for i in range(8):
        f = tmp_path / f"weights{i}.bin"
        f.write_bytes(np.random.default_rng(i).bytes(3 << 20))
        files.append(f)
    results, errors = _run_together({f.name: (lambda f=f: models._file_sha256(f)) for f in files})
    assert errors == []
    memo = json.loads((tmp_path / "cache" / "models" / "hashes.json").read_text())
    assert len(memo) == len(files)
    for f in files:
        assert results[f.name] == hashlib.sha256(f.read_bytes()).hexdigest()
        assert [v for k, v in memo.items() if k.startswith(f"{f.resolve()}|")] == [results[f.name]]
