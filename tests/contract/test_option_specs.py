"""Option specs at their edges (issue 33, item 6): a bound on one side only, exclusive, gives the one-line range
refusal in every shell (the options' own check and the real command line); a ``Literal[...]`` option is a choice
(the CLI's ``choices=``, a select box on the pages through :mod:`biascore.contract.presentation`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import pytest
from streamlit.testing.v1 import AppTest

from biascore.contract.options import OptionError, Options, option
from biascore.contract.presentation import option_widgets
from tests.contract.test_method_plugins import cli
from tests.conftest import REPO


@dataclass(frozen=True)
class Edges(Options):
    share: float = option(0.5, minimum=0.0, exclusive=True, help="a positive share")
    cap: float = option(0.5, maximum=1.0, exclusive=True, help="below one")
    floor: float = option(0.5, minimum=0.0, help="not negative")
    style: Literal["x", "y"] = option("x", help="a style")
    styles: tuple[Literal["x", "y"], ...] | None = option(None, repeat=True, help="some styles")


@pytest.mark.parametrize("given, line", [
    ({"share": 0.0}, "--share: must be above 0, got 0"),
    ({"share": -1.5}, "--share: must be above 0, got -1.5"),
    ({"cap": 1.0}, "--cap: must be below 1, got 1"),
    ({"floor": -0.25}, "--floor: must be at least 0, got -0.25"),
    ({"style": "z"}, "--style: 'z' is not one of x, y"),
    ({"styles": ["x", "q"]}, "--styles: 'q' is not one of x, y"),
])
def test_one_sided_and_literal_options_refuse_in_one_line(given, line):
    with pytest.raises(OptionError) as err:
        Edges.build(**given)
    assert str(err.value) == line


def test_values_inside_one_sided_bounds_and_literal_choices_are_kept():
    o = Edges.build(share=1e-9, cap=-3.0, floor=0.0, style="y", styles=["y", "x"])
    assert (o.share, o.cap, o.floor, o.style, o.styles) == (1e-9, -3.0, 0.0, "y", ("y", "x"))


def test_a_literal_option_is_a_choice_for_every_shell():
    specs = {s.name: s for s in Edges.specs()}
    assert specs["style"].choices == ("x", "y") and specs["style"].base is str
    assert specs["styles"].choices == ("x", "y")
    widgets = {w.name: w for w in option_widgets(Edges)}
    assert widgets["style"].kind == "choice" and widgets["style"].choices == ("x", "y")
    assert widgets["styles"].kind == "choices"


def _page():
    from dataclasses import dataclass as dc
    from typing import Literal as Lit

    import streamlit as st

    from biascore.contract.options import Options as Opts, option as opt
    from views.kit.widgets import option_inputs

    @dc(frozen=True)
    class PageOptions(Opts):
        style: Lit["x", "y"] = opt("x", help="a style")

    class Stub:
        name = "stub"
        Options = PageOptions

    chosen = option_inputs(Stub, "stub")
    st.write(f"chosen={chosen.style if chosen else None}")


def test_a_literal_option_is_a_select_box_on_a_page():
    at = AppTest.from_function(_page, default_timeout=60)
    at.run()
    assert not at.exception and not at.text_input
    box = at.selectbox(key="stub_style")
    assert list(box.options) == ["x", "y"]
    box.select("y").run()
    assert "chosen=y" in [m.value for m in at.markdown]


PLUGIN = '''"""A plugin method whose options have a one-sided exclusive bound and a Literal choice."""
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from biascore.inputs.kinds import PAIRS
from biascore.contract.method import Method
from biascore.contract.options import Options, option
from biascore.contract.schema import columns


@dataclass(frozen=True)
class EdgeOptions(Options):
    share: float = option(0.5, minimum=0.0, exclusive=True, help="a positive share")
    style: Literal["x", "y"] = option("x", help="a style")


class Edge(Method):
    name = "edge"
    summary_line = "the pair ids (a test plugin)"
    paper = "none (a test plugin)"
    input_kind = PAIRS
    Options = EdgeOptions
    schema = columns([("pair_id", "int64", "the pair")])
    needs_model = False
    one_row_per_input_row = True

    def compute(self, ctx, bench, options):
        return pd.DataFrame({"pair_id": bench.frame["pair_id"].astype("int64")})
'''


@pytest.fixture(scope="module")
def edge_site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    (site / "edge_plugin.py").write_text(PLUGIN)
    info = site / "biascore_edge-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: biascore-edge\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[biascore.methods]\nedge = edge_plugin:Edge\n")
    return site


def test_the_command_line_offers_literal_choices_and_refuses_a_one_sided_bound_in_one_line(edge_site, tmp_path, processes):
    helped = cli(edge_site, tmp_path, "run", "edge", "--help")
    assert helped.returncode == 0, helped.stderr
    assert "--style {x,y}" in helped.stdout and "above 0" in helped.stdout
    wrong = cli(edge_site, tmp_path, "run", "edge", "--style", "z")
    assert wrong.returncode == 2 and "invalid choice: 'z'" in wrong.stderr and "Traceback" not in wrong.stderr
    low = cli(edge_site, tmp_path, "run", "edge", "--share", "0")
    assert low.returncode == 2 and "Traceback" not in low.stderr, low.stderr
    lines = [line for line in low.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].endswith("--share: must be above 0, got 0"), low.stderr


@dataclass(frozen=True)
class Texts(Options):
    flag: bool = option(False, help="a switch")
    n: int | None = option(None, minimum=1, help="a count or none")
    styles: tuple[Literal["x", "y"], ...] | None = option(None, repeat=True, help="some styles")


def test_one_reading_of_option_text_for_sweeps_and_links():
    """A sweep's ``--options`` and a dashboard link read text into a value the same way (parse_text), then build."""
    from biascore.contract.options import parse_text

    specs = {s.name: s for s in Texts.specs()}
    assert [parse_text(specs["flag"], t) for t in ("on", "Yes", "1", "off", "no", "FALSE")] == [True] * 3 + [False] * 3
    assert parse_text(specs["n"], " 7 ") == 7 and parse_text(specs["n"], "none") is None
    assert parse_text(specs["styles"], "x, y,") == ("x", "y")
    for name, text, line in [("flag", "maybe", "--flag: expected true or false, got 'maybe'"),
                             ("n", "2.5", "--n: expected a whole number, got '2.5'")]:
        with pytest.raises(OptionError) as err:
            parse_text(specs[name], text)
        assert str(err.value) == line
