"""Safe by default and public mode (BIASCORE_PUBLIC=1), page by page with Streamlit's AppTest.

* public mode: no page offers a field for a server path or a free model name; every model choice is on the
  server's allow-list (BIASCORE_MODELS); no server path is printed;
* every mode: a link's ``?model=`` naming a folder is refused before the server reads it; a typed model path
  creates nothing on disk; an exception a page does not handle is one line on the page (no traceback, and
  no server path in public mode);
* .streamlit/config.toml binds loopback and sends no usage statistics.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from test_dashboard_pages import open_page as run_page, type_pair

from biascore.models.names import display_name
from tests.conftest import DATA_DIR, TINY_MLM
from views.menu import menu_pages

REPO = Path(__file__).resolve().parents[2]
PAGES = [Path(page.path).stem for page in menu_pages()]  # app.py's menu
#: labels of fields that would let a browser user name a server path or an arbitrary model
PATH_LABEL = re.compile(r"path|folder|director|file|sqlite|gguf|hub id", re.IGNORECASE)


@pytest.fixture
def public(monkeypatch, tiny_mlm):
    """Public mode with the tiny MLM as the only allowed model (fast on every page)."""
    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    monkeypatch.setenv("BIASCORE_MODELS", str(tiny_mlm.source))
    return str(tiny_mlm.source)


@pytest.fixture
def opened_models(monkeypatch):
    """Every name the engine is asked to resolve into model files (a URL must not choose them)."""
    from biascore.models import loading as models

    seen: list[str] = []
    original = models.resolve_source

    def spy(name, *args, **kwargs):
        seen.append(str(name))
        return original(name, *args, **kwargs)

    monkeypatch.setattr(models, "resolve_source", spy)
    return seen


def page_dump(at: AppTest) -> str:
    """Everything the page sends to the browser: every element's message (texts, labels, options as shown,
    tables, chart specs, download names), and the URL parameters."""
    parts, stack = [], [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None:
            parts.append(str(proto))
        stack.extend(getattr(node, "children", {}).values())
    for df in at.dataframe:  # the table's cells, decoded (the message holds them as Arrow bytes)
        parts.append(df.value.to_csv())
    parts.append(repr(dict(at.query_params)))
    return "\n".join(parts)


def server_paths(tmp_path_factory) -> list[str]:
    """Folders of this server that no public page may name: the project, the data and cache directories, the
    model folders, the temporary directories (tests put models and caches there)."""
    return [str(REPO), str(DATA_DIR), str(TINY_MLM), str(TINY_MLM.parent), os.environ["BIASCORE_CACHE_DIR"],
            str(tmp_path_factory.getbasetemp()), tempfile.gettempdir().rstrip("/") + "/"]


def shown_text(at: AppTest) -> str:
    parts = [e.value for kind in ("markdown", "caption", "text", "info", "warning", "error", "success", "title",
                                  "header", "subheader") for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def assert_no_path_or_free_model_field(at: AppTest, page: str, allowed: list[str]) -> None:
    for field in list(at.text_input) + list(at.text_area):
        assert not PATH_LABEL.search(field.label), f"{page}: field {field.label!r} in public mode"
    for box in list(at.selectbox) + list(at.multiselect):
        assert "other…" not in box.options, f"{page}: {box.label!r} offers a free model name"
        if "model" in box.label.lower():
            named = [o for o in box.options if o not in ("(none)",)]  # as shown: display names
            shown = {display_name(m) for m in allowed}
            assert set(named) <= shown, f"{page}: {box.label!r} offers {named} (allowed: {shown})"


@pytest.fixture(scope="module")
def scored_world(tmp_path_factory, tiny_mlm, smollm):
    """The session cache holds runs on the demo pairs of: the allowed model, given as a folder (the tiny MLM);
    another local folder that is not on the allow-list; smollm2-135m (not on it, named by its alias)."""
    from biascore.models.loading import load_model
    from biascore.runs import runner
    from biascore.methods import get

    other = tmp_path_factory.mktemp("private-models") / "secret-checkpoint"
    shutil.copytree(TINY_MLM, other)
    for lm in (tiny_mlm, load_model(str(other)), smollm):
        runner.run(get("attribution"), lm, "demo", limit=6)
    return {"other": str(other)}


@pytest.mark.parametrize("page", PAGES)
def test_public_mode_offers_no_path_and_no_free_model(page, public, data_dir, opened_models, scored_world,
                                                      tmp_path_factory):
    at = run_page(page, benchmark="demo")
    if page == "nationality":  # the second model's selector appears behind a checkbox
        at.checkbox(key="compare").check().run()
        assert not at.exception
    if page == "try_pair":  # a scored pair: the model is named on the page
        type_pair(at, "Women don't know how to drive.", "Men don't know how to drive.")
        assert at.metric
    assert_no_path_or_free_model_field(at, page, [public])
    dump = page_dump(at)
    for path in server_paths(tmp_path_factory):
        assert path not in dump, f"{page} names the server path {path}"
    assert "secret-checkpoint" not in dump, f"{page} lists a model that is neither allowed nor named without a path"
    assert set(opened_models) <= {public}, f"{page} opened models outside the allow-list: {set(opened_models)}"


def test_public_overview_lists_allowed_models_by_display_name(public, scored_world, tmp_path_factory):
    """The Overview in public mode: the allowed folder model under its folder name, the alias-named model, not
    the other folder; its CSV (the long table) names no path."""
    at = run_page("overview")
    long = next(df.value for df in at.dataframe if "B_ci_low" in df.value.columns)
    models = set(long.model)
    assert display_name(public) in models and "smollm2-135m" in models
    assert not any("/" in m or "secret-checkpoint" in m for m in models), models
    for path in server_paths(tmp_path_factory):
        assert path not in long.to_csv(index=False)


@pytest.mark.parametrize("public_mode", [True, False])
def test_a_link_cannot_make_the_server_read_a_folder(public_mode, monkeypatch, tmp_path, opened_models):
    folder = tmp_path / "someone_elses_folder"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    if public_mode:
        monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    monkeypatch.setenv("BIASCORE_MODELS", "smollm2-135m")
    for page in ("token_attributions", "semantic_fields"):
        at = run_page(page, model=str(folder), benchmark="demo")
        assert any("does not offer" in w.value for w in at.warning), page
        assert str(folder) not in opened_models, f"{page} resolved the folder named in the URL"
        assert str(folder) not in shown_text(at)


def test_public_mode_refuses_a_link_to_a_model_off_the_allow_list(public, opened_models):
    at = run_page("try_pair", model="gpt2")
    assert any("does not offer" in w.value for w in at.warning)
    assert at.selectbox(key="model_select").value == public
    assert "gpt2" not in opened_models


def test_a_typed_model_path_creates_nothing(tmp_path):
    target = tmp_path / "new" / "model"
    at = run_page("try_pair")
    at.selectbox(key="model_select").set_value("other…").run()
    at.text_input(key="model_custom").set_value(str(target)).run()
    type_pair(at, "Women don't know how to drive.", "Men don't know how to drive.")
    assert not at.exception
    assert at.error  # the loader's one-line message: no such model
    assert not (tmp_path / "new").exists() and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("public_mode", [True, False])
def test_an_unhandled_error_is_one_line_without_paths_in_public_mode(public_mode, monkeypatch, smollm):
    import views.kit.attribution

    secret = "/srv/private/cache/attribution/abc123.parquet"

    def broken(*args, **kwargs):
        raise OSError(f"cannot read {secret}: footer checksum mismatch\nTraceback-like second line")

    monkeypatch.delenv("BIASCORE_RAISE_PAGE_ERRORS")
    monkeypatch.setattr(views.kit.attribution, "live_pair", broken)
    if public_mode:
        monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    at = run_page("try_pair")
    type_pair(at, "Women don't know how to drive.", "Men don't know how to drive.")
    assert not at.exception
    assert len(at.error) == 1
    message = re.sub(r"\\(.)", r"\1", at.error[0].value)  # as shown: the markdown source escapes every mark
    assert "\n" not in message and "Traceback" not in message and "footer checksum mismatch" in message
    assert (secret not in message) if public_mode else (secret in message)


def test_streamlit_config_is_safe_by_default():
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["address"] == "127.0.0.1"
    assert config["browser"]["gatherUsageStats"] is False
    assert config["client"]["showErrorDetails"] == "none"


def test_streamlit_config_spends_no_cpu_on_reloading_or_full_collections():
    """A served dashboard watches no source files and runs no full gc.collect(2) after each rerun: together they
    were most of the server's CPU per person (bench/load_test.py)."""
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["fileWatcherType"] == "none"
    assert config["runner"]["postScriptGC"] is False


def test_figure_export_page_loads_nothing_from_outside(monkeypatch):
    """PNG/SVG export renders in kaleido's headless page: plotly.js from the installed package, no MathJax
    from a CDN (kaleido's default)."""
    import kaleido
    import plotly.graph_objects as go

    from views.kit.charts import figure_bytes

    seen = {}

    def capture(fig, opts=None, kopts=None, **kwargs):
        seen.update(kopts or {})
        return b""

    monkeypatch.setattr(kaleido, "calc_fig_sync", capture)
    figure_bytes(go.Figure(go.Bar(x=[1], y=[1])), "svg")
    page = kaleido.PageGenerator(plotly=seen.get("plotlyjs"), mathjax=seen.get("mathjax")).generate_index()
    assert re.findall(r'src="(https?://[^"]+)"', page) == []
