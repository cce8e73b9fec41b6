"""Load test (a benchmark, not a test): N people on one dashboard at the same moment.

A real ``streamlit run app.py`` on 127.0.0.1 (free port) and N Playwright browser contexts (Debian Chromium,
driven as tests/views/test_e2e_browser.py drives it), started together. Each context is one person: it opens
Token attributions (demo benchmark, default model), then goes to Try a pair in the same session and types a
different real minimal pair from CrowS-Pairs. Recorded per N:

* ``errors``: exception boxes, error boxes, pages that never showed a score, wrong numbers (must be 0);
* ``time_to_score_s``: from pressing Enter on Try a pair until its S_JSD is on the page (p50, p95, max);
* ``token_page_s``: from opening the Token attributions link until the page is idle (p50, p95);
* ``numbers_equal_engine``: the S_JSD shown equals :func:`biascore.methods.attribution.scorer.score_pair` of
  the same model in this process (to the 5 decimals the page shows) for every context.

Usage::

    BIASCORE_DATA_DIR=/work/shared/data python bench/load_test.py --users 1 10 30 \\
        [--out bench/results/load_test.json]

Each N gets a fresh server; one person alone warms it up first (the model loads once per process, as on a
workshop server that has been opened before the session starts), then the N people start at the same moment.
The server gets a fresh cache directory (the demo benchmark is scored into it first, so that Token
attributions has a run to show) and ``BIASCORE_TORCH_THREADS=1`` (the dashboard's default).
Results go to ``--out`` (JSON) and the same name with ``.md``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from dashboard_server import CHROMIUM, dashboard  # noqa: E402  (the e2e tests' server start)

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
MODEL = "smollm2-135m"
PAIR_SOURCE = "crows-en"


# --------------------------------------------------------------------------- inputs and expected numbers
def live_pairs(n: int) -> list[tuple[str, str]]:
    """``n`` different real minimal pairs (CrowS-Pairs, in file order) that Try a pair accepts."""
    from biascore.core.datasets import load_benchmark
    from biascore.review.minimal_pair import check_pair

    frame = load_benchmark(PAIR_SOURCE).frame
    out = []
    for more, less in zip(frame.sent_more, frame.sent_less):
        if len(more) <= 300 and len(less) <= 300 and check_pair(more, less).minimal and (more, less) not in out:
            out.append((more, less))
        if len(out) == n:
            return out
    raise SystemExit(f"only {len(out)} usable pairs in {PAIR_SOURCE}")


def engine_scores(pairs: list[tuple[str, str]]) -> list[str]:
    """S_JSD of each pair from the engine, formatted as the page shows it."""
    from biascore.core.models import load_model
    from biascore.methods.attribution.scorer import score_pair

    lm = load_model(MODEL)
    return [f"{score_pair(lm, more, less)['sjsd']:+.5f}" for more, less in pairs]


# --------------------------------------------------------------------------- one user
async def wait_idle(page, timeout: float) -> None:
    """Until the script has finished running and stayed finished for a second (as the e2e tests wait)."""
    deadline = time.monotonic() + timeout
    quiet_since = None
    while time.monotonic() < deadline:
        state = await page.locator('[data-testid="stApp"]').get_attribute("data-test-script-state")
        busy = (state in (None, "initial", "running", "rerunRequested")
                or await page.locator('[data-testid="stSpinner"]').count() > 0)
        if busy:
            quiet_since = None
        elif quiet_since is None:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > 1.0:
            return
        await asyncio.sleep(0.25)
    raise TimeoutError(f"the page kept running for {timeout:.0f} s")


async def page_errors(page) -> list[str]:
    boxes = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    return [" ".join((await boxes.nth(i).inner_text()).split())[:300] for i in range(await boxes.count())]


async def one_user(browser, url: str, index: int, pair: tuple[str, str], expected: str, timeout: float) -> dict:
    result = {"user": index, "errors": [], "token_page_s": None, "time_to_score_s": None, "shown": None,
              "expected": expected}
    context = await browser.new_context(viewport={"width": 1400, "height": 2000})
    context.set_default_timeout(timeout * 1000)  # clicks and fills wait as long as any other step
    page = await context.new_page()
    try:
        t0 = time.perf_counter()
        await page.goto(f"{url}/token_attributions?benchmark=demo&model={MODEL}", wait_until="domcontentloaded")
        await page.locator('[data-testid="stApp"]').wait_for(timeout=timeout * 1000)
        await wait_idle(page, timeout)
        await page.locator("h3", has_text="Pair ").first.wait_for(timeout=timeout * 1000)
        result["token_page_s"] = time.perf_counter() - t0
        result["errors"] += [f"token attributions: {e}" for e in await page_errors(page)]

        await page.locator('[data-testid="stSidebarNav"] a', has_text="Try a pair").first.click()
        await page.get_by_label("More-biased sentence").wait_for(timeout=timeout * 1000)
        await wait_idle(page, timeout)
        await page.get_by_label("More-biased sentence").fill(pair[0])
        await page.get_by_label("Less-biased sentence").fill(pair[1])
        t1 = time.perf_counter()
        await page.get_by_label("Less-biased sentence").press("Enter")
        metric = page.locator('[data-testid="stMetricValue"]').first
        errors = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if await metric.count() > 0 or await errors.count() > 0:
                break
            await asyncio.sleep(0.1)
        if await metric.count() > 0:
            result["time_to_score_s"] = time.perf_counter() - t1
            result["shown"] = (await metric.inner_text()).strip()
        await wait_idle(page, timeout)
        result["errors"] += [f"try a pair: {e}" for e in await page_errors(page)]
        if result["shown"] is None:
            result["errors"].append("try a pair: no score shown")
        elif result["shown"] != expected:
            result["errors"].append(f"try a pair: shows S_JSD {result['shown']}, the engine gives {expected}")
    except Exception as exc:  # a timeout or a closed page is an error of this user, not of the run
        result["errors"].append(f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}")
    finally:
        await context.close()
    return result


async def run_users(url: str, pairs: list[tuple[str, str]], expected: list[str], timeout: float) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            return await asyncio.gather(*[one_user(browser, url, i, pair, exp, timeout)
                                          for i, (pair, exp) in enumerate(zip(pairs, expected))])
        finally:
            await browser.close()


# --------------------------------------------------------------------------- report
def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summarise(n: int, users: list[dict], wall: float) -> dict:
    scored = [u["time_to_score_s"] for u in users if u["time_to_score_s"] is not None]
    token = [u["token_page_s"] for u in users if u["token_page_s"] is not None]
    rnd = lambda x: None if x is None else round(x, 2)  # noqa: E731
    return {
        "users": n, "errors": sum(len(u["errors"]) for u in users),
        "users_with_errors": sum(1 for u in users if u["errors"]),
        "scores_shown": len(scored),
        "numbers_equal_engine": sum(1 for u in users if u["shown"] is not None and u["shown"] == u["expected"]),
        "time_to_score_s": {"p50": rnd(percentile(scored, 0.5)), "p95": rnd(percentile(scored, 0.95)),
                            "max": rnd(max(scored) if scored else None)},
        "token_page_s": {"p50": rnd(percentile(token, 0.5)), "p95": rnd(percentile(token, 0.95))},
        "wall_s": round(wall, 1),
        "error_samples": [e for u in users for e in u["errors"]][:10],
        "per_user": users,
    }


def markdown(report: dict) -> str:
    lines = [f"# Load test: N people on one dashboard ({report['date']})", "",
             f"`{report['command']}` — commit `{report['commit']}`, {report['machine']}, load average before the "
             f"run {report['load_before']}. Each user opens Token attributions, then scores a different live "
             f"CrowS-Pairs pair on Try a pair with `{MODEL}`. Before each N, one person alone warms the fresh server "
             "up (model load); the N people then start at the same moment.", "",
             "| N | errors | users with errors | scores shown | equal to engine | time to score p50 / p95 / max (s) "
             "| Token attributions p50 / p95 (s) | wall (s) |", "|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        t, tok = r["time_to_score_s"], r["token_page_s"]
        lines.append(f"| {r['users']} | {r['errors']} | {r['users_with_errors']} | {r['scores_shown']}/{r['users']} | "
                     f"{r['numbers_equal_engine']}/{r['users']} | {t['p50']} / {t['p95']} / {t['max']} | "
                     f"{tok['p50']} / {tok['p95']} | {r['wall_s']} |")
    for r in report["runs"]:
        if r["error_samples"]:
            lines += ["", f"Errors at N = {r['users']} (first {len(r['error_samples'])}):", ""]
            lines += [f"- {e}" for e in r["error_samples"]]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, nargs="+", default=[1, 10, 30])
    ap.add_argument("--timeout", type=float, default=600, help="seconds a user waits for any one step")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "load_test.json"))
    args = ap.parse_args()
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM}")
    # a `kill` (SIGTERM) unwinds like Ctrl-C, so the server, the browser and the temporary cache are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import torch

    torch.set_num_threads(1)
    pairs = live_pairs(max(args.users) + 1)  # the last one warms the server up
    expected = engine_scores(pairs)
    load_before = os.getloadavg()
    runs = []
    with tempfile.TemporaryDirectory(prefix="biascore-load-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        models = REPO / "cache" / "models"  # converted GGUF models are reused, as the test suite does
        models.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to(models, target_is_directory=True)
        os.environ["BIASCORE_CACHE_DIR"] = str(cache)
        from biascore.core.models import load_model
        from biascore.methods.attribution.scorer import score_benchmark

        score_benchmark(load_model(MODEL), "demo")  # Token attributions needs a cached run to show
        for n in args.users:
            log_dir = Path(tmp) / f"server_{n}"  # a fresh server (and model load) per N
            log_dir.mkdir()
            with dashboard(log_dir / "streamlit.log", drop_env=("BIASCORE_RAISE_PAGE_ERRORS",), BIASCORE_CACHE_DIR=str(cache),
                           BIASCORE_TORCH_THREADS="1", BIASCORE_REVIEW_DB=str(cache / "reviews.sqlite")) as url:
                # one person first, alone: the server loads the model once (st.cache_resource)
                warmup = asyncio.run(run_users(url, pairs[-1:], expected[-1:], args.timeout))[0]
                t0 = time.perf_counter()
                users = asyncio.run(run_users(url, pairs[:n], expected[:n], args.timeout))
                runs.append(summarise(n, users, time.perf_counter() - t0))
                runs[-1]["warmup"] = {k: warmup[k] for k in ("errors", "token_page_s", "time_to_score_s")}
                runs[-1]["errors"] += len(warmup["errors"])  # a failed warm-up counts too
                runs[-1]["error_samples"][:0] = [f"warm-up: {e}" for e in warmup["errors"]]
            log = (log_dir / "streamlit.log").read_text(errors="replace")
            runs[-1]["server_log_errors"] = [line[:300] for line in log.splitlines()
                                             if "Error" in line or "Traceback" in line][:20]
            r = runs[-1]
            for sample in r["error_samples"]:
                print(f"  error: {sample}", flush=True)
            print(f"N={n}: errors {r['errors']} ({r['users_with_errors']} users), scores shown {r['scores_shown']}/{n}, "
                  f"equal to engine {r['numbers_equal_engine']}/{n}, time to score p50 {r['time_to_score_s']['p50']} s "
                  f"p95 {r['time_to_score_s']['p95']} s", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "command": "python bench/load_test.py --users " + " ".join(map(str, args.users)),
              "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}), shared", "model": MODEL,
              "load_before": [round(x, 2) for x in load_before], "runs": runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if all(r["errors"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
