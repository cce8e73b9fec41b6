"""Dashboard speed from the result cache (issue: page loads and table filtering under 300 ms each with
winoqueer-tl's 12,089 pairs scored; Try a pair under 2 s once the model is loaded).

Usage (default cache; score the benchmark first, e.g.
``python -m biascore score --benchmark winoqueer-tl --model smollm2-135m``)::

    BIASCORE_DATA_DIR=/path/to/data python bench/bench_dashboard.py [--benchmark winoqueer-tl] [--model NAME]
        [--repeats 7] [--out bench/results/bench_dashboard.json]

What is timed (Streamlit AppTest runs the page script in this process exactly as the server does, minus
the browser; the first load of a run reads the parquet file and derives b(u) once per server process):

Each session runs app.py (its first page, untimed) and switches to the page timed; ``--pages-only`` leaves out
Try a pair (no model loaded).

* ``cold_load``: first Token attributions load in a fresh process (parquet → attribution frame → table);
* ``page_load``: a new session opening Token attributions / Overview with the caches warm (median);
* ``filter_*``: one rerun after changing a filter (text search, verdict, sort; median). AppTest reruns
  the whole page; the server reruns only the filter+table fragment, so these are upper bounds;
* ``try_pair``: :func:`score_pair` on demo pairs with the default model loaded (median, max).

Each page figure is given three times: ``*_ms`` = AppTest wall time (includes the test harness parsing every
element), ``*_script_ms`` = the page script's own run time (what the server spends) and ``*_script_cpu_ms`` = the
script thread's CPU time (steady on a shared, loaded machine, where wall times are not).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


SCRIPT_MS: list[float] = []
SCRIPT_CPU_MS: list[float] = []  # the script thread's own CPU time: steady on a loaded machine, where wall time is not


def record_script_runs() -> None:
    """Time each script execution inside the runner (what a server spends; AppTest's own bookkeeping,
    ~0.1–0.8 s per run on this shared CPU, is left out)."""
    from streamlit.runtime.scriptrunner import script_runner

    original = script_runner.ScriptRunner._run_script

    def timed_run(self, *args, **kwargs):
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            SCRIPT_MS.append((time.perf_counter() - t0) * 1000)
            SCRIPT_CPU_MS.append((time.thread_time() - c0) * 1000)

    script_runner.ScriptRunner._run_script = timed_run


def timed(fn) -> float:
    """AppTest wall time of ``fn`` in ms; the script's own time is appended to SCRIPT_MS_LAST."""
    n = len(SCRIPT_MS)
    t0 = time.perf_counter()
    fn()
    wall = (time.perf_counter() - t0) * 1000
    SCRIPT_MS_LAST.append(sum(SCRIPT_MS[n:]) if len(SCRIPT_MS) > n else wall)
    SCRIPT_CPU_MS_LAST.append(sum(SCRIPT_CPU_MS[n:]))
    return wall


SCRIPT_MS_LAST: list[float] = []
SCRIPT_CPU_MS_LAST: list[float] = []


class Page:
    """A page of the dashboard in a new session: app.py has run (its first page, untimed) and switched to the
    page; ``run`` runs the page (its first run: the page load; the next ones: reruns)."""

    def __init__(self, page: str, **query):
        from streamlit.testing.v1 import AppTest

        self.at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
        self.at.query_params.update(query)
        self.at.run()
        self.at.switch_page(f"views/pages/{page}.py")

    def run(self):
        return self.at.run()

    def __getattr__(self, name):
        return getattr(self.at, name)


def open_token_attributions(benchmark: str, model: str) -> Page:
    return Page("token_attributions", benchmark=benchmark, model=model)


def check(at) -> None:
    if at.exception:
        raise SystemExit(f"page raised: {at.exception[0].value}")


def bench_pages(benchmark: str, model: str, repeats: int) -> dict:
    out: dict[str, object] = {}
    at = open_token_attributions(benchmark, model)
    out["cold_load_ms"] = round(timed(at.run), 1)
    out["cold_load_script_ms"] = round(SCRIPT_MS_LAST[-1], 1)
    check(at)
    out["rows_in_table"] = int(len(next(df.value for df in at.dataframe if "strongest_token" in df.value.columns)))
    loads = []
    for _ in range(repeats):
        at = open_token_attributions(benchmark, model)
        loads.append(timed(at.run))
        check(at)
    out["page_load_ms"] = summary(loads)
    out["page_load_script_ms"] = summary(SCRIPT_MS_LAST[-repeats:])
    out["page_load_script_cpu_ms"] = summary(SCRIPT_CPU_MS_LAST[-repeats:])
    steps = {
        "filter_text_search": lambda a: a.text_input(key="ta_search").set_value("bakla"),
        "filter_verdict": lambda a: a.selectbox(key="ta_biased").set_value("biased"),
        "filter_sort_strongest": lambda a: a.selectbox(key="ta_sort").set_value("strongest token |b(u)|"),
        "filter_clear": lambda a: a.text_input(key="ta_search").set_value(""),
    }
    for name, step in steps.items():
        times = []
        for _ in range(repeats):
            at = open_token_attributions(benchmark, model)
            at.run()
            step(at)
            times.append(timed(at.run))
            check(at)
        out[f"{name}_ms"] = summary(times)
        out[f"{name}_script_ms"] = summary(SCRIPT_MS_LAST[-repeats:])
        out[f"{name}_script_cpu_ms"] = summary(SCRIPT_CPU_MS_LAST[-repeats:])
    loads = []
    for _ in range(repeats):
        ov = Page("overview")
        loads.append(timed(ov.run))
        check(ov)
    out["overview_page_load_ms"] = summary(loads)
    out["overview_page_load_script_ms"] = summary(SCRIPT_MS_LAST[-repeats:])
    out["overview_page_load_script_cpu_ms"] = summary(SCRIPT_CPU_MS_LAST[-repeats:])
    return out


def bench_try_pair(model: str, repeats: int) -> dict:
    from biascore.inputs.datasets import load_benchmark
    from biascore.models.loading import load_model
    from biascore.methods.attribution.scorer import score_pair
    from views.kit.attribution import limit_torch_threads

    limit_torch_threads()  # what the dashboard does (BIASCORE_TORCH_THREADS, default 1)
    lm = load_model(model)
    pairs = load_benchmark("demo").frame.head(repeats + 1)
    score_pair(lm, pairs.sent_more.iloc[0], pairs.sent_less.iloc[0])  # warm-up
    times = [timed(lambda r=r: score_pair(lm, r.sent_more, r.sent_less)) for r in pairs.iloc[1:].itertuples()]
    import torch

    return {"try_pair_ms": summary(times), "torch_threads": torch.get_num_threads(), "try_pair_model": model}


def summary(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "n": len(values)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="winoqueer-tl")
    parser.add_argument("--model", default=None, help="a model scored on the benchmark (default: the first found)")
    parser.add_argument("--try-model", default="smollm2-135m")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", default=str(REPO / "bench" / "results" / "bench_dashboard.json"))
    parser.add_argument("--pages-only", action="store_true", help="leave out Try a pair (no model loaded)")
    args = parser.parse_args()

    from biascore.methods.attribution.results import best_runs, cached_runs

    record_script_runs()
    runs = best_runs(cached_runs())
    runs = runs[(runs.benchmark == args.benchmark) & runs.complete]
    if args.model:
        runs = runs[runs.model == args.model]
    if runs.empty:
        raise SystemExit(f"no complete cached run of {args.benchmark}; score it first "
                         f"(python -m biascore score --benchmark {args.benchmark})")
    model = str(runs.iloc[0].model)
    print(f"benchmark {args.benchmark}, model {model}, {int(runs.iloc[0].n_pairs)} pairs", file=sys.stderr)
    result = {"benchmark": args.benchmark, "model": model, **bench_pages(args.benchmark, model, args.repeats),
              **({} if args.pages_only else bench_try_pair(args.try_model, args.repeats))}
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
