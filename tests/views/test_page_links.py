"""Page links (issue 33, item 5): a URL's parameters either set the page — and stay in the address bar, which then
is the link to the view — or are refused in one visible line and removed from the address bar (views/kit/links.py,
one mechanism for every page): a method's options (``?n=&mode=&flip=``), its input (``?input=``), a pair, a SEAT
test."""
from __future__ import annotations

from typing import Literal

import pytest
from streamlit.testing.v1 import AppTest

MODEL = "smollm2-135m"


@pytest.fixture
def linked_method(tmp_path, monkeypatch):
    """A method registered here with no page of its own (a generated page) whose options are a bounded whole
    number, a Literal choice and a switch; no model needed. Removed from the registry afterwards."""
    from dataclasses import dataclass

    import pandas as pd

    from biascore.contract import registry
    from biascore.inputs.kinds import PAIRS
    from biascore.contract.method import Method
    from biascore.contract.options import Options, option
    from biascore.contract.schema import columns

    @dataclass(frozen=True)
    class LinkedOptions(Options):
        n: int = option(5, minimum=1, maximum=100, help="pairs shown")
        mode: Literal["a", "b"] = option("a", help="a mode")
        flip: bool = option(False, help="flip the sign")

    @registry.register
    class Linked(Method):
        name = "linked-options"
        summary_line = "pair ids (a page-link test)"
        paper = "none (a test)"
        input_kind = PAIRS
        Options = LinkedOptions
        schema = columns([("pair_id", "int64", "the pair")])
        needs_model = False
        one_row_per_input_row = True

        def compute(self, ctx, bench, options):
            return pd.DataFrame({"pair_id": bench.frame["pair_id"].astype("int64")})

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    yield registry.lookup("linked-options")
    with registry._LOCK:
        registry._METHODS.pop("linked-options", None)


def _page():
    from views.kit.generated import method_page

    method_page("linked-options")


def _open(**query) -> AppTest:
    at = AppTest.from_function(_page, default_timeout=300)
    at.query_params.update(model=MODEL, **query)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _q(at: AppTest, key: str) -> str:
    """The address bar's ``key`` (AppTest keeps a value the page wrote as a one-item list)."""
    value = at.query_params[key]
    return value[0] if isinstance(value, list) else value


def _refusals(at: AppTest) -> list[str]:
    return [w.value for w in at.warning if "was not applied" in w.value]


def test_bad_option_values_in_a_link_are_refused_in_one_line_each_and_leave_the_address_bar(linked_method):
    at = _open(input="demo", n="99999", mode="zzz", flip="maybe")
    lines = _refusals(at)
    assert len(lines) == 3 and all("\n" not in line for line in lines), lines
    assert any("` n `=` 99999 `" in line and "must be from 1 to 100" in line for line in lines), lines
    assert any("` mode `=` zzz `" in line and "is not one of a" in line for line in lines), lines
    assert any("` flip `=` maybe `" in line and "true or false" in line for line in lines), lines
    for name in ("n", "mode", "flip"):
        assert name not in at.query_params  # the bad values are gone from the address bar
    assert at.number_input(key="linked-options_opt_n").value == 5
    assert at.selectbox(key="linked-options_opt_mode").value == "a"
    assert at.checkbox(key="linked-options_opt_flip").value is False
    at.run()  # a rerun (any click) keeps saying why, while the page shows what it put in their place
    assert len(_refusals(at)) == 3
    at.number_input(key="linked-options_opt_n").set_value(8).run()  # the user sets n: its refusal is over
    assert len(_refusals(at)) == 2 and _q(at, "n") == "8"


def test_good_option_values_in_a_link_set_the_page_and_the_address_bar_follows_it(linked_method):
    at = _open(input="demo", n="7", mode="b", flip="true")
    assert not _refusals(at)
    assert at.number_input(key="linked-options_opt_n").value == 7
    assert at.selectbox(key="linked-options_opt_mode").value == "b"
    assert at.checkbox(key="linked-options_opt_flip").value is True
    assert (_q(at, "n"), _q(at, "mode"), _q(at, "flip")) == ("7", "b", "true")
    at.number_input(key="linked-options_opt_n").set_value(9).run()  # "share this view" = the address bar
    assert _q(at, "n") == "9"
    at.selectbox(key="linked-options_opt_mode").set_value("a").run()  # back to the default: left out
    assert "mode" not in at.query_params and not _refusals(at)


def test_an_unknown_input_in_a_link_is_refused_not_replaced_silently(linked_method):
    at = _open(input="no-such-benchmark")
    lines = _refusals(at)
    assert len(lines) == 1 and "` input `=` no-such-benchmark `" in lines[0] and "showing demo" in lines[0], lines
    assert _q(at, "input") == "demo"  # what the page shows, not the bad value
    good = _open(input="demo")
    assert not _refusals(good) and _q(good, "input") == "demo"
