"""Served vs in-process SmolLM2-135M on crows-en-gso through the reference server (tests/served_reference.py: vLLM's
completions protocol, SmolLM2 in float32, batching concurrent requests into one forward pass).

Measures, each run in a fresh cache, all with the lm-eval prefix convention (<|im_start|>, what lm-eval's own
clients put in front):

* in-process float32 (the attribution method through the runner, on the loaded model): time, pairs/s;
* served at 1, 4 and 16 concurrent requests (``served:http://127.0.0.1:PORT/v1``): pairs/s (load, conformance
  check and fingerprint included), and against in-process: max |Δ log P(u)|, max |Δ S_JSD|, S_JSD and PLL verdict
  flips, max |Δ ll| of the lm-eval-compatible whole-sentence log-likelihood, within the contract or not;
* lm-evaluation-harness 0.4.13's ``local-completions`` client (one request at a time, ``num_concurrent=1``) on the
  same server with its own ``crows_pairs_english`` task: pairs/s, pct_stereotype, and its per-pair ll against ours.

Writes bench/results/served_compare.json and .md.

    BIASCORE_DATA_DIR=../shared/data python bench/served_compare.py [--limit N]
"""
from __future__ import annotations

import json
import os
import platform
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
CONCURRENCY = (1, 4, 16)


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

    ap = argparse.ArgumentParser(description="served vs in-process SmolLM2 on crows-en-gso")
    ap.add_argument("--limit", type=int, default=None, help="the first N pairs only (default: all 231)")
    ap.add_argument("--concurrency", type=int, nargs="*", default=list(CONCURRENCY), help="served runs to make")
    ap.add_argument("--keep", action="store_true", help="keep the runs already in bench/results/served_compare.json "
                    "(same --limit) and skip the in-process run when it is there")
    args = ap.parse_args()
    limit = args.limit
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
    old = json.loads((res / "served_compare.json").read_text()) if args.keep else {}
    out: dict = {"benchmark": BENCH, "prefix": PREFIX, "machine": f"{platform.machine()}, {os.cpu_count()} CPUs",
                 "load_average_start": os.getloadavg()[0]}
    n = len(load_benchmark(BENCH).first(limit).frame) if limit else len(load_benchmark(BENCH).frame)
    out["pairs"], out["limit"] = n, limit
    if old.get("limit") == limit:
        out.update({k: old[k] for k in ("in_process", "served", "load_average_start") if k in old})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)

        def scores(lm, cache: str):  # the attribution frame through the runner, into a cache of its own
            return runner.run(get("attribution"), lm, BENCH, limit=limit, prefix=PREFIX,
                              cache=ResultCache(work / cache)).frame

        here = None
        if "in_process" not in out or args.concurrency:
            smollm = load_model("smollm2-135m", device="cpu")
            t0 = time.perf_counter()
            here = scores(smollm, "inproc")
            dt = time.perf_counter() - t0
            if "in_process" not in out:
                out["in_process"] = {"seconds": dt, "pairs_per_s": n / dt,
                                     "B": float(summarize(here, "attribution")["score"].iloc[0])}
            print("in-process", out["in_process"], flush=True)
        server = Process().start()
        try:
            out.setdefault("served", {})
            there = None
            for c in args.concurrency:
                t0 = time.perf_counter()
                lm = load_served("served:" + server.url, concurrency=c)
                there = scores(lm, f"served{c}")
                dt = time.perf_counter() - t0
                lm.client.close()
                out["served"][str(c)] = {"seconds": dt, "load_average": os.getloadavg()[0], "pairs_per_s": n / dt,
                                         **agreement(here, there)}
                print("served", c, out["served"][str(c)], flush=True)
            lm = load_served("served:" + server.url, concurrency=16)
            if there is None:  # ours through the server, for the per-pair comparison with lm-eval's client
                there = scores(lm, "served")
            from lm_eval.models.openai_completions import LocalCompletionsAPI

            folder = resolve_source("smollm2-135m").converted_folder
            client = LocalCompletionsAPI(base_url=server.url + "/completions", model=lm.client.model,
                                         tokenizer=str(folder), tokenizer_backend="huggingface",
                                         tokenized_requests=True, num_concurrent=1, max_length=2048)
            pairs = load_benchmark(BENCH).first(limit).frame if limit else load_benchmark(BENCH).frame
            t0 = time.perf_counter()
            per_pair, results = run_lmeval_crows(folder, pairs, work / "lmeval", per_type=False, lm=client)
            dt = time.perf_counter() - t0
            d_ll = np.concatenate([np.abs(per_pair[c].to_numpy(float) - there[c].to_numpy(float))
                                   for c in ("ll_more", "ll_less")])
            out["lmeval_local_completions"] = {
                "seconds": dt, "pairs_per_s": n / dt, "num_concurrent": 1,
                "pct_stereotype": float(results["local_all"]["pct_stereotype"]),
                "prefix_token_id": results["prefix_token_id"],
                "max_abs_dll_vs_ours_served": float(np.nanmax(d_ll))}
            print("lm-eval", out["lmeval_local_completions"], flush=True)
        finally:
            server.kill()
    (res / "served_compare.json").write_text(json.dumps(out, indent=2) + "\n")
    (res / "served_compare.md").write_text(report(out))


def report(out: dict) -> str:
    ip = out["in_process"]
    lines = [f"# Served vs in-process SmolLM2-135M, {out['benchmark']} ({out['pairs']} pairs, prefix {out['prefix']})",
             "", f"Machine: {out['machine']}, load average at start {out['load_average_start']:.2f} (shared by other "
             "sessions: times are indicative). Server: tests/served_reference.py (vLLM's protocol, SmolLM2 float32, "
             "1 torch thread, concurrent requests batched). Command: `python bench/served_compare.py" + (f" --limit {out['limit']}" if out.get("limit") else "") + "`.", "",
             "| run | s | pairs/s | max abs Δlog P | max rel Δlog P | max abs ΔS_JSD | S_JSD flips | PLL flips | "
             "max abs Δll | in contract | B |", "|---|---|---|---|---|---|---|---|---|---|---|",
             f"| in-process float32 | {ip['seconds']:.1f} | {ip['pairs_per_s']:.2f} | – | – | – | – | – | – | – | "
             f"{ip['B']:.2f} |"]
    for c, r in out.get("served", {}).items():
        lines.append(f"| served, {c} concurrent | {r['seconds']:.1f} | {r['pairs_per_s']:.2f} | {r['max_abs_dlogp']:.2g} "
                     f"| {r['max_rel_dlogp']:.2g} | {r['max_abs_dsjsd']:.2g} | {r['sjsd_flips']} | {r['pll_flips']} | "
                     f"{r['max_abs_dll']:.2g} | {r['within_contract']} | {r['B']:.2f} |")
    lm = out.get("lmeval_local_completions")
    if lm:
        lines += ["", f"lm-eval 0.4.13 `local-completions` (num_concurrent=1, token-id prompts, prefix id "
                  f"{lm['prefix_token_id']}) on the same server: {lm['seconds']:.1f} s, {lm['pairs_per_s']:.2f} pairs/s, "
                  f"pct_stereotype {100 * lm['pct_stereotype']:.2f}; its per-pair ll vs ours served: max abs diff "
                  f"{lm['max_abs_dll_vs_ours_served']:.2g}."]
        last = out["served"][max(out["served"], key=int)]
        lines.append(f"Ours served (lm-eval-compatible score): pct_stereotype {last['lmeval_pct_stereotype']:.2f}.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
