"""Load test (a benchmark, not a test): N people on one workshop dashboard at the same moment.

One command (results in bench/results/load_test.json and .md)::

    BIASCORE_DATA_DIR=/path/to/data .venv/bin/python bench/load_test.py --users 1 10 30

For each N: a fresh ``streamlit run app.py`` on 127.0.0.1 (its own cache with the demo benchmark scored, so
Token attributions has a run to show; ``BIASCORE_TORCH_THREADS=1``, the dashboard's default), warmed up by
one person alone (the model loads once per process, as on a workshop server opened before the session);
then N Playwright contexts in Debian's Chromium, one per person, go through three phases together, each
released for all N at once (a barrier):

* **A** open Token attributions (demo benchmark, default model): a page that reads a cached run;
* **B** go to Try a pair in the same session (the menu link);
* **C** type a different real CrowS-Pairs minimal pair into both boxes and press Enter — in the first box
  for even-numbered people, in the second for odd ones (the form sends both sentences either way) — and
  wait for the score. From Enter until S_JSD is on the page is the *time to score*; the page is looked at
  every 0.1 s (one script evaluation in the page) for the score, visible progress and error boxes.

The browsers and this driver run in a child process at ``nice -n 19`` (``--nice``), so the server gets the
cores first and the figures are about the server. The server's CPU time (psutil: user + system of the
streamlit process) is read at every barrier: **server CPU-seconds per person** for each phase.

A person counts as failed (``errors``) on: an exception or error box; no score within ``--timeout``; a score
different from :func:`biascore.methods.attribution.scorer.score_pair` of the same model here, alone
(5 decimals, as the page shows it); more than ``--max-blind`` seconds after Enter in which the page showed
neither the score nor visible progress (a "⏳ …" line, a spinner or a progress bar). The exit status is 0
only when every person of every N passed. The load average (``/proc/loadavg``) is recorded before and after
each N: on a shared machine wall-clock figures depend on it.
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

from dashboard_server import CHROMIUM, dashboard_process  # noqa: E402  (the e2e tests' server start)

sys.path.insert(0, str(REPO / "bench"))
from report_lines import error_sections  # noqa: E402

LAUNCH_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               "--disable-dev-shm-usage"]
MODEL = "smollm2-135m"
PAIR_SOURCE = "crows-en"
PHASES = ("A", "B", "C")
PHASE_NAMES = {"A": "open Token attributions", "B": "open Try a pair", "C": "type a pair, get the score"}

#: one look at a page: the score shown, visible progress, error boxes (one evaluate per poll, cheap)
PAGE_STATE_JS = """() => {
  const metric = document.querySelector('[data-testid="stMetricValue"]');
  const busy = document.querySelector('[data-testid="stSpinner"], [data-testid="stProgress"]') !== null ||
    [...document.querySelectorAll('[data-testid="stCaptionContainer"], [data-testid="stMarkdownContainer"]')]
      .some(e => e.innerText.includes('\u23f3'));
  const errors = [...document.querySelectorAll('[data-testid="stException"], [data-testid="stAlertContentError"]')]
    .map(e => e.innerText.replace(/\\s+/g, ' ').slice(0, 300));
  const app = document.querySelector('[data-testid="stApp"]');
  const state = app ? app.getAttribute('data-test-script-state') : null;
  const running = state === null || ['initial', 'running', 'rerunRequested'].includes(state);
  const scored = [...document.querySelectorAll('[data-testid="stCaptionContainer"]')]
    .map(e => e.innerText.trim()).find(t => t.startsWith('Scored with'));
  const took = scored ? scored.match(/ in ([0-9.]+) s\.$/) : null;
  return {score: metric ? metric.innerText.trim() : null, progress: busy, errors: errors, running: running,
          server_s: took ? parseFloat(took[1]) : null};
}"""


# =========================================================================== inputs and expected numbers
def live_pairs(n: int, source: str = PAIR_SOURCE) -> list[tuple[str, str]]:
    """``n`` different real minimal pairs (of ``source``, CrowS-Pairs by default, in file order) that Try a pair
    accepts; never the demo pair that Try a pair scores on every first visit (the server remembers it: typing it
    would measure no forward pass)."""
    from biascore.inputs.datasets import load_benchmark
    from biascore.review.minimal_pair import check_pair

    demo = load_benchmark("demo").frame
    first_visit = (demo.sent_more.iloc[0], demo.sent_less.iloc[0])
    frame = load_benchmark(source).frame
    out: list[tuple[str, str]] = [first_visit]
    for more, less in zip(frame.sent_more, frame.sent_less):
        if len(more) <= 300 and len(less) <= 300 and check_pair(more, less).minimal and (more, less) not in out:
            out.append((more, less))
        if len(out) == n + 1:
            return out[1:]
    raise SystemExit(f"only {len(out) - 1} usable pairs in {source}")


def engine_scores(pairs: list[tuple[str, str]]) -> list[str]:
    """S_JSD of each pair from the engine, alone (as the CLI computes one pair), formatted as the page shows it."""
    from biascore.models.loading import load_model
    from biascore.methods.attribution.scorer import score_pair

    lm = load_model(MODEL)
    return [f"{score_pair(lm, more, less)['sjsd']:+.5f}" for more, less in pairs]


# =========================================================================== the browsers (child process)
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


class Person:
    """One browser context: one person going through the phases."""

    def __init__(self, browser, url: str, index: int, pair: list[str], expected: str, timeout: float,
                 max_blind: float):
        self.browser, self.url, self.index, self.pair, self.timeout = browser, url, index, pair, timeout
        self.max_blind = max_blind
        self.page = None
        self.result = {"user": index, "errors": [], "token_page_s": None, "try_page_s": None,
                       "time_to_score_s": None, "server_time_to_score_s": None,
                       "longest_blind_s": None, "shown": None, "expected": expected}

    def fail(self, where: str, exc: BaseException) -> None:
        self.result["errors"].append(f"{where}: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:300]}")

    async def boxes(self, where: str) -> None:
        state = await self.page.evaluate(PAGE_STATE_JS)
        self.result["errors"] += [f"{where}: {e}" for e in state["errors"]]

    async def start(self) -> None:
        context = await self.browser.new_context(viewport={"width": 1400, "height": 2000})
        context.set_default_timeout(self.timeout * 1000)  # clicks and fills wait as long as any other step
        self.page = await context.new_page()

    async def phase_A(self) -> None:
        """Open Token attributions (a cached run)."""
        t0 = time.perf_counter()
        try:
            await self.page.goto(f"{self.url}/token_attributions?benchmark=demo&model={MODEL}",
                                 wait_until="domcontentloaded")
            await self.page.locator('[data-testid="stApp"]').wait_for()
            await wait_idle(self.page, self.timeout)
            await self.page.locator("h3", has_text="Pair ").first.wait_for()
            self.result["token_page_s"] = time.perf_counter() - t0
            await self.boxes("token attributions")
        except Exception as exc:  # a timeout or a closed page is an error of this person, not of the run
            self.fail("token attributions", exc)

    async def phase_B(self) -> None:
        """Go to Try a pair through the menu."""
        t0 = time.perf_counter()
        try:
            await self.page.locator('[data-testid="stSidebarNav"] a', has_text="Try a pair").first.click()
            await self.page.get_by_label("More-biased sentence").wait_for()
            await wait_idle(self.page, self.timeout)
            self.result["try_page_s"] = time.perf_counter() - t0
            await self.boxes("try a pair (opened)")
        except Exception as exc:  # noqa: BLE001
            self.fail("try a pair (open)", exc)

    async def phase_C(self) -> None:
        """Type both sentences, press Enter in one box, watch the page until the score is there."""
        r = self.result
        try:
            more = self.page.get_by_label("More-biased sentence")
            less = self.page.get_by_label("Less-biased sentence")
            await more.fill(self.pair[0])
            await less.fill(self.pair[1])
            before = (await self.page.evaluate(PAGE_STATE_JS))["score"]  # the demo pair a first visit shows
            t1 = time.perf_counter()
            await (more if self.index % 2 == 0 else less).press("Enter")
            last_seen, longest, state, idle_since, ran = t1, 0.0, None, None, False
            while time.perf_counter() - t1 < self.timeout:
                state = await self.page.evaluate(PAGE_STATE_JS)
                now = time.perf_counter()
                ran = ran or state["running"]
                # this pair's score: a new number, or the same one once the run this Enter started has ended
                fresh = state["score"] is not None and (state["score"] != before or (ran and not state["running"]))
                if fresh or state["errors"]:
                    break
                if state["progress"]:
                    last_seen = now
                longest = max(longest, now - last_seen)
                idle_since = None if state["running"] else (idle_since or now)
                if longest > self.max_blind and idle_since is not None and now - idle_since > 2.0:
                    break  # finished running, nothing on the page says anything is happening: no score will come
                await asyncio.sleep(0.1)
            r["longest_blind_s"] = longest  # unrounded: the loop's rule and judge's must see the same number
            if state is not None and state["score"] is not None:
                r["time_to_score_s"] = time.perf_counter() - t1
                r["shown"] = state["score"]
            else:  # what the person saw instead (for the report)
                main = await self.page.locator('[data-testid="stMain"]').inner_text()
                r["page_text"] = " ".join(main.split())[-600:]
                status = self.page.locator('[data-testid="stStatusWidget"]')
                r["status_widget"] = (await status.inner_text()).strip() if await status.count() else ""
            await wait_idle(self.page, self.timeout)
            state = await self.page.evaluate(PAGE_STATE_JS)
            r["server_time_to_score_s"] = state["server_s"]  # the page's own "Scored … in T s": queue + compute
            await self.boxes("try a pair")
        except Exception as exc:  # noqa: BLE001
            self.fail("try a pair", exc)
        judge(r, self.max_blind)


async def try_pairs(url: str, pairs: list[list[str]], expected: list[str], *, timeout: float = 120,
                    max_blind: float = 5.0) -> list[dict]:
    """One person per pair, one after the other: open the dashboard, go to Try a pair, type the pair, press
    Enter, judged by the load test's rule (:func:`judge`). For checking the harness on a running server."""
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            out = []
            for i, (pair, exp) in enumerate(zip(pairs, expected)):
                person = Person(browser, url, i, pair, exp, timeout, max_blind)
                await person.start()
                await person.page.goto(url, wait_until="domcontentloaded")
                await wait_idle(person.page, timeout)
                await person.phase_B()
                await person.phase_C()
                out.append(person.result)
            return out
        finally:
            await browser.close()


def judge(result: dict, max_blind: float) -> dict:
    """Add to ``result["errors"]`` what makes this person's try fail: no score, a wrong score, too long
    without visible progress (the load test's own rule; tests/views/test_e2e_browser.py checks it on a real page)."""
    if result["shown"] is None:
        result["errors"].append("try a pair: no score shown")
    elif result["shown"] != result["expected"]:
        result["errors"].append(f"try a pair: shows S_JSD {result['shown']}, the engine gives {result['expected']}")
    if result["longest_blind_s"] is not None and result["longest_blind_s"] > max_blind:
        result["errors"].append(f"try a pair: {result['longest_blind_s']:.2f} s without visible progress or score "
                                f"(more than {max_blind:g} s)")
    return result


async def barrier(phase: str) -> None:
    """Tell the parent that every person is ready for ``phase``; wait until it says go."""
    print(json.dumps({"ready": phase}), flush=True)
    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    if line.strip() != "go":
        raise SystemExit("the parent stopped the run")


async def drive(spec: dict) -> list[dict]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=LAUNCH_ARGS)
        try:
            people = [Person(browser, spec["url"], i, pair, exp, spec["timeout"], spec["max_blind"])
                      for i, (pair, exp) in enumerate(zip(spec["pairs"], spec["expected"]))]
            await asyncio.gather(*[p.start() for p in people])
            walls = {}
            for phase in PHASES:
                await barrier(phase)
                t0 = time.perf_counter()
                await asyncio.gather(*[getattr(p, f"phase_{phase}")() for p in people])
                walls[phase] = round(time.perf_counter() - t0, 2)
            print(json.dumps({"done": True, "walls": walls}), flush=True)
            return [p.result for p in people]
        finally:
            await browser.close()


def child_main(spec_path: str, out_path: str) -> int:
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    results = asyncio.run(drive(spec))
    Path(out_path).write_text(json.dumps(results, ensure_ascii=False), encoding="utf-8")
    return 0


# =========================================================================== the parent: server, CPU, report
def server_cpu(proc) -> tuple[float, float]:
    """(all threads, the main thread = the event loop serving HTTP and websockets) CPU-seconds of the server."""
    import psutil

    p = psutil.Process(proc.pid)
    t = p.cpu_times()
    main = next((th.user_time + th.system_time for th in p.threads() if th.id == proc.pid), 0.0)
    return t.user + t.system, main


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def run_people(url: str, proc, pairs: list[tuple[str, str]], expected: list[str], args, tmp: Path,
               tag: str) -> tuple[list[dict], dict, dict]:
    """The child process at low priority, released phase by phase; (per-person results, CPU-s per phase,
    wall seconds per phase)."""
    spec = tmp / f"spec_{tag}.json"
    out = tmp / f"people_{tag}.json"
    spec.write_text(json.dumps({"url": url, "pairs": pairs, "expected": expected, "timeout": args.timeout,
                                "max_blind": args.max_blind}, ensure_ascii=False), encoding="utf-8")
    argv = ["nice", "-n", str(args.nice), sys.executable, str(Path(__file__).resolve()), "--drive", str(spec),
            "--drive-out", str(out)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    cpu: dict[str, float] = {}
    walls: dict = {}
    try:
        marks = []
        for line in child.stdout:
            if not line.startswith("{"):  # anything else a library prints
                continue
            msg = json.loads(line)
            marks.append(server_cpu(proc))
            if "done" in msg:
                walls = msg["walls"]
                break
            child.stdin.write("go\n")
            child.stdin.flush()
        if child.wait() != 0 or not out.exists():
            raise RuntimeError(f"the browser process failed (exit {child.returncode})")
        cpu = {phase: round(b[0] - a[0], 3) for phase, a, b in zip(PHASES, marks, marks[1:])}
        cpu.update({f"{phase}_event_loop": round(b[1] - a[1], 3) for phase, a, b in zip(PHASES, marks, marks[1:])})
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    return json.loads(out.read_text(encoding="utf-8")), cpu, walls


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def summarise(n: int, people: list[dict], cpu: dict, walls: dict) -> dict:
    def stats(key: str) -> dict:
        values = [p[key] for p in people if p[key] is not None]
        return {"p50": rnd(percentile(values, 0.5)), "p95": rnd(percentile(values, 0.95)),
                "max": rnd(max(values) if values else None)}

    return {
        "users": n, "errors": sum(len(p["errors"]) for p in people),
        "users_with_errors": sum(1 for p in people if p["errors"]),
        "scores_shown": sum(1 for p in people if p["shown"] is not None),
        "numbers_equal_engine": sum(1 for p in people if p["shown"] is not None and p["shown"] == p["expected"]),
        "time_to_score_s": stats("time_to_score_s"),
        "server_time_to_score_s": stats("server_time_to_score_s"), "longest_blind_s": stats("longest_blind_s"),
        "token_page_s": stats("token_page_s"), "try_page_s": stats("try_page_s"),
        "server_cpu_s": cpu, "server_cpu_s_per_person": {k: round(v / n, 3) for k, v in cpu.items()},
        "phase_wall_s": walls,
        "error_samples": [e for p in people for e in p["errors"]][:10],
        "per_user": people,
    }


def rnd(x: float | None) -> float | None:
    return None if x is None else round(x, 2)


def markdown(report: dict) -> str:
    lines = [f"# Load test: N people on one dashboard ({report['date']})", "",
             f"`{report['command']}` — commit `{report['commit']}`, {report['machine']}; browsers at nice "
             f"{report['nice']}. Phases for all N at once: **A** open Token attributions (demo, `{MODEL}`), "
             f"**B** open Try a pair, **C** type a different CrowS-Pairs pair and press Enter. A person fails on an "
             f"error box, no score, a score other than `score_pair`'s, or more than {report['max_blind']:g} s without "
             "visible progress. *In the server*: the page's own \"Scored … in T s\" (from the rerun reaching the pair "
             "to its score: the live queue's wait and the forward passes). Server CPU = user + system seconds of the "
             "streamlit process (psutil) per phase, divided by N.", "",
             "| N | load avg before → after | errors (people) | scores shown | equal to engine | time to score "
             "p50 / p95 / max (s) | of it in the server p50 / p95 (s) | longest blind p95 (s) | server CPU-s per person: C (B+C) [A] | Token "
             "attributions p50 / p95 (s) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        t, tok, cpu = r["time_to_score_s"], r["token_page_s"], r["server_cpu_s_per_person"]
        srv = r.get("server_time_to_score_s") or {}
        bc = round(cpu.get("B", 0) + cpu.get("C", 0), 3)
        lines.append(f"| {r['users']} | {r['load_before'][0]} → {r['load_after'][0]} | {r['errors']} "
                     f"({r['users_with_errors']}) | {r['scores_shown']}/{r['users']} | "
                     f"{r['numbers_equal_engine']}/{r['users']} | {t['p50']} / {t['p95']} / {t['max']} | "
                     f"{srv.get('p50')} / {srv.get('p95')} | "
                     f"{r['longest_blind_s']['p95']} | {cpu.get('C')} ({bc}) [{cpu.get('A')}] | "
                     f"{tok['p50']} / {tok['p95']} |")
    lines += error_sections(report["runs"])
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, nargs="+", default=[1, 10, 30])
    ap.add_argument("--timeout", type=float, default=300, help="seconds a person waits for any one step")
    ap.add_argument("--max-blind", type=float, default=5.0,
                    help="most seconds after Enter a page may show neither progress nor the score")
    ap.add_argument("--nice", type=int, default=19, help="niceness of the browsers (and of this driver)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "load_test.json"))
    ap.add_argument("--drive", help=argparse.SUPPRESS)  # internal: the child process that drives the browsers
    ap.add_argument("--drive-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:
        return child_main(args.drive, args.drive_out)
    if not Path(CHROMIUM).exists():
        raise SystemExit(f"Chromium not found at {CHROMIUM}")
    # a `kill` (SIGTERM) unwinds like Ctrl-C, so the server, the browser and the temporary cache are cleaned up
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    import torch

    torch.set_num_threads(1)
    pairs = live_pairs(max(args.users) + 1)  # the last one warms the server up
    expected = engine_scores(pairs)
    runs = []
    with tempfile.TemporaryDirectory(prefix="biascore-load-") as tmp_name:
        tmp = Path(tmp_name)
        cache = tmp / "cache"
        cache.mkdir()
        models = REPO / "cache" / "models"  # converted GGUF models are reused, as the test suite does
        models.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to(models, target_is_directory=True)
        os.environ["BIASCORE_CACHE_DIR"] = str(cache)
        from biascore.models.loading import load_model
        from biascore.runs import runner
        from biascore.methods import get

        runner.run(get("attribution"), load_model(MODEL), "demo")  # Token attributions needs a cached run to show
        for n in args.users:
            log_dir = tmp / f"server_{n}"  # a fresh server (and model load) per N
            log_dir.mkdir()
            with dashboard_process(log_dir / "streamlit.log", drop_env=("BIASCORE_RAISE_PAGE_ERRORS",),
                                   BIASCORE_CACHE_DIR=str(cache), BIASCORE_TORCH_THREADS="1",
                                   BIASCORE_REVIEW_DB=str(cache / "reviews.sqlite")) as (url, proc):
                # one person first, alone: the server loads the model once (st.cache_resource)
                warm, warm_cpu, _ = run_people(url, proc, pairs[-1:], expected[-1:], args, tmp, f"warm{n}")
                before = loadavg()
                t0 = time.perf_counter()
                people, cpu, walls = run_people(url, proc, pairs[:n], expected[:n], args, tmp, f"n{n}")
                r = summarise(n, people, cpu, walls)
                r["wall_s"] = round(time.perf_counter() - t0, 1)
                r["load_before"], r["load_after"] = before, loadavg()
                r["warmup"] = {k: warm[0][k] for k in ("errors", "token_page_s", "time_to_score_s")}
                r["warmup"]["server_cpu_s"] = warm_cpu
                r["errors"] += len(warm[0]["errors"])  # a failed warm-up counts too
                r["error_samples"][:0] = [f"warm-up: {e}" for e in warm[0]["errors"]]
            log = (log_dir / "streamlit.log").read_text(errors="replace")
            r["server_log_errors"] = [line[:300] for line in log.splitlines()
                                      if "Error" in line or "Traceback" in line][:20]
            r["server_log_tail"] = [line[:300] for line in log.splitlines()[-20:]]
            runs.append(r)
            for sample in r["error_samples"]:
                print(f"  error: {sample}", flush=True)
            cpu = r["server_cpu_s_per_person"]
            print(f"N={n}: errors {r['errors']} ({r['users_with_errors']} people), scores shown {r['scores_shown']}/{n}, "
                  f"equal to engine {r['numbers_equal_engine']}/{n}, time to score p50 {r['time_to_score_s']['p50']} s "
                  f"p95 {r['time_to_score_s']['p95']} s, server CPU-s per person: C {cpu.get('C')}, B {cpu.get('B')}, "
                  f"A {cpu.get('A')} (the event loop's part: C {cpu.get('C_event_loop')}, B {cpu.get('B_event_loop')}, "
                  f"A {cpu.get('A_event_loop')}); load average {r['load_before']} -> {r['load_after']}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "command": "python bench/load_test.py --users " + " ".join(map(str, args.users)),
              "machine": f"{os.cpu_count()} CPU cores ({platform.machine()}, {platform.processor() or 'cpu'})",
              "model": MODEL, "nice": args.nice, "max_blind": args.max_blind, "runs": runs}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(f"wrote {out} and {out.with_suffix('.md')}")
    return 0 if all(r["errors"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
