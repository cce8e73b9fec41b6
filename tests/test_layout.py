"""The package layout: no import cycle (imports inside functions count), few top-level modules, one
folder per method with its ``method.py``, no Streamlit inside the engine, the engine never imports its shells.

Every ``import``/``from … import`` node anywhere in a file (module level, functions, try blocks) is an
edge; ``from pkg import name`` is an edge to ``pkg.name`` when that is a module, else to ``pkg``.
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
#: the method folders (a package under biascore/methods/): found, never listed by hand
METHODS = sorted(p.parent.name for p in (REPO / "biascore" / "methods").glob("*/__init__.py"))


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def project_modules(root: Path = REPO) -> dict[str, Path]:
    files = [*sorted((root / "biascore").rglob("*.py")), *sorted((root / "views").rglob("*.py"))]
    return {module_name(p, root): p for p in files}


def _resolve(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_graph(modules: dict[str, Path]) -> dict[str, set[str]]:
    """importer -> the project modules it imports (anywhere in the file)."""

    def owner(name: str) -> str | None:  # the project module a dotted name lives in
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                mod = _resolve(node, name, path.name == "__init__.py")
                targets = [f"{mod}.{a.name}" if f"{mod}.{a.name}" in modules else mod for a in node.names]
            for t in targets:
                hit = owner(t)
                if hit and hit != name:
                    edges.add(hit)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


def test_no_import_cycle():
    cycle = find_cycle(import_graph(project_modules()))
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_the_cycle_finder_sees_function_level_imports(tmp_path):
    # a planted cycle through an import inside a function must be found
    pkg = tmp_path / "biascore"
    (pkg / "sub").mkdir(parents=True)
    (tmp_path / "views").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "a.py").write_text("from biascore.sub import b\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    from . import c\n")
    (pkg / "sub" / "c.py").write_text("def g():\n    try:\n        import biascore.sub.a as a\n    except ImportError:\n        pass\n")
    cycle = find_cycle(import_graph(project_modules(tmp_path)))
    assert cycle is not None and set(cycle) == {"biascore.sub.a", "biascore.sub.b", "biascore.sub.c"}
    (pkg / "sub" / "c.py").write_text("import biascore\n")
    assert find_cycle(import_graph(project_modules(tmp_path))) is None


#: The engine's rooms from the ground up: a module imports only from its own floor or the floors below it.
#: ground: settings, one-line errors, literal text, the progress signature, the version; then the results store
#: and the statistics; the model (description, loading, placement, served, log-probabilities, embedder); the
#: method contract; the inputs; the runner; the methods; and the shells (review, sweeps, snapshots, API, CLI).
GROUND = ("version", "settings", "errors", "display", "progress")
FLOORS = (GROUND, ("store", "stats"), ("models",), ("contract",), ("inputs",), ("runs",), ("methods",),
          ("review", "sweep", "snapshot", "api"), ("cli",), ("__init__", "__main__"))
#: the engine's folders (no shell among them)
ENGINE = ("methods", "models", "store", "inputs", "contract", "runs", "stats")


def floor_of(module: str) -> int:
    """The floor of a biascore module: its room is biascore.<room>[.…] (the package itself is the top)."""
    room = module.split(".")[1] if "." in module else "__init__"
    return next(i for i, rooms in enumerate(FLOORS) if room in rooms)


def test_every_room_of_the_engine_is_on_a_floor():
    rooms = {p.stem if p.is_file() else p.name for p in (REPO / "biascore").iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").is_file())}
    assert rooms == {r for floor in FLOORS for r in floor}


def test_no_arrow_runs_back_up():
    """No module imports one on a higher floor (imports inside functions count): the store knows no model, the
    model no method contract, the contract no input, the runner no method, the methods no shell."""
    graph = import_graph(project_modules())
    up = sorted(f"{a} -> {b}" for a, targets in graph.items() if a.startswith("biascore")
                for b in targets if b.startswith("biascore") and floor_of(b) > floor_of(a))
    assert not up, up


def test_few_modules_directly_in_biascore():
    top = [p.name for p in (REPO / "biascore").glob("*.py")]
    assert len(top) <= 8, top


@pytest.mark.parametrize("method", METHODS)
def test_each_method_is_a_folder_with_its_method(method):
    folder = REPO / "biascore" / "methods" / method
    assert (folder / "__init__.py").is_file() and (folder / "method.py").is_file()


def test_every_method_folder_is_registered():
    from biascore.methods import discover

    folders = {p.parent.name for p in (REPO / "biascore" / "methods").glob("*/method.py")}
    assert folders == set(METHODS) and {"attribution", "association", "heads"} <= folders
    assert {type(m).__module__.rsplit(".", 2)[-2] for m in discover()} == folders


def _draws_a_title(path: Path) -> bool:
    """A page: a module that, when run, draws a title (``st.title`` at module level, or in a function of the
    module that it calls at module level, e.g. ``main()``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))

    def titles(node: ast.AST) -> bool:
        return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "title"
                   for c in ast.walk(node))

    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Expr) else None
        if not isinstance(call, ast.Call):
            continue
        if isinstance(call.func, ast.Attribute) and call.func.attr == "title":
            return True
        if isinstance(call.func, ast.Name) and call.func.id in functions and titles(functions[call.func.id]):
            return True
    return False


def test_cli_and_dashboard_menus_come_from_the_registry():
    from biascore.cli.main import build_parser
    from biascore.contract.method import Method
    from biascore.contract.registry import register
    from biascore.methods import discover
    from views.menu import PAGES, menu_pages

    methods = discover()
    commands = set(next(a for a in build_parser()._actions if a.dest == "command").choices)
    assert {m.cli_command for m in methods} | {"run", "methods", "benchmarks", "data"} <= commands
    assert {"score", "seat", "ceat", "logprob", "heads", "labdet", "fields", "words"} <= commands  # kept for scripts
    assert set(PAGES) <= {m.name for m in methods}  # the dashboard maps only registered methods
    pages = menu_pages()
    assert all((REPO / p.path).is_file() for p in pages if p.path)
    # every page (a views/ module that draws a title at module level) is in the menu
    drawn = {f"views/pages/{f.name}" for f in (REPO / "views").rglob("*.py") if _draws_a_title(f)}
    assert drawn and {p.path for p in pages if p.path} == drawn

    class Clash(Method):  # a second class may not take a registered name
        name = methods[0].name

    with pytest.raises(ValueError, match="registered twice"):
        register(Clash)


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_the_engine_never_imports_its_shells():
    """No module of the engine (methods/, models/, store/, inputs/, contract/, runs/, stats/ and the ground
    floor's modules) imports the CLI or the dashboard, and no engine file names a dashboard page."""
    engine = [*(p for f in ENGINE for p in (REPO / "biascore" / f).rglob("*.py")),
              *(REPO / "biascore" / f"{m}.py" for m in GROUND)]
    for path in engine:
        bad = {n for n in _imports(path) if n.startswith(("biascore.cli", "views"))}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"
    for path in (REPO / "biascore").rglob("*.py"):
        assert "views/" not in path.read_text(encoding="utf-8"), f"{path.relative_to(REPO)} names a views/ path"


def test_no_module_outside_the_cli_imports_the_cli():
    """Only biascore/cli/ itself and the entry point biascore/__main__.py import ``biascore.cli``: the review,
    snapshot and sweep subcommands declare their arguments with biascore/models/args.py, a leaf below them all
    (imports inside functions count)."""
    graph = import_graph(project_modules())
    allowed = {"biascore.__main__"}
    bad = {name: sorted(t for t in targets if t == "biascore.cli" or t.startswith("biascore.cli."))
           for name, targets in graph.items()
           if name.startswith("biascore") and not name.startswith("biascore.cli") and name not in allowed}
    assert not {k: v for k, v in bad.items() if v}
    below = ("biascore.models.", *(f"biascore.{m}" for m in GROUND))
    assert all(t.startswith(below) for t in graph["biascore.models.args"])  # below the CLI and methods


def test_only_the_progress_adapter_draws_progress_bars():
    """The engine reports progress through ProgressFn only; biascore/progress.py is the one place a bar is
    drawn (the dashboard draws its own widget)."""
    users = {str(p.relative_to(REPO)) for p in (REPO / "biascore").rglob("*.py")
             if any(n == "tqdm" or n.startswith("tqdm.") for n in _imports(p))}
    assert users == {"biascore/progress.py"}


def test_no_streamlit_in_the_engine():
    graph_sources = project_modules()
    for name, path in graph_sources.items():
        if not name.startswith("biascore"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not any(n == "streamlit" or n.startswith("streamlit.") for n in names), name


def test_console_script_points_at_the_cli():
    import importlib
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    module, _, func = project["scripts"]["biascore"].partition(":")
    main = getattr(importlib.import_module(module), func)
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


#: What reads the result cache or makes a cache key: only the results store and the runner (biascore/store/,
#: biascore/runs/) may.
CACHE_READS = ("read_table", "read_parquet", "check_entry(", "load_entry(", ".entries(", "entry_meta(", "open_entry",
               ".progress(key", "result_key(", "CacheKey(", "CacheKey.make(", "get_or_compute(", ".fingerprint(")
#: intermediate caches kept beside the results (not a method's result; no shell reads them): the USAS tags and
#: the one embedder's features; the benchmark loader, which reads a parquet benchmark file (an input, not the
#: cache), load_result, which reads a result file the user saved (Result.to_parquet) or a cache file the user
#: names (its key from the footer; the file itself is opened through the runner's door), and a served model, whose
#: weights fingerprint is measured on its server (not the cache's fingerprint)
INTERMEDIATE = {"biascore/methods/fields/tagging.py": {"CacheKey.make(", "get_or_compute("},
                "biascore/models/embeddings.py": {"CacheKey(", "result_key(", "get_or_compute("},
                "biascore/inputs/datasets.py": {"read_table", "read_parquet"},
                "biascore/api.py": {"read_table", "entry_meta("},
                "biascore/models/served/model.py": {".fingerprint("},
                "biascore/models/served/fingerprint.py": {".fingerprint("}}


def test_no_cache_reads_outside_the_runner():
    """Pages, the API, snapshots, sweeps and the methods' own modules ask the runner's door
    (biascore/runs/runner.py) for results: no parquet read, no listing or glob of the cache, no key rebuilt."""
    files = [*(REPO / "biascore").rglob("*.py"), *(REPO / "views").rglob("*.py"), REPO / "app.py"]
    for path in files:
        rel = str(path.relative_to(REPO))
        if rel.startswith(("biascore/store/", "biascore/runs/")):
            continue
        text = path.read_text(encoding="utf-8")
        bad = {s for s in CACHE_READS if s in text} - INTERMEDIATE.get(rel, set())
        assert not bad, f"{rel} reads the cache or makes a key itself: {sorted(bad)}"
        assert not ("glob(" in text and "cache" in text and rel.startswith("views/")), f"{rel} globs the cache"


def test_no_page_imports_a_scorer_module():
    """Pages get results from the runner's door and the method's contract, never from a scorer module's
    wrappers (biascore/methods/*/scorer.py)."""
    for path in (REPO / "views").rglob("*.py"):
        bad = {n for n in _imports(path) if n.startswith("biascore.methods.") and ".scorer" in n}
        assert not bad, f"{path.relative_to(REPO)} imports {sorted(bad)}"


def dashboard_imports(root: Path = REPO) -> set[str]:
    """The biascore modules app.py and views/ import (anywhere in a file; ``from pkg import name`` counts as
    ``pkg.name`` when that is a module, else as ``pkg``)."""
    modules = {**project_modules(root), "app": root / "app.py"}
    graph = import_graph(modules)
    return {t for name, targets in graph.items() if name == "app" or name.startswith("views")
            for t in targets if t.startswith("biascore")}


def test_pages_go_through_few_doors_and_never_into_a_method():
    """Pages import the public API (biascore.api), the runner's door, the ground floor's text helpers and the
    faces of review, snapshots and sweeps: at most 8 biascore modules, and no module of a method's folder (what
    a bespoke page draws with is the method's declared ``drawing``, read through the registry)."""
    used = dashboard_imports()
    assert len(used) <= 8, sorted(used)
    inner = sorted(m for m in used if m.startswith("biascore.methods"))
    assert not inner, inner


def test_the_door_count_sees_a_method_module(tmp_path):
    (tmp_path / "biascore" / "methods" / "m").mkdir(parents=True)
    (tmp_path / "views").mkdir()
    for init in ("biascore", "biascore/methods", "biascore/methods/m"):
        (tmp_path / init / "__init__.py").write_text("")
    (tmp_path / "biascore" / "methods" / "m" / "table.py").write_text("")
    (tmp_path / "app.py").write_text("from biascore.methods import m\n")
    (tmp_path / "views" / "page.py").write_text("def f():\n    from biascore.methods.m.table import x\n")
    assert dashboard_imports(tmp_path) == {"biascore.methods.m", "biascore.methods.m.table"}


#: the page memos that hold no result: the one model handle per name (shared by every session) and a benchmark's
#: minimal-pair checks (an input, ~50 ms a render); what pages computed (sentence attentions, the paired
#: comparison, a review's before/after) are method runs through the runner
NOT_RESULTS = {"views/kit/models.py:_handle", "views/pages/translation_review.py:review_pairs"}


def test_pages_keep_no_memo_of_results():
    """The runner remembers its reads by stored version (biascore/runs/memo.py), so no page keeps a Streamlit memo
    (st.cache_data / st.cache_resource) of a result or of anything read from the cache."""
    memos = {f"{path.relative_to(REPO)}:{name}" for path in [REPO / "app.py", *(REPO / "views").rglob("*.py")]
             for name in re.findall(r"@st\.cache_(?:data|resource)\b[^@]*?\ndef (\w+)", path.read_text("utf-8"))}
    assert memos <= NOT_RESULTS, sorted(memos - NOT_RESULTS)


def test_no_page_builds_a_result_cache():
    """Pages ask the runner for results; none opens the cache itself."""
    for path in [REPO / "app.py", *(REPO / "views").rglob("*.py")]:
        assert "ResultCache" not in path.read_text(encoding="utf-8"), path.relative_to(REPO)
