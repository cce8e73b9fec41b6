"""``biascore run <method> …`` and each method's own command (``score``, ``heads``, ``labdet``, ``seat`` …):
one generic path for every registered method.

    model handle (loaded only on a cache miss) → input(s) → options → the runner (progress bar on stderr,
    and another process's progress while it computes the same result) → the method's report → ``--out``

``biascore methods`` lists the registry (name, command, input, model kinds, paper); ``--schema NAME``
prints a method's result columns; ``--markdown`` is docs/methods.md and ``--readme-table`` README's table.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

from biascore.models.args import reach_from_args
from biascore.cli.options import add_method_args, column_mapping, option_values
from biascore.models.handle import ModelHandle
from biascore.contract.method import Method
from biascore.contract.schema import schema_table
from biascore.contract.result import write_frame
from biascore.contract.presentation import precision_lines, with_precision
from biascore.contract.result_files import write_result_file
from biascore.runs.runner import run
from biascore.methods import discover, get
from biascore.progress import Bar


def handle_from_args(args: argparse.Namespace, name: str | None = None) -> ModelHandle:
    """The model handle the command's model options describe (``name`` replaces ``--model``)."""
    return ModelHandle(name or args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype,
                       trust_remote_code=args.trust_remote_code, **reach_from_args(args, name))


def register_method_commands(sub) -> None:
    """``run <method>``, ``methods`` and every method's own command, all from the registry."""
    methods = discover()
    run_parser = sub.add_parser("run", help="run any registered method (see `biascore methods`)",
                                description="Run a registered method on a model and an input; cached and resumable.")
    run_sub = run_parser.add_subparsers(dest="method", required=True, metavar="METHOD")
    for method in methods:
        for parent, name in ((run_sub, method.name), (sub, method.cli_command)):
            p = parent.add_parser(name, help=method.summary_line,
                                  description=f"{method.summary_line}. {method.paper}."
                                              + (f" {method.formula}" if method.formula else ""))
            add_method_args(p, method)
            p.set_defaults(func=run_command, method_name=method.name)
    p = sub.add_parser("methods", help="list the registered methods with their paper and inputs")
    p.add_argument("--schema", metavar="METHOD", default=None, help="print one method's result columns")
    p.add_argument("--markdown", action="store_true", help="every method's reference as markdown (docs/methods.md)")
    p.add_argument("--readme-table", action="store_true",
                   help="the methods table of README.md (between its 'methods table' markers)")
    p.add_argument("--update-docs", action="store_true",
                   help="rewrite the generated parts of README.md and docs/methods.md from the registry "
                        "(after adding or changing a method)")
    p.set_defaults(func=list_methods)


def _cell(text: object) -> str:
    return str(text).replace("%%", "%").replace("|", "\\|").replace("\n", " ")


def methods_markdown() -> str:
    """Every registered method's reference (docs/methods.md is this text): paper, formula, input, entry point,
    cache folder, options and result columns — written once, in the code."""
    out = []
    for m in discover():
        module = type(m).__module__
        out += [f"## `{m.name}` — {m.summary_line}", "",
                f"* **paper:** {m.paper}",
                *([f"* **formula:** {m.formula}"] if m.formula else []),
                f"* **input:** {m.input_kind.noun} (`{m.input_flag or m.input_kind.flag}`, default "
                f"`{m.input_kind.default}`); **models:** {', '.join(m.model_kinds)}",
                f"* **run it:** `biascore {m.cli_command} …`, `biascore run {m.name} …`, "
                f"`biascore.run(\"{m.name}\", model, input, …)`; **defined in** `{module.replace('.', '/')}.py`",
                f"* **cache:** `<cache>/{m.cache_folder}/<key digest>.parquet`"
                + (f" (derived frames in `<cache>/{m.cache_folder}.derived/`)" if m.cache_derived else ""), ""]
        specs = m.Options.specs()
        if specs:
            out += ["| option | default | changes the cached result | meaning |", "|---|---|---|---|"]
            out += [f"| `{s.flag}` | `{s.default}` | {'yes' if s.key else 'no'} | {_cell(s.help)} |" for s in specs]
            out.append("")
        out += ["| result column | dtype | meaning |", "|---|---|---|"]
        out += [f"| `{c.name}` | {c.dtype} | {_cell(c.meaning)} |" for c in m.schema]
        out.append("")
    return "\n".join(out)


#: the lines around the generated methods table in README.md
README_MARKERS = ("<!-- methods table: generated by `biascore methods --readme-table`; do not edit by hand -->",
                  "<!-- end of the methods table -->")
#: the lines around the generated method sections in docs/methods.md
METHODS_MARKERS = ("<!-- method sections: generated by `biascore methods --markdown`; do not edit by hand -->",
                   "<!-- end of the method sections -->")


def readme_table() -> str:
    """README's methods table: one row per registered method, from its registration (name, command, input,
    model kinds, summary, paper) — a new method's folder adds its row."""
    rows = ["| method (`biascore run …`) | own command | reads | models | what it scores | paper |",
            "|---|---|---|---|---|---|"]
    rows += [f"| `{m.name}` | `{m.cli_command}` | {_cell(m.input_kind.noun)} | {', '.join(m.model_kinds)} | "
             f"{_cell(m.summary_line)} | {_cell(m.paper)} |" for m in discover()]
    return "\n".join(rows)


def generated_docs() -> dict[str, tuple[tuple[str, str], str]]:
    """The generated parts of the docs: file (relative to the repository) → (its markers, the text between)."""
    return {"README.md": (README_MARKERS, readme_table()), "docs/methods.md": (METHODS_MARKERS, methods_markdown())}


def generated_part(text: str, markers: tuple[str, str]) -> str | None:
    """The text between ``markers`` in ``text`` (stripped), or None when a marker is missing."""
    begin, end = markers
    if begin not in text or end not in text:
        return None
    return text[text.index(begin) + len(begin):text.index(end)].strip()


def update_docs(root: Path) -> list[str]:
    """Rewrite the generated parts of README.md and docs/methods.md under ``root`` from the registry; the
    files whose text changed."""
    changed = []
    for name, (markers, body) in generated_docs().items():
        path = root / name
        text = path.read_text(encoding="utf-8")
        if generated_part(text, markers) is None:
            raise ValueError(f"{path}: the markers of its generated part are missing ({markers[0]})")
        start, stop = text.index(markers[0]) + len(markers[0]), text.index(markers[1])
        new = text[:start] + "\n" + body.strip() + "\n" + text[stop:]
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(name)
    return changed


def list_methods(args: argparse.Namespace) -> int:
    if args.update_docs:
        from biascore import settings

        changed = update_docs(settings.REPO_ROOT)
        print("updated: " + (", ".join(changed) if changed else "nothing (already current)"))
        return 0
    if args.markdown:
        print(methods_markdown())
        return 0
    if args.readme_table:
        print("\n".join([README_MARKERS[0], readme_table(), README_MARKERS[1]]))
        return 0
    if args.schema:
        method = get(args.schema)
        print(f"{method.name}: {method.summary_line}\n{method.paper}\n")
        with pd.option_context("display.max_colwidth", 120, "display.width", 200):
            print(schema_table(method.schema).to_string(index=False))
        return 0
    table = pd.DataFrame([m.describe() for m in discover()])
    with pd.option_context("display.max_colwidth", 90, "display.width", 220):
        print(table.to_string(index=False))
    return 0


def run_command(args: argparse.Namespace) -> int:
    method = get(args.method_name)
    inputs = [x.strip() for x in str(getattr(args, "input", "") or "").split(",") if x.strip()] or [None]
    options = method.Options.build(**option_values(args))  # bad values: one line before anything loads
    t0 = time.perf_counter()
    results = []
    for model in [args.model, *getattr(args, "compare", [])]:
        handle = handle_from_args(args, model)
        for name in inputs:
            results.append(_one(method, handle, name, options, args))
    elapsed = time.perf_counter() - t0
    print("\n".join(method.report_all(results) + precision_lines(results)))
    print(f"({elapsed:.2f} s)", file=sys.stderr)
    _write(method.outputs(results), args.out, results)
    return 0


def _one(method: Method, handle: ModelHandle, name: str | None, options, args: argparse.Namespace):
    label = f"{handle.label} on {name or method.input_kind.default}"
    columns, split = column_mapping(getattr(args, "columns", None)), getattr(args, "split", None)
    if columns or split:
        from biascore.inputs.datasets import load_benchmark

        name = load_benchmark(name or method.input_kind.default, getattr(args, "data_dir", None), columns=columns,
                              split=split)
    with Bar(label, unit=method.input_kind.unit) as bar:
        result = run(method, handle, name, options, limit=getattr(args, "limit", None), progress=bar,
                     waiting=bar.waiting)
        for extra, (other, values) in method.followups(result).items():
            bar.desc = f"{label}: {extra}"
            result.extras[extra] = run(other, handle, result.input, progress=bar, waiting=bar.waiting, **values)
    malformed = getattr(result.input, "malformed", None)
    if malformed:
        print(f"warning: {len(malformed)} malformed row(s) of {result.input_name} were not loaded: "
              + "; ".join(malformed[:5]) + (" …" if len(malformed) > 5 else ""), file=sys.stderr)
    duplicates = getattr(result.input, "duplicates_note", lambda: "")()
    if duplicates:
        print(f"warning: {duplicates}", file=sys.stderr)
    return result


def _write(frames: dict[str, pd.DataFrame], out: str | None, results: list) -> None:
    """Write a method's outputs: ``""`` to ``out``, ``"_suffix"`` beside it, any other key is a path of its own
    (written even without ``--out``). A CSV carries each row's ``precision`` (:func:`with_precision`); a ``.parquet`` file of the results (``""``) or of their follow-up
    ``suffix`` is a result file :func:`biascore.load_result` reads back (:func:`write_result_file`)."""
    path = Path(out) if out else None
    for name, frame in frames.items():
        if name and not name.startswith("_"):
            target = Path(name)
        elif path is None:
            continue
        else:
            target = path if not name else path.with_name(f"{path.stem}{name}{path.suffix or '.csv'}")
        target.parent.mkdir(parents=True, exist_ok=True)
        extra = name[1:] if name.startswith("_") else None
        sources = results if not name else [r.extras[extra] for r in results if extra in r.extras]
        if target.suffix == ".parquet" and sources and (name == "" or len(sources) == len(results)):
            write_result_file(sources, frame, target)
        else:
            write_frame(with_precision(frame, sources or results), str(target))
        print(f"wrote {len(frame)} rows to {target}")
