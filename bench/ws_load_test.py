"""Workshop load test at the server: N simulated participants speaking Streamlit's own websocket protocol (Locust).

One command (results in bench/results/ws_load_test.json and .md)::

    BIASCORE_DATA_DIR=/path/to/data .venv/bin/python bench/ws_load_test.py --users 30 100 300

Each participant is a Locust ``User`` with one websocket (``websocket-client``) to ``/_stcore/stream`` — what a
browser tab holds — exchanging the protobuf messages of ``streamlit.proto``: it sends a ``BackMsg`` rerun for the
Try-a-pair page, reads the ``ForwardMsg`` deltas until ``script_finished`` (the page's widgets and their ids),
waits until every participant has the page open (a barrier), then sends the form as a browser does on Enter: one
rerun ``BackMsg`` whose widget states hold both sentences and the form's submit trigger. *Submit → score* is
from that send until the delta holding the S_JSD metric arrives. No browser, no drawing: a participant costs
the client a few milliseconds of CPU (reported), so the figures are the server's. Browsers stay for the
end-to-end checks (tests/views/test_e2e_*.py) and bench/load_test.py.

A participant fails (a Locust request failure, counted in ``errors``) on: no score within ``--timeout``; an
error or exception element in the page; a score that is not the engine's for that pair — computed in this
process, not by the server (:func:`expected_scores`) — at the page's 5 decimals (a shared live round may move
S_JSD by at most ``live.SJSD_TOLERANCE``; a shown value is accepted when it is the engine's value rounded, or
within that tolerance of it before rounding, and the exact string matches are counted separately). The exit
status is 0 only when every participant of every N passed.

One warm server for all N (``streamlit run app.py`` on 127.0.0.1, its own cache, the dashboard's defaults),
warmed by one participant (the model loads once, as on a server opened before the session); each N gets pairs
no earlier N sent (the live queue remembers recent pairs). The Locust process runs at ``nice -n 19``. Recorded
per N: the load average before and after (the machine may be shared), server CPU-seconds (``/proc/PID/stat``
utime + stime of the server process) per participant for the submit phase, and where the time went, from the
server's timing lines (``BIASCORE_TIMING_LOG``, biascore/runs/timing_log.py): Streamlit's hand-over to the page
script, the page up to the live queue, the queue's wait (of it, the gathering window), the forward passes of
the round, drawing, and delivery of the score to the participant.

**Against a served model** (``--served``; results in bench/results/ws_load_test_served.json and .md): the same
participants, with the model behind a completions server — the reference server of tests/served_reference.py
(vLLM's protocol, SmolLM2 in float32, its own process; ``--served-threads`` torch threads) started here, or a
running server given by ``--served-url http://HOST:PORT/v1[#NAME]`` (e.g. vLLM on a GPU box). The dashboard runs
in public mode with ``BIASCORE_MODELS=<label>=served:URL`` as its only model, so Try a pair scores through the
server: each live round goes out as concurrent requests (the served client's bounded pool). A shown score is
checked against the in-process engine's within the reproducibility contract's bound for that pair (mean β(u),
tests/reproducibility_contract.py) plus the live queue's tolerance; the reference server's own
counters (completions requests, most in flight at once, largest forward batch) are recorded per N.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests"))

from report_lines import error_sections  # noqa: E402

PAGE = "try_pair"
MORE_LABEL, LESS_LABEL, SUBMIT_LABEL = "More-biased sentence", "Less-biased sentence", "Score"
SCORE_LABEL = "S_JSD"  # the metric's label starts with it
SCORED_RE = re.compile(r"^Scored with .* in ([0-9.]+) s\.$")


# =========================================================================== the protocol (child process)
class StreamlitSession:
    """One browser tab's websocket to a Streamlit server: send rerun ``BackMsg``s, read ``ForwardMsg``s."""

    def __init__(self, url: str, timeout: float):
        import websocket

        self.ws = websocket.create_connection(url.replace("http", "ws", 1) + "/_stcore/stream",
                                              subprotocols=["streamlit"], timeout=timeout)
        self.timeout = timeout

    def rerun(self, widgets: list[tuple[str, str, object]] = ()) -> None:
        """A rerun of the page with these widget states (id, WidgetState field, value)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        msg = BackMsg()
        msg.rerun_script.page_name = PAGE
        for wid, field, value in widgets:
            state = msg.rerun_script.widget_states.widgets.add()
            state.id = wid
            setattr(state, field, value)
        self.ws.send_binary(msg.SerializeToString())

    def messages(self, deadline: float):
        """``ForwardMsg``s until ``deadline`` (monotonic); TimeoutError after it."""
        import websocket
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer before the deadline")
            self.ws.settimeout(min(left, 1.0))
            try:
                data = self.ws.recv()
            except websocket.WebSocketTimeoutException:
                continue
            msg = ForwardMsg()
            msg.ParseFromString(data)
            yield msg

    def idle(self, until) -> None:
        """Keep reading (answering the server's pings) until ``until()`` is true."""
        import websocket

        self.ws.settimeout(0.2)
        while not until():
            try:
                self.ws.recv()
            except websocket.WebSocketTimeoutException:
                pass

    def close(self) -> None:
        try:
            self.ws.close()
        except Exception:  # noqa: BLE001 - closing a broken socket
            pass


def element(msg):
    """(kind, element) of a ``new_element`` delta, else (None, None)."""
    if msg.WhichOneof("type") != "delta" or msg.delta.WhichOneof("type") != "new_element":
        return None, None
    kind = msg.delta.new_element.WhichOneof("type")
    return kind, getattr(msg.delta.new_element, kind)


def read_run(session: StreamlitSession, deadline: float, on_element=None) -> dict:
    """Read one script run to its end: widget ids by label, error texts; ``on_element(kind, el, t)`` per element."""
    ids, errors = {}, []
    for msg in session.messages(deadline):
        kind, el = element(msg)
        if kind is not None:
            if getattr(el, "id", "") and getattr(el, "label", ""):
                ids[el.label] = el.id
            if kind == "exception" or (kind == "alert" and el.format == el.ERROR):
                errors.append(f"{kind}: {(getattr(el, 'message', '') or getattr(el, 'body', ''))[:200]}")
            if on_element is not None:
                on_element(kind, el, time.time())
        elif msg.WhichOneof("type") == "script_finished":
            return {"ids": ids, "errors": errors}


def judge(shown: str | None, expected: str, exact: float, tolerance: float) -> str | None:
    """Why a shown score fails the load test's check (None when it passes): missing, or not the engine's
    value for this pair (its 5-decimal rounding, or within ``tolerance`` — the live queue's stated S_JSD
    tolerance — of it)."""
    if shown is None:
        return "no score shown"
    if shown == expected:
        return None
    try:
        value = float(shown)
    except ValueError:
        return f"shows {shown!r}, not a number"
    if abs(value - exact) <= 0.5e-5 + tolerance:
        return None
    return f"shows S_JSD {shown}, the engine gives {expected}"


def participant(url: str, index: int, pair: list[str], expected: str, exact: float, tolerance: float,
                timeout: float, opened, go) -> dict:
    """One participant: open Try a pair, report ready (``opened()``), wait for ``go``, submit, wait for the score."""
    r = {"user": index, "errors": [], "expected": expected, "shown": None, "open_s": None, "submit_to_score_s": None,
         "submit_to_finished_s": None, "server_says_s": None, "sent": None, "score_received": None}
    session = None
    try:
        t0 = time.monotonic()
        session = StreamlitSession(url, timeout)
        session.rerun()
        page = read_run(session, t0 + timeout)
        r["open_s"] = time.monotonic() - t0
        missing = [label for label in (MORE_LABEL, LESS_LABEL, SUBMIT_LABEL) if label not in page["ids"]]
        if missing or page["errors"]:
            raise RuntimeError(f"page without {missing}" if missing else page["errors"][0])
    except Exception as exc:  # noqa: BLE001 - this participant's failure, reported
        r["errors"].append(f"open: {type(exc).__name__}: {str(exc)[:200]}")
        opened()
        if session:
            session.close()
        return r
    opened()
    session.idle(go.is_set)
    ids = page["ids"]

    def seen(kind, el, t):
        if kind == "metric" and el.label.startswith(SCORE_LABEL) and r["shown"] is None:
            r["shown"], r["score_received"] = el.body.strip(), t
        elif kind == "markdown":
            m = SCORED_RE.match(el.body.replace("`", "").strip())
            if m:
                r["server_says_s"] = float(m.group(1))

    try:
        r["sent"] = time.time()
        t1 = time.monotonic()
        session.rerun([(ids[MORE_LABEL], "string_value", pair[0]), (ids[LESS_LABEL], "string_value", pair[1]),
                       (ids[SUBMIT_LABEL], "trigger_value", True)])
        run = read_run(session, t1 + timeout, seen)
        r["submit_to_finished_s"] = time.monotonic() - t1
        r["errors"] += run["errors"]
    except Exception as exc:  # noqa: BLE001
        r["errors"].append(f"submit: {type(exc).__name__}: {str(exc)[:200]}")
    finally:
        session.close()
    if r["score_received"] is not None:
        r["submit_to_score_s"] = r["score_received"] - r["sent"]
    problem = judge(r["shown"], expected, exact, tolerance)
    if problem:
        r["errors"].append(problem)
    return r


def drive(spec: dict) -> dict:
    """The Locust run (this process is gevent's: locust patches the standard library when imported)."""
    import gevent
    import gevent.event
    from locust import User, task
    from locust.env import Environment
    from locust.exception import StopUser

    n = len(spec["pairs"])
    results: list[dict] = []
    state = {"opened": 0, "next": 0}
    all_open, go, all_done = gevent.event.Event(), gevent.event.Event(), gevent.event.Event()

    def opened():
        state["opened"] += 1
        if state["opened"] == n:
            all_open.set()

    class Participant(User):
        host = spec["url"]

        @task
        def try_a_pair(self):
            i = state["next"]
            state["next"] += 1
            tolerance = spec["tolerances"][i] if spec.get("tolerances") else spec["tolerance"]
            r = participant(self.host, i, spec["pairs"][i], spec["expected"][i], spec["exact"][i], tolerance,
                            spec["timeout"], opened, go)
            fire = self.environment.events.request.fire
            if r["open_s"] is not None:
                fire(request_type="WS", name="open Try a pair", response_time=r["open_s"] * 1000,
                     response_length=0, exception=None, context={})
            fire(request_type="WS", name="submit → score",
                 response_time=(r["submit_to_score_s"] or r["submit_to_finished_s"] or 0) * 1000, response_length=0,
                 exception=RuntimeError("; ".join(r["errors"])) if r["errors"] else None, context={})
            results.append(r)
            if len(results) == n:
                all_done.set()
            raise StopUser()

    env = Environment(user_classes=[Participant])
    runner = env.create_local_runner()
    cpu0 = time.process_time()
    runner.start(n, spawn_rate=max(n, 1))
    all_open.wait()
    print(json.dumps({"ready": "submit"}), flush=True)
    if sys.stdin.readline().strip() != "go":
        raise SystemExit("the parent stopped the run")
    go.set()
    all_done.wait()
    runner.quit()
    stats = env.stats.get("submit → score", "WS")
    return {"people": sorted(results, key=lambda r: r["user"]), "client_cpu_s": time.process_time() - cpu0,
            "locust": {"requests": stats.num_requests, "failures": stats.num_failures,
                       "p50_ms": stats.get_response_time_percentile(0.5),
                       "p95_ms": stats.get_response_time_percentile(0.95)}}


def child_main(spec_path: str, out_path: str) -> int:
    import locust  # noqa: F401 - first: gevent patches the standard library before anything else opens sockets

    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    out = drive(spec)
    Path(out_path).write_text(json.dumps(out, ensure_ascii=False), encoding="utf-8")
    return 0


# =========================================================================== the parent: server, CPU, report
def streamlit_argv(port: int) -> list[str]:
    """The server's command line, as tests/dashboard_server.py starts it."""
    return [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true", "--server.port", str(port),
            "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat (seconds)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_locust(url: str, server_pid: int, pairs, expected, exact, args, tmp: Path, tag: str,
               tolerances: list[float] | None = None, model_pid: int | None = None) -> dict:
    """The Locust child at low priority; returns its output plus the server's CPU-seconds of the submit phase
    (and those of the model's completions server, process ``model_pid``, when it runs here).
    ``tolerances``: per pair, how far a shown S_JSD may be from ``exact`` (default: the live queue's)."""
    spec, out = tmp / f"spec_{tag}.json", tmp / f"out_{tag}.json"
    from biascore.methods.attribution.live import SJSD_TOLERANCE

    spec.write_text(json.dumps({"url": url, "pairs": pairs, "expected": expected, "exact": exact,
                                "tolerance": SJSD_TOLERANCE, "tolerances": tolerances, "timeout": args.timeout},
                               ensure_ascii=False), encoding="utf-8")
    argv = ["nice", "-n", str(args.nice), sys.executable, str(Path(__file__).resolve()), "--drive", str(spec),
            "--drive-out", str(out)]
    child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        for line in child.stdout:
            if line.startswith("{") and json.loads(line).get("ready") == "submit":
                break
        cpu0, t0 = proc_cpu_s(server_pid), time.time()
        model_cpu0 = proc_cpu_s(model_pid) if model_pid else 0.0
        child.stdin.write("go\n")
        child.stdin.flush()
        child.stdout.read()
        if child.wait() != 0 or not out.exists():
            raise RuntimeError(f"the Locust process failed (exit {child.returncode})")
        result = json.loads(out.read_text(encoding="utf-8"))
        result["server_cpu_s"] = proc_cpu_s(server_pid) - cpu0
        if model_pid:
            result["model_server_cpu_s"] = proc_cpu_s(model_pid) - model_cpu0
        result["submit_phase_start"] = t0
        return result
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def percentile(values, q):
    from load_test import percentile as pct

    v = pct([x for x in values if x is not None], q)
    return None if v is None else round(v, 3)


def where_time_goes(people: list[dict], pairs: list[list[str]], timing_lines: list[dict]) -> dict:
    """Per participant, from the server's timing lines joined by pair: p50 / p95 of each part of submit → score."""
    from biascore.runs.timing_log import pair_tag

    by_pair = {ln["pair"]: ln for ln in timing_lines if ln["event"] == "try_pair"}
    parts: dict[str, list[float]] = {k: [] for k in ("to_page_script", "page_to_queue", "queue_wait", "of_it_gathering",
                                                     "forward_passes", "drawing", "delivery_to_client")}
    for p in people:
        ln = by_pair.get(pair_tag(*(s.strip() for s in pairs[p["user"]])))
        if ln is None or p["sent"] is None or "queue_s" not in ln:
            continue
        parts["to_page_script"].append(ln["script_start"] - p["sent"])
        parts["page_to_queue"].append(ln["queued"] - ln["script_start"])
        parts["queue_wait"].append(ln["queue_s"])
        parts["of_it_gathering"].append(ln["gather_s"])
        parts["forward_passes"].append(ln["forward_s"])
        parts["drawing"].append(ln["drawn"] - ln["scored"])
        if p["score_received"] is not None:
            parts["delivery_to_client"].append(p["score_received"] - ln["scored"])
    rounds = [ln for ln in timing_lines if ln["event"] == "live_round"]
    return {"parts_s": {k: {"p50": percentile(v, 0.5), "p95": percentile(v, 0.95), "n": len(v)}
                        for k, v in parts.items()},
            "rounds": len(rounds), "round_sizes": [ln["pairs"] for ln in rounds],
            "round_forward_s": [round(ln["forward_s"], 2) for ln in rounds],
            "forward_s_total": round(sum(ln["forward_s"] for ln in rounds), 2),
            # the forward passes' own CPU time (the scoring thread's): wall time far above it = waiting for a core
            "forward_cpu_s_total": round(sum(ln.get("forward_cpu_s", 0.0) for ln in rounds), 2)}


def summarise(n: int, out: dict, pairs, timing_lines: list[dict], load_before, load_after) -> dict:
    people = out["people"]
    scored = [p for p in people if p["shown"] is not None]
    return {
        "users": n, "errors": sum(1 for p in people if p["errors"]), "scores_shown": len(scored),
        "scores_equal_engine": sum(1 for p in scored if not p["errors"] or all("engine gives" not in e
                                                                                 for e in p["errors"])),
        "scores_identical_strings": sum(1 for p in scored if p["shown"] == p["expected"]),
        "submit_to_score_s": {"p50": percentile([p["submit_to_score_s"] for p in people], 0.5),
                              "p95": percentile([p["submit_to_score_s"] for p in people], 0.95),
                              "max": percentile([p["submit_to_score_s"] for p in people], 1.0)},
        "server_says_s": {"p50": percentile([p["server_says_s"] for p in people], 0.5),
                          "p95": percentile([p["server_says_s"] for p in people], 0.95)},
        "open_page_s": {"p50": percentile([p["open_s"] for p in people], 0.5),
                        "p95": percentile([p["open_s"] for p in people], 0.95)},
        "server_cpu_s": round(out["server_cpu_s"], 2), "server_cpu_s_per_person": round(out["server_cpu_s"] / n, 3),
        "client_cpu_s_per_person": round(out["client_cpu_s"] / n, 4), "locust": out["locust"],
        "load_before": load_before, "load_after": load_after,
        "where_time_goes": where_time_goes(people, pairs, timing_lines),
        "error_samples": [f"user {p['user']}: {e}" for p in people for e in p["errors"]][:10],
        "per_user": people,
    }


def expected_scores(pairs: list[list[str]]) -> tuple[list[str], list[float], list[float]]:
    """The engine's S_JSD of each pair, computed here and not by the server: page strings, values, and the
    reproducibility contract's bound on each pair's S_JSD (mean β(u), the tolerance of a served score). Through
    ``score_pairs`` in groups of 16 (the engine's typed-pair function; ``score_pair`` is one pair of it, and a
    pair's row does not depend on the others in its call beyond ``live.SJSD_TOLERANCE``, tests/methods/attribution/
    test_live.py). Remembered in cache/ws_load_expected.json (keyed by model and pair) so reruns skip the work."""
    import numpy as np

    from biascore.models.loading import load_model
    from biascore.runs.timing_log import pair_tag
    from tests.reproducibility_contract import bu_tolerance
    from biascore.methods.attribution.scorer import score_pairs
    from load_test import MODEL

    store = REPO / "cache" / "ws_load_expected.json"
    known = json.loads(store.read_text()) if store.exists() else {}
    todo = [(m, s) for m, s in pairs if f"{MODEL}:bound:{pair_tag(m, s)}" not in known]
    if todo:
        lm = load_model(MODEL)
        for i in range(0, len(todo), 16):
            group = todo[i:i + 16]
            for (m, s), row in zip(group, score_pairs(lm, group)):
                known[f"{MODEL}:{pair_tag(m, s)}"] = float(row["sjsd"])
                beta = bu_tolerance(row["logp_more"], row["logp_less"])
                known[f"{MODEL}:bound:{pair_tag(m, s)}"] = float(np.mean(beta)) if len(beta) else 0.0
            store.parent.mkdir(parents=True, exist_ok=True)
            store.write_text(json.dumps(known))
    exact = [known[f"{MODEL}:{pair_tag(m, s)}"] for m, s in pairs]
    bounds = [known[f"{MODEL}:bound:{pair_tag(m, s)}"] for m, s in pairs]
    return [f"{v:+.5f}" for v in exact], exact, bounds


def served_note(report: dict) -> list[str]:
    """The served run's own paragraph and table: where the model ran, and what the completions server saw."""
    served = report.get("served")
    if not served:
        return []
    lines = [f"Served model: the dashboard (public mode) lists `{served['label']}` = {served['server']} as its only "
             "model; Try a pair scores through the server, each live round as concurrent echo requests (at most "
             f"{served['concurrency']} in flight, the served client's pool). A shown score passes when it is within "
             "the reproducibility contract's bound for that pair (mean β(u)) plus the live queue's tolerance of the "
             "in-process engine's S_JSD. *Server CPU-s* in the main table is the dashboard process's; the completions "
             "server's own (the forward passes, when it runs on this machine) is in the table below.", ""]
    if any(r.get("server_counters") for r in report["runs"]):
        lines += ["| N | completions requests | most in flight at once | largest forward batch of the server | "
                  "completions server CPU-s per person |",
                  "|---|---|---|---|---|"]
        for r in report["runs"]:
            c = r.get("server_counters") or {}
            lines.append(f"| {r['users']} | {c.get('completions', '—')} | {c.get('max_in_flight', '—')} | "
                         f"{c.get('largest_batch', '—')} | {c.get('cpu_s_per_person', '—')} |")
        lines.append("")
    return lines


def markdown(report: dict) -> str:
    title = "Workshop load test at the server" + (", model served by a completions server" if report.get("served")
                                                   else "")
    lines = [f"# {title}: Streamlit's websocket protocol, Locust ({report['date']})", "",
             f"`{report['command']}` — commit `{report['commit']}`, {report['machine']}, model `{report['model']}`, "
             f"one warm server (`BIASCORE_TORCH_THREADS={report['torch_threads']}`, nice "
             f"{report.get('server_nice', 0)}), Locust at nice {report['nice']}. "
             "Each participant opens Try a pair, waits until all have it open, then submits a different CrowS-Pairs "
             "pair (both sentences and the form's trigger in one rerun `BackMsg`) and waits for the S_JSD delta. "
             "It fails on no score, an error element, or a score that is not the engine's for that pair, "
             "computed by the load test itself (5 decimals). Server CPU = utime + stime (`/proc/PID/stat`) of the "
             "server process during the submit phase, divided by N. The machine is shared: the load average is "
             "part of every row.", "", *served_note(report),
             "| N | load avg before → after | errors | scores shown | equal to engine (identical strings) | "
             "submit → score p50 / p95 / max (s) | server CPU-s per person | client CPU-s per person | "
             "rounds (largest) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        t, w = r["submit_to_score_s"], r["where_time_goes"]
        lines.append(f"| {r['users']} | {r['load_before'][0]} → {r['load_after'][0]} | {r['errors']} | "
                     f"{r['scores_shown']}/{r['users']} | {r['scores_equal_engine']}/{r['users']} "
                     f"({r['scores_identical_strings']}) | {t['p50']} / {t['p95']} / {t['max']} | "
                     f"{r['server_cpu_s_per_person']} | {r['client_cpu_s_per_person']} | "
                     f"{w['rounds']} ({max(w['round_sizes'], default=0)}) |")
    lines += ["", "Where the time goes (p50 / p95 seconds per participant, from the server's timing lines):", "",
              "| N | to the page script (Streamlit) | page to the queue | queue wait (of it gathering) | "
              "forward passes of its round | drawing | delivery to the client | forward passes, all rounds: wall "
              "(CPU) s |",
              "|---|---|---|---|---|---|---|---|"]
    for r in report["runs"]:
        p, w = r["where_time_goes"]["parts_s"], r["where_time_goes"]
        f = lambda k: f"{p[k]['p50']} / {p[k]['p95']}"  # noqa: E731
        lines.append(f"| {r['users']} | {f('to_page_script')} | {f('page_to_queue')} | {f('queue_wait')} "
                     f"({f('of_it_gathering')}) | {f('forward_passes')} | {f('drawing')} | "
                     f"{f('delivery_to_client')} | {w['forward_s_total']} ({w.get('forward_cpu_s_total')}) |")
    lines += error_sections(report["runs"])
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, nargs="+", default=[30, 100, 300])
    ap.add_argument("--timeout", type=float, default=600, help="seconds a participant waits for any one step")
    ap.add_argument("--nice", type=int, default=19, help="niceness of the Locust process")
    ap.add_argument("--server-nice", type=int, default=0,
                    help="niceness of the server (negative, as root: a server that gets the cores first, as a "
                         "dedicated workshop server would, on a machine shared with other work)")
    ap.add_argument("--out", default=str(REPO / "bench" / "results" / "ws_load_test.json"))
    ap.add_argument("--pairs-from", default="crows-en", help="the benchmark whose minimal pairs are typed")
    ap.add_argument("--pairs-file", help="a JSON list of [more, less] pairs to type instead (used in order)")
    ap.add_argument("--wrong-expected", action="store_true",
                    help="check the check: expect a deliberately wrong score for every pair (the run must fail)")
    ap.add_argument("--url", help="use this running server (started with BIASCORE_TIMING_LOG=--timing-log) "
                    "instead of starting one; needs --server-pid")
    ap.add_argument("--server-pid", type=int, help="the running server's process id (its CPU time is read)")
    ap.add_argument("--timing-log", help="the running server's BIASCORE_TIMING_LOG file")
    ap.add_argument("--served", action="store_true",
                    help="score through a completions server: the reference server (tests/served_reference.py, "
                         "SmolLM2 float32) started here, or --served-url; results in ws_load_test_served.json/.md")
    ap.add_argument("--served-url", help="a running completions server, http://HOST:PORT/v1[#NAME] (implies --served)")
    ap.add_argument("--served-threads", type=int, default=1, help="torch threads of the reference server")
    ap.add_argument("--drive", help=argparse.SUPPRESS)  # internal: the Locust child process
    ap.add_argument("--drive-out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.drive:
        return child_main(args.drive, args.drive_out)
    args.served = bool(args.served or args.served_url)
    if args.served and args.out == ap.get_default("out"):
        args.out = str(REPO / "bench" / "results" / "ws_load_test_served.json")
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a kill unwinds: the server and temp files go

    from dashboard_server import dashboard_process
    from load_test import MODEL, live_pairs, loadavg

    total = sum(args.users) + 1
    if args.pairs_file:
        pairs = json.loads(Path(args.pairs_file).read_text(encoding="utf-8"))
        pairs = [pairs[i % len(pairs)] for i in range(total - 1)] + [list(live_pairs(1, args.pairs_from)[0])]
    else:
        pairs = [list(p) for p in live_pairs(total, args.pairs_from)]
    expected, exact, bounds = expected_scores([tuple(p) for p in pairs])
    tolerances = None
    if args.served:
        from biascore.methods.attribution.live import SJSD_TOLERANCE

        tolerances = [b + SJSD_TOLERANCE for b in bounds]
    if args.wrong_expected:
        exact = [v + 0.5 for v in exact]
        expected = [f"{v:+.5f}" for v in exact]
    threads = os.environ.get("BIASCORE_TORCH_THREADS", "1")
    runs = []
    served_env, served_info, reference = {}, None, None
    if args.served:
        from biascore.models.served.client import DEFAULT_CONCURRENCY

        if args.served_url:
            target, where = args.served_url, "a running completions server (`--served-url`)"
        else:
            from served_reference import Process

            reference = Process("--model", MODEL, "--threads", str(args.served_threads)).start()
            target = reference.url
            where = (f"the reference server of tests/served_reference.py ({MODEL} float32, its own process on this "
                     f"machine at nice {os.nice(0)}, {args.served_threads} torch thread(s))")
        label = f"{MODEL}-served"
        served_env = {"BIASCORE_PUBLIC": "1", "BIASCORE_MODELS": f"{label}=served:{target.removeprefix('served:')}"}
        served_info = {"label": label, "server": where, "concurrency": DEFAULT_CONCURRENCY}
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="biascore-ws-load-") as tmp_name:
        if reference is not None:
            stack.callback(reference.kill)
        tmp = Path(tmp_name)
        cache = tmp / "cache"
        cache.mkdir()
        models = REPO / "cache" / "models"  # converted GGUF models are reused, as the test suite does
        models.mkdir(parents=True, exist_ok=True)
        (cache / "models").symlink_to(models, target_is_directory=True)
        timing = Path(args.timing_log) if args.url else tmp / "timing.jsonl"
        server = (contextlib.nullcontext((args.url, argparse.Namespace(pid=args.server_pid))) if args.url else
                  dashboard_process(tmp / "streamlit.log", drop_env=("BIASCORE_RAISE_PAGE_ERRORS",),
                                    command=lambda port: ["nice", "-n", str(args.server_nice), *streamlit_argv(port)],
                                    BIASCORE_CACHE_DIR=str(cache), BIASCORE_TORCH_THREADS=threads,
                                    BIASCORE_TIMING_LOG=str(timing), BIASCORE_REVIEW_DB=str(cache / "reviews.sqlite"),
                                    **served_env))
        with server as (url, proc):
            warm = run_locust(url, proc.pid, pairs[-1:], expected[-1:], exact[-1:], args, tmp, "warm",
                              tolerances and tolerances[-1:])
            start = 0
            for n in args.users:
                chunk = slice(start, start + n)
                start += n
                before = loadavg()
                if reference is not None:
                    reference.stats(reset=True)
                out = run_locust(url, proc.pid, pairs[chunk], expected[chunk], exact[chunk], args, tmp, f"n{n}",
                                 tolerances and tolerances[chunk], reference and reference.proc.pid)
                lines = [json.loads(x) for x in timing.read_text().splitlines()] if timing.exists() else []
                lines = [x for x in lines if x["t"] >= out["submit_phase_start"]]
                timing.write_text("")  # the next N starts a fresh log
                r = summarise(n, out, pairs[chunk], lines, before, loadavg())
                r["warmup_errors"] = [e for p in warm["people"] for e in p["errors"]]
                if reference is not None:
                    r["server_counters"] = {**reference.stats(), "cpu_s_per_person":
                                            round(out["model_server_cpu_s"] / n, 3)}
                runs.append(r)
                t = r["submit_to_score_s"]
                print(f"N={n}: errors {r['errors']}, scores shown {r['scores_shown']}/{n}, equal to the engine "
                      f"{r['scores_equal_engine']}/{n}, submit→score p50 {t['p50']} s p95 {t['p95']} s, server "
                      f"CPU-s per person {r['server_cpu_s_per_person']}, load {r['load_before']} -> "
                      f"{r['load_after']}", flush=True)
                for sample in r["error_samples"]:
                    print(f"  error: {sample}", flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                            text=True).stdout.strip()
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "commit": commit,
              "command": "python bench/ws_load_test.py --users " + " ".join(map(str, args.users))
              + (f" --pairs-from {args.pairs_from}" if args.pairs_from != "crows-en" else "")
              + (" --wrong-expected" if args.wrong_expected else "")
              + (" --served" if args.served and not args.served_url else "")
              + (" --served-url URL" if args.served_url else ""),
              "machine": f"{os.cpu_count()} CPU cores ({platform.machine()})", "model": MODEL,
              # the niceness each process ran at (this process's own plus the options: children inherit it)
              "torch_threads": threads, "nice": min(19, os.nice(0) + args.nice),
              "server_nice": os.nice(0) + args.server_nice, "served": served_info, "runs": runs}
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out_path.with_suffix(".md").write_text(markdown(report), encoding="utf-8")
    print(f"wrote {out_path} and {out_path.with_suffix('.md')}")
    return 0 if all(r["errors"] == 0 and not r["warmup_errors"] for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
