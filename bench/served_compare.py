"""Served vs in-process SmolLM2-135M on crows-en-gso through the reference server (tests/served_reference.py: vLLM's
completions protocol, SmolLM2 in float32, batching the prompts of concurrent requests into one forward pass), and
against lm-evaluation-harness 0.4.13's ``local-completions`` client on the same server, in the same run.

Measures, each run in a fresh cache, all with the lm-eval prefix convention (<|im_start|>, what lm-eval's own
clients put in front):

* in-process float32 (the attribution method through the runner, on the loaded model): time, pairs/s;
* served at each ``--concurrency`` (``served:http://127.0.0.1:PORT/v1``; 32 prompts per request): pairs/s (load,
  conformance check and fingerprint included), the prompts and HTTP requests the server saw per pair, and
  against in-process: max |Δ log P(u)|, max |Δ S_JSD|, S_JSD and PLL verdict flips, max |Δ ll| of the
  lm-eval-compatible whole-sentence log-likelihood, within the contract or not;
* lm-eval 0.4.13's ``local-completions`` client (one request at a time, ``num_concurrent=1``, token-id prompts) on
  the same server with its own ``crows_pairs_english`` task: pairs/s, prompts and requests per pair,
  pct_stereotype, and its per-pair ll against ours.

The server computes on ``--server-threads`` torch threads (default 1, as the tests' servers; the in-process run
uses torch's default, every CPU): the same server, with the same threads, answers both clients. On one thread no
client can be 3× a sequential one (batching 32 prompts saves the forward pass 2.3× per token on one thread,
docs/performance.md); ``--server-threads`` set to the machine's CPUs is a server using its whole device, as vLLM
does — measure that on a quiet machine only: on a busy one, torch's threads wait on each other and a forward of
one short prompt (lm-eval's requests) slows down 20×, which would flatter ours. Beside each run's wall time are the
CPU seconds per pair of this process (the client: ours, or lm-eval's) and of the server process, and the model's work
whatever the machine's load: the forward passes and their tokens with padding (in-process: the engine's batches;
served: the server's, from its ``/reference/stats``, the connection's included).

The machine is shared, so the runs alternate (``--rounds`` rounds of: in-process, each served concurrency, then
lm-eval), the load average is recorded beside every run, and the ratios reported are medians: of ours over
lm-eval's, and per round of ours served over in-process (the yardstick of a CPU-bound server: the served run,
connection included — conformance check, fingerprint, tokenizer facts, /tokenize calls and the proof prompt in
every request — against the in-process run on the same pairs). ``--no-lmeval`` leaves lm-eval's client out;
``--benchmark demo`` counts the prompts a small run sends (the /tokenize calls per pair beside them);
``--server-float32-softmax`` makes the server compute its log-probabilities as vLLM does (a plain float32 log-softmax)
to measure how far such a server's numbers fall from the in-process ones. Writes bench/results/served_compare.json
and .md (served_compare_threadsN.json and .md with ``--server-threads N`` above 1, so that both settings' results are
kept; ``_no_lmeval`` and ``_float32_softmax`` name the other settings).

    BIASCORE_DATA_DIR=../shared/data python bench/served_compare.py [--limit N] [--concurrency 1 16] [--rounds 2]
        [--server-threads N] [--no-lmeval] [--benchmark NAME] [--server-float32-softmax]
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

import numpy as np  # noqa: E402

BENCH = "crows-en-gso"
PREFIX = "lmeval"
CONCURRENCY = (1, 16)


def agreement(here, there) -> dict:
    from tests.reproducibility_contract import compare_frames
    from biascore.methods.attribution.scorer import summarize

    a = compare_frames(here, there)
    ll = max(float(np.nanmax(np.abs(here[c].to_numpy(float) - there[c].to_numpy(float))))
             for c in ("ll_more", "ll_less"))
    return {"max_abs_dlogp": a.max_dlogp, "max_rel_dlogp": a.max_rel_dlogp, "max_abs_dsjsd": a.max_dsjsd,
            "sjsd_flips": a.flips, "pll_flips": a.pll_flips, "max_abs_dll": ll, "within_contract": a.within_contract,
            "B": float(summarize(there, "attribution")["score"].iloc[0]),
            "PLL": float(summarize(there, "pll")["score"].iloc[0]),
            "lmeval_pct_stereotype": float(summarize(there, "lmeval")["pct_stereotype"].iloc[0])}


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description="served vs in-process SmolLM2 on crows-en-gso, and lm-eval's client")
    ap.add_argument("--limit", type=int, default=None, help="the first N pairs only (default: all 231)")
    ap.add_argument("--concurrency", type=int, nargs="*", default=list(CONCURRENCY), help="served runs to make")
    ap.add_argument("--rounds", type=int, default=2, help="alternating rounds of ours and lm-eval's (default 2)")
    ap.add_argument("--server-threads", type=int, default=1,
                    help="torch threads of the reference server (default 1; the machine's CPUs on a quiet machine)")
    ap.add_argument("--no-lmeval", action="store_true", help="leave lm-eval's client out")
    ap.add_argument("--benchmark", default=BENCH, help=f"the pairs (default {BENCH})")
    ap.add_argument("--server-float32-softmax", action="store_true",
                    help="the server's log-probabilities from a plain float32 log-softmax, as vLLM computes them")
    args = ap.parse_args()
    limit, bench = args.limit, args.benchmark
    from biascore.runs import runner
    from biascore.store.cache import ResultCache
    from biascore.inputs.datasets import load_benchmark
    from biascore.models.loading import load_model, resolve_source
    from biascore.models.served import load_served
    from biascore.methods import get
    from biascore.methods.attribution.scorer import summarize
    from served_reference import Process
    from tests.lmeval_harness import run_lmeval_crows

    res = REPO / "bench" / "results"
    pairs = load_benchmark(bench).first(limit).frame if limit else load_benchmark(bench).frame
    n = len(pairs)
    out: dict = {"benchmark": bench, "lmeval": not args.no_lmeval, "prefix": PREFIX, "pairs": n, "limit": limit, "rounds": args.rounds,
                 "server_threads": args.server_threads, "in_process_threads": _torch_threads(),
                 "server_log_softmax": "float32 (as vLLM)" if args.server_float32_softmax else "precise float32",
                 "machine": f"{platform.machine()}, {os.cpu_count()} CPUs", "uptime_start": _uptime()}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)

        def scores(lm, cache: str):  # the attribution frame through the runner, into a cache of its own
            return runner.run(get("attribution"), lm, bench, limit=limit, prefix=PREFIX,
                              cache=ResultCache(work / cache)).frame

        smollm = load_model("smollm2-135m", device="cpu")
        work_done = _count_batches()
        inproc: list = []
        here = None
        server = Process("--threads", str(args.server_threads),
                         *(["--float32-softmax"] if args.server_float32_softmax else [])).start()
        cpu = _CpuClock(server.proc.pid)
        try:
            from lm_eval.models.openai_completions import LocalCompletionsAPI

            folder = resolve_source("smollm2-135m").converted_folder
            served: dict[str, list] = {str(c): [] for c in args.concurrency}
            lmeval: list = []
            there = None
            for r in range(args.rounds):
                t0 = time.perf_counter()
                work_done.update(padded_tokens=0, forward_passes=0, forward_s=0.0)
                here = scores(smollm, f"inproc{r}")
                dt = time.perf_counter() - t0
                inproc.append({"seconds": dt, "pairs_per_s": n / dt, "load_average": os.getloadavg()[0],
                               "B": float(summarize(here, "attribution")["score"].iloc[0]), **work_done})
                print("in-process", inproc[-1], flush=True)
                for c in args.concurrency:
                    server.stats(reset=True)
                    t0, c0 = time.perf_counter(), cpu.read()
                    lm = load_served("served:" + server.url, concurrency=c)
                    there = scores(lm, f"served{c}-{r}")
                    dt, used = time.perf_counter() - t0, cpu.since(c0, n)
                    lm.client.close()
                    seen = server.stats()
                    served[str(c)].append({"seconds": dt, "pairs_per_s": n / dt, "load_average": os.getloadavg()[0],
                                           **used, "over_in_process": inproc[-1]["seconds"] / dt,
                                           "prompts_per_pair": seen["prompts"] / n,
                                           "tokenize_calls_per_pair": seen["tokenize"] / n,
                                           "requests_per_pair": seen["completions"] / n,
                                           "padded_tokens": seen["padded_tokens"],
                                           "forward_passes": seen["forward_passes"], "forward_s": seen["forward_s"],
                                           **agreement(here, there)})
                    print("served", c, served[str(c)][-1], flush=True)
                if args.no_lmeval:
                    continue
                client = LocalCompletionsAPI(base_url=server.url + "/completions", model=lm.client.model,
                                             tokenizer=str(folder), tokenizer_backend="huggingface",
                                             tokenized_requests=True, num_concurrent=1, max_length=2048)
                server.stats(reset=True)
                t0, c0 = time.perf_counter(), cpu.read()
                per_pair, results = run_lmeval_crows(folder, pairs, work / f"lmeval{r}", per_type=False, lm=client)
                dt, used = time.perf_counter() - t0, cpu.since(c0, n)
                seen = server.stats()
                d_ll = np.concatenate([np.abs(per_pair[c].to_numpy(float) - there[c].to_numpy(float))
                                       for c in ("ll_more", "ll_less")])
                lmeval.append({"seconds": dt, "pairs_per_s": n / dt, "load_average": os.getloadavg()[0], **used,
                               "prompts_per_pair": seen["prompts"] / n, "requests_per_pair": seen["completions"] / n,
                               "num_concurrent": 1, "pct_stereotype": float(results["local_all"]["pct_stereotype"]),
                               "prefix_token_id": results["prefix_token_id"],
                               "max_abs_dll_vs_ours_served": float(np.nanmax(d_ll))})
                print("lm-eval", lmeval[-1], flush=True)
        finally:
            server.kill()
    out["in_process"] = _median_run(inproc)
    out["in_process_rounds"] = inproc
    out["served"] = {c: _median_run(runs) for c, runs in served.items()}
    out["served_rounds"] = served
    out["served_over_in_process"] = {c: statistics.median(r["over_in_process"] for r in runs)
                                     for c, runs in served.items()}
    out["uptime_end"] = _uptime()
    if lmeval:
        out["lmeval_local_completions"] = _median_run(lmeval)
        out["lmeval_rounds"] = lmeval
        base = out["lmeval_local_completions"]["pairs_per_s"]
        out["speedup_vs_lmeval"] = {c: r["pairs_per_s"] / base for c, r in out["served"].items()}
        theirs = out["lmeval_local_completions"]["server_cpu_ms_per_pair"]
        out["server_cpu_lmeval_over_ours"] = {c: theirs / r["server_cpu_ms_per_pair"]
                                              for c, r in out["served"].items()}
    stem = "served_compare" + (f"_threads{args.server_threads}" if args.server_threads > 1 else "") + \
        ("" if bench == BENCH else f"_{bench}") + ("" if lmeval else "_no_lmeval") + \
        ("_float32_softmax" if args.server_float32_softmax else "")
    (res / f"{stem}.json").write_text(json.dumps(out, indent=2) + "\n")
    (res / f"{stem}.md").write_text(report(out))


def _count_batches() -> dict:
    """The in-process engine's forward batches and their tokens with padding, counted from here on (the reference
    server counts its own: ``/reference/stats``), so the two runs' work compares whatever the machine's load."""
    from biascore.models import lm_scoring

    done, plain, forward = {"padded_tokens": 0, "forward_passes": 0, "forward_s": 0.0}, lm_scoring._batches, \
        lm_scoring._launch_gold_logprobs

    def counted(lengths, plan, *args, **kwargs):
        out = plain(lengths, plan, *args, **kwargs)
        done["padded_tokens"] += sum(len(b) * max(int(lengths[i]) for i in b) for b in out)
        done["forward_passes"] += len(out)
        return out

    def timed(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return forward(*args, **kwargs)
        finally:
            done["forward_s"] += time.perf_counter() - t0

    lm_scoring._batches, lm_scoring._launch_gold_logprobs = counted, timed
    return done


class _CpuClock:
    """CPU seconds (user + system, every thread) of this process and of the server process."""

    def __init__(self, server_pid: int):
        import psutil

        self._me, self._server = psutil.Process(), psutil.Process(server_pid)

    def read(self) -> tuple[float, float]:
        return tuple(sum(p.cpu_times()[:2]) for p in (self._me, self._server))

    def since(self, start: tuple[float, float], pairs: int) -> dict:
        now = self.read()
        return {"client_cpu_ms_per_pair": 1e3 * (now[0] - start[0]) / pairs,
                "server_cpu_ms_per_pair": 1e3 * (now[1] - start[1]) / pairs}


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def _uptime() -> str:
    try:
        import subprocess

        return subprocess.run(["uptime"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"load average {os.getloadavg()}"


def _median_run(runs: list[dict]) -> dict:
    """The run with the median pairs/s (the lower middle one of an even number), with every round's pairs/s."""
    ranked = sorted(runs, key=lambda r: r["pairs_per_s"])
    return {**ranked[(len(ranked) - 1) // 2], "pairs_per_s_rounds": [r["pairs_per_s"] for r in runs],
            "pairs_per_s_median": statistics.median(r["pairs_per_s"] for r in runs)}


def _cpu(run: dict) -> str:
    if "server_cpu_ms_per_pair" not in run:
        return "–"
    return f"{run['client_cpu_ms_per_pair']:.1f} / {run['server_cpu_ms_per_pair']:.1f}"


def report(out: dict) -> str:
    ip = out["in_process"]
    with_lmeval = "lmeval_local_completions" in out
    lines = [f"# Served vs in-process SmolLM2-135M, {out['benchmark']} ({out['pairs']} pairs, prefix {out['prefix']})",
             "", f"Machine: {out['machine']}, shared with other sessions: `{out['uptime_start']}` at the start, "
             f"`{out['uptime_end']}` at the end; load average beside each run. Server: tests/served_reference.py "
             f"(vLLM's protocol, SmolLM2 float32, log-probabilities {out.get('server_log_softmax', 'precise float32')}, "
             "the prompts of concurrent requests batched) on "
             f"{out.get('server_threads', 1)} torch thread(s), in-process on {out.get('in_process_threads', '?')}. "
             f"In-process, ours served{' and lm-eval' if with_lmeval else ''} alternate, {out['rounds']} rounds; each "
             "row is the median round (of two, the slower). Command: "
             "`python bench/served_compare.py" + (f" --limit {out['limit']}" if out.get("limit") else "")
             + ("" if out["benchmark"] == BENCH else f" --benchmark {out['benchmark']}")
             + f" --concurrency {' '.join(out['served'])} --rounds {out['rounds']}"
             + f" --server-threads {out.get('server_threads', 1)}" + ("" if with_lmeval else " --no-lmeval")
             + (" --server-float32-softmax" if out.get("server_log_softmax", "").endswith("(as vLLM)") else "")
             + "`. Prompts/pair: completions prompts (proofs and the connection's probes included); /tokenize calls "
             "per pair beside them. CPU ms/pair: of the client process (ours or lm-eval's) / of the server process, "
             "per pair, load and conformance check included. Padded tokens / forward passes / their s: the model's "
             "work in the median round (in-process: the engine's batches; served: the server's, connection included) "
             "and the seconds its forward passes took (what is left of the run's time is outside the model).", "",
             "| run | s | pairs/s (each round) | over in-process (median of rounds) | load | prompts/pair | /tokenize "
             "per pair | requests/pair | max abs Δlog P | max abs ΔS_JSD | S_JSD flips | PLL flips | max abs Δll | "
             "in contract | B | CPU ms/pair client / server | padded tokens / forward passes / their s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
             f"| in-process float32 | {ip['seconds']:.1f} | {ip['pairs_per_s']:.2f} ({_rounds(ip)}) | – | "
             f"{ip['load_average']:.1f} | – | – | – | – | – | – | – | – | – | {ip['B']:.2f} | – | "
             f"{_work(ip)} |"]
    for c, r in out["served"].items():
        lines.append(f"| ours served, {c} concurrent | {r['seconds']:.1f} | {r['pairs_per_s']:.2f} ({_rounds(r)}) | "
                     f"{100 * out['served_over_in_process'][c]:.0f} % | {r['load_average']:.1f} | "
                     f"{r['prompts_per_pair']:.2f} | {r.get('tokenize_calls_per_pair', float('nan')):.2f} | "
                     f"{r['requests_per_pair']:.2f} | {r['max_abs_dlogp']:.2g} | {r['max_abs_dsjsd']:.2g} | "
                     f"{r['sjsd_flips']} | {r['pll_flips']} | {r['max_abs_dll']:.2g} | {r['within_contract']} | "
                     f"{r['B']:.2f} | {_cpu(r)} | {_work(r)} |")
    if not with_lmeval:
        return "\n".join(lines) + "\n"
    lm = out["lmeval_local_completions"]
    lines.append(f"| lm-eval 0.4.13 local-completions, 1 at a time | {lm['seconds']:.1f} | {lm['pairs_per_s']:.2f} "
                 f"({_rounds(lm)}) | – | {lm['load_average']:.1f} | {lm['prompts_per_pair']:.2f} | – | "
                 f"{lm['requests_per_pair']:.2f} | – | – | – | – | {lm['max_abs_dll_vs_ours_served']:.2g} (vs ours "
                 f"served) | – | – | {_cpu(lm)} | – |")
    speed = ", ".join(f"{c} concurrent: {x:.1f}×" for c, x in out["speedup_vs_lmeval"].items())
    last = out["served"][max(out["served"], key=int)]
    cpu = ", ".join(f"{c} concurrent: {x:.2f}×" for c, x in out.get("server_cpu_lmeval_over_ours", {}).items())
    lines += ["", f"Ours served vs lm-eval's sequential client, pairs/s of the rows above: {speed}.",
              f"Server CPU seconds per pair, lm-eval's over ours (what batching saves the server): {cpu}.",
              f"pct_stereotype: lm-eval {100 * lm['pct_stereotype']:.2f} (prefix id {lm['prefix_token_id']}), ours "
              f"served (lm-eval-compatible score) {last['lmeval_pct_stereotype']:.2f}, in-process B {ip['B']:.2f}, "
              f"ours served B {last['B']:.2f}."]
    return "\n".join(lines) + "\n"


def _work(run: dict) -> str:
    if "padded_tokens" not in run:
        return "–"
    return f"{run['padded_tokens']:,} / {run['forward_passes']}" + (f" / {run['forward_s']:.1f}" if "forward_s" in run
                                                                   else "")


def _rounds(run: dict) -> str:
    return ", ".join(f"{x:.2f}" for x in run["pairs_per_s_rounds"])


if __name__ == "__main__":
    main()
