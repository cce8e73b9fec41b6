"""A newcomer's first minute: from ``streamlit run app.py`` on a fresh clone to the first B on the Overview.

``git clone`` of this repository into an empty temporary folder (no ../shared beside it, no BIASCORE_* variables,
an empty cache: the embedded SmolLM2 is converted from its PyPI GGUF on first use), ``streamlit run app.py`` there,
and headless Chromium (Playwright, /usr/bin/chromium) on the Overview: it presses "Score now" and reads the
page's progress line every 0.1 s until the B table shows. Prints (and with ``--json`` writes) the time of each
step from the command's start:

* ``server``: Streamlit answers its health check (Python + Streamlit start);
* ``overview``: the Overview has run once (its first run imports the engine) and shows "Score now";
* one line per progress step the page showed (the line every page shows while the default model loads, loading/
  converting the model, scoring pairs), with its first time; ``model ready``: the first pair count (the model
  is loaded, scoring has begun);
* ``first_B``: the B table is on the page;
* ``server CPU s by model ready`` / ``by first_B``: the CPU time the Streamlit process has used by then (a figure
  a busy machine sways far less than the wall times).

    .venv/bin/python bench/first_minute.py [--json bench/results/first_minute.json]

Run it on an otherwise idle machine for a figure to quote; it notes ``uptime``'s load beside the numbers.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from dashboard_server import CHROMIUM, dashboard_process  # noqa: E402  (the e2e tests' server start)

LIMIT_S = 900


def cpu_s(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux /proc): far less swayed by the machine's
    load than wall time, so a busy machine's before/after still compares."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure(workdir: Path, ref: str | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    clone = workdir / "biascore"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    if ref:
        subprocess.run(["git", "checkout", "-q", ref], cwd=clone, check=True)
    t0 = time.monotonic()
    steps: dict[str, float] = {}
    # no biascore setting, offline, the clone's code
    bare = tuple(k for k in os.environ if k.startswith("BIASCORE_"))
    with dashboard_process(workdir / "streamlit.log", drop_env=bare, cwd=clone, poll_s=0.1, PYTHONPATH=str(clone),
                           HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1") as (url, server):
        steps["server"] = time.monotonic() - t0
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=["--headless", "--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 1800})
            page.set_default_timeout(LIMIT_S * 1000)
            page.goto(url, wait_until="domcontentloaded")
            button = page.get_by_role("button", name=re.compile("^Score now"))
            button.wait_for()
            steps["overview"] = time.monotonic() - t0
            button.click()
            table = page.locator('[data-testid="stHeading"]', has_text="B by bias type")
            while table.count() == 0:
                if time.monotonic() - t0 > LIMIT_S:
                    raise RuntimeError("no B after the safety limit")
                for bar in page.locator('[data-testid="stProgress"], [data-testid="stSpinner"], '
                                        '[data-testid="stCaptionContainer"]:has-text("⏳")').all():
                    try:
                        text = bar.inner_text(timeout=200).strip()
                    except Exception:  # the element went away between listing and reading
                        continue
                    step = re.sub(r"\s*\d+/\d+\s*$|: \d+ s so far.*", "", text)  # "… pairs 3/38" → one step
                    if step and step not in steps:
                        steps[step] = time.monotonic() - t0
                    if re.search(r"\d+/\d+\s*$", text) and "model ready" not in steps:  # the pairs are counted
                        steps["model ready"] = time.monotonic() - t0
                        steps["server CPU s by model ready"] = cpu_s(server.pid)
                time.sleep(0.1)
            steps["first_B"] = time.monotonic() - t0
            steps["server CPU s by first_B"] = cpu_s(server.pid)
            page.screenshot(path=str(workdir / "first_B.png"), full_page=True)
            browser.close()
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--ref", nargs="+", default=[None], metavar="REF",
                        help="measure these commits of the clone, one after the other (e.g. main HEAD main HEAD: "
                             "a before/after under the same machine load)")
    args = parser.parse_args()
    runs = []
    for ref in args.ref:
        load_before = os.getloadavg()
        with tempfile.TemporaryDirectory(prefix="biascore-first-minute-") as tmp:
            steps = measure(Path(tmp), ref)
        load_after = os.getloadavg()
        runs.append({"ref": ref or "HEAD", "steps_s": {k: round(v, 2) for k, v in steps.items()},
                     "cpus": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": load_after})
        print(f"{ref or 'HEAD'}:")
        for name, t in steps.items():
            print(f"{t:8.2f} s  {name}")
        print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f} ({os.cpu_count()} CPUs)")
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
