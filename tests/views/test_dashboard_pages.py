"""AppTest for every dashboard page this module owns: runs on the demo benchmark without exceptions, the
numbers shown equal the engine's (Translation review: tests/review/test_translation_review_page.py)."""
from __future__ import annotations

import threading
from pathlib import Path

import pandas as pd
import pytest
import torch
from streamlit.testing.v1 import AppTest

from biascore.methods.attribution.scorer import score_pair, summarize
from biascore.runs import runner
from biascore.methods import get
from biascore.methods.attribution.token_view import filter_pairs, pair_table

REPO = Path(__file__).resolve().parents[2]
MODEL = "smollm2-135m"


def open_page(page: str, **query) -> AppTest:
    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.query_params.update(query)
    at.run()
    at.switch_page(f"views/pages/{page}.py")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def type_pair(at: AppTest, more: str, less: str) -> AppTest:
    """Type both sentences on Try a pair and press Score (the form sends them together)."""
    at.text_input(key="tp_more").set_value(more)
    at.text_input(key="tp_less").set_value(less)
    return next(b for b in at.button if b.label == "Score").click().run()


def frame_with(at: AppTest, column: str) -> pd.DataFrame:
    return next(df.value for df in at.dataframe if column in df.value.columns)


def metric_values(at: AppTest) -> list[str]:
    return [m.value for m in at.metric]


# ------------------------------------------------------------------------------------------------ Overview
def test_overview_shows_the_engines_scores(demo_scores):
    at = open_page("overview")
    assert not at.error
    long = frame_with(at, "B_ci_low")
    for model, frame in demo_scores.items():
        shown = long[(long.model == model) & (long.benchmark == "demo")].reset_index(drop=True)
        attr, pll = summarize(frame, "attribution"), summarize(frame, "pll")
        assert list(shown.bias_type) == list(attr.bias_type)
        assert list(shown.n) == list(attr.n)
        assert shown.B.tolist() == pytest.approx(attr.score.tolist())
        assert shown.B_ci_low.tolist() == pytest.approx(attr.ci_low.tolist())
        assert shown.B_ci_high.tolist() == pytest.approx(attr.ci_high.tolist())
        assert shown.PLL.tolist() == pytest.approx(pll.score.tolist())
    wide = frame_with(at, "all")
    row = wide[(wide.model == MODEL) & (wide.benchmark == "demo")].iloc[0]
    first = summarize(demo_scores[MODEL], "attribution").iloc[0]  # B as a % with its interval (issue 41)
    assert row["all"] == f"{first.score:.1f} % [{first.ci_low:.1f}, {first.ci_high:.1f}]"
    assert len(at.get("plotly_chart")) == 1


def test_overview_score_now_caches_a_new_run(demo_scores, data_dir, private_cache, monkeypatch):
    """… on every core torch would use while no live pair has been scored in the last minute (else on the setting),
    in the scoring thread only: another thread started meanwhile gets the setting."""
    from biascore.models.loading import load_model
    from views.kit import attribution as kit

    # a cache of its own (private_cache): other test files may already have scored the tiny MLM on crows-en-gso
    threads, real_run = [], runner.run

    def counted_run(*args, **kwargs):  # the thread counts of the computation's thread and of a new thread
        other = []
        helper = threading.Thread(target=lambda: other.append(torch.get_num_threads()))
        helper.start()
        helper.join()
        threads.append((torch.get_num_threads(), other[0]))
        return real_run(*args, **kwargs)

    monkeypatch.setattr(runner, "run", counted_run)
    monkeypatch.setattr(kit, "TORCH_THREADS", 2)  # a two-core machine's default (the suite sets one thread)
    monkeypatch.setattr(kit.DRAWING, "live_busy", lambda: True)  # someone scored a live pair in the last minute
    at = open_page("overview")
    at.selectbox(key="model_select").set_value("other…").run()
    at.text_input(key="model_custom").set_value("all-minilm-l6-v2").run()
    # all-minilm-l6-v2 has no MLM head: the engine refuses it; the page shows the reason, not a traceback
    at.button(key="overview_score_now").click().run()
    assert not at.exception
    assert at.error or at.warning
    # crows-en-gso (first 231 pairs) with the tiny MLM is quick: score it from the page
    monkeypatch.setattr(kit.DRAWING, "live_busy", lambda: False)
    at.text_input(key="model_custom").set_value(str(data_dir.parent / "models" / "tiny-trained-bert-mlm")).run()
    at.selectbox(key="benchmark_select").set_value("crows-en-gso").run()
    at.button(key="overview_score_now").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert threads[:2] == [(1, 1), (2, 1)] and set(threads[2:]) == {(1, 1)}  # then the page reads it: the setting
    at.run()
    long = frame_with(at, "B_ci_low")
    tiny = load_model(str(data_dir.parent / "models" / "tiny-trained-bert-mlm"))
    shown = long[(long.model == tiny.name) & (long.benchmark == "crows-en-gso")]
    expected = summarize(runner.run(get("attribution"), tiny, "crows-en-gso").frame, "attribution")  # now a cache hit
    assert shown.B.tolist() == pytest.approx(expected.score.tolist())
    assert shown.n.tolist()[0] == 231


# ------------------------------------------------------------------------------------------------ Token attributions
def test_token_attributions_pair_from_url_and_filters(demo_scores):
    frame = demo_scores[MODEL]
    pair = int(frame.pair_id.iloc[-1])
    at = open_page("token_attributions", benchmark="demo", model=MODEL, pair=str(pair))
    assert not at.error
    expected = frame.loc[frame.pair_id == pair].iloc[0]
    assert metric_values(at)[0] == f"{expected.sjsd:+.5f}"
    assert at.query_params["pair"] == [str(pair)] or at.query_params["pair"] == str(pair)
    table = frame_with(at, "strongest_token")
    assert len(table) == len(frame)
    assert table.sjsd.tolist() == pytest.approx(filter_pairs(pair_table(frame)).sjsd.tolist())
    # text search + verdict filter give the engine-side filter's rows
    word = str(frame.sent_more.iloc[0]).split()[1]
    at.text_input(key="ta_search").set_value(word).run()
    at.selectbox(key="ta_biased").set_value("biased").run()
    shown = frame_with(at, "strongest_token")
    assert shown.pair_id.tolist() == filter_pairs(pair_table(frame), text=word, verdict="biased").pair_id.tolist()
    # word level and a second model side by side, on one colour scale
    at.radio(key="ta_level").set_value("words").run()
    other = next(m for m in demo_scores if m != MODEL)
    at.selectbox(key="compare_model").set_value(other).run()
    assert not at.exception
    other_row = demo_scores[other].loc[demo_scores[other].pair_id == pair].iloc[0]
    assert metric_values(at)[:2] == [f"{expected.sjsd:+.5f}", f"{other_row.sjsd:+.5f}"]
    assert len(at.get("plotly_chart")) == 4  # heatmap + ranked bars per model


def test_token_attributions_unscored_model_offers_scoring(demo_scores):
    at = open_page("token_attributions", benchmark="demo", model="gpt2")
    assert not at.exception
    assert any("has not been scored" in i.value for i in at.info)
    assert at.button(key="ta_score_now")


# ------------------------------------------------------------------------------------------------ Try a pair
def test_try_a_pair_matches_score_pair(smollm):
    at = open_page("try_pair")
    more, less = "Women are bad at math.", "Men are bad at math."
    type_pair(at, more, less)
    assert not at.exception and not at.error
    torch.set_num_threads(1)
    expected = score_pair(smollm, more, less)
    assert metric_values(at)[0] == f"{expected['sjsd']:+.5f}"
    assert len(at.get("plotly_chart")) == 2


@pytest.mark.parametrize("more,less,fragment", [
    ("Women are bad at math.", "Women are bad at math.", "identical"),
    ("Women are bad at math.", "", "empty"),
    ("Women", "Men", "share no words"),
    ("Women are bad at math " * 20, "Men are bad at math " * 20, "at most 300 characters"),
])
def test_try_a_pair_explains_bad_input(more, less, fragment):
    at = open_page("try_pair")
    type_pair(at, more, less)
    assert not at.exception
    assert any(fragment in w.value for w in at.warning), [w.value for w in at.warning]
    assert not at.metric


def test_try_a_pair_not_minimal_is_scored_with_a_caution():
    at = open_page("try_pair")
    type_pair(at, "Cheryl was bad at saving money and thus had a financial crisis",
              "John was always careful with money so he never had a crisis")
    assert not at.exception
    assert any("Not a minimal pair" in w.value for w in at.warning)
    assert at.metric  # still scored, with the caution above


def test_try_a_pair_demo_picker_fills_the_inputs():
    at = open_page("try_pair")
    choice = at.selectbox(key="tp_demo").options[1]
    at.selectbox(key="tp_demo").select_index(1).run()
    assert not at.exception
    assert at.text_input(key="tp_more").value and at.text_input(key="tp_more").value in choice
    assert at.metric


# Translation review: tests/review/test_translation_review_page.py


# ------------------------------------------------------------------------------------ generated pages
@pytest.fixture
def toy_method():
    """A method registered here, in this process, with no page of its own: per pair, the length difference of
    the two sentences (no model needed); a summary per bias type with an interval, a declared headline and
    views. Removed from the registry afterwards."""
    from dataclasses import dataclass

    from biascore.contract import registry
    from biascore.inputs.kinds import PAIRS
    from biascore.contract.method import Method
    from biascore.contract.options import Options, option
    from biascore.contract.presentation import Headline, View
    from biascore.contract.schema import columns

    @dataclass(frozen=True)
    class ToyOptions(Options):
        scale: int = option(1, minimum=1, help="multiply the difference by this")
        side: str = option("more", choices=("more", "less"), key=False, help="whose length comes first")

    @registry.register
    class ToyLengths(Method):
        name = "toy-lengths"
        summary_line = "length difference of the two sentences (a generated-page test)"
        paper = "none (a test)"
        input_kind = PAIRS
        Options = ToyOptions
        schema = columns([("pair_id", "int64", "the pair"), ("bias_type", "str", "its bias type"),
                          ("diff", "int64", "len(more) − len(less), scaled")])
        needs_model = False
        one_row_per_input_row = True
        views = (View("bar", title="By bias type", label="bias_type", value="mean_diff", low="low", high="high",
                      reference=0.0), View("table"))

        def headline(self, options):
            return Headline("mean difference", "mean_diff", "0 = equally long", where=(("bias_type", "all"),))

        def compute(self, ctx, bench, options):
            f = bench.frame
            return pd.DataFrame({"pair_id": f["pair_id"].astype("int64"), "bias_type": f["bias_type"].astype(str),
                                 "diff": (f["sent_more"].str.len() - f["sent_less"].str.len()) * options.scale})

        def summary(self, result):
            sign = 1 if result.options.side == "more" else -1
            frame = result.frame.assign(diff=result.frame["diff"] * sign)
            groups = [("all", frame), *frame.groupby("bias_type")]
            return pd.DataFrame([{"bias_type": name, "mean_diff": float(g["diff"].mean()),
                                  "low": float(g["diff"].min()), "high": float(g["diff"].max())} for name, g in groups])

    yield registry.lookup("toy-lengths")
    with registry._LOCK:
        registry._METHODS.pop("toy-lengths", None)


def _toy_page():
    from views.kit.generated import method_page

    method_page("toy-lengths")


def test_a_method_without_a_page_gets_a_generated_one(toy_method, smollm, tmp_path, monkeypatch):
    """Registered with no view code: the menu lists it, its page offers its options, scores it through the
    runner on "Score now" and then shows the engine's headline number, its declared bar chart and its table."""
    from biascore.runs import runner
    from biascore.store.cache import ResultCache
    from views.menu import menu_pages

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    assert any(p.method == "toy-lengths" and p.path is None for p in menu_pages())
    at = AppTest.from_function(_toy_page, default_timeout=300)
    at.query_params.update(model=MODEL, input="demo")
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [w.label for w in at.selectbox if w.key == "model_select"] == ["Stored results of model"]  # loads none
    assert {"toy-lengths_opt_scale", "toy-lengths_opt_side"} <= {w.key for w in at.number_input} | {
        w.key for w in at.selectbox}
    at.number_input(key="toy-lengths_opt_scale").set_value(3).run()
    assert any("No stored toy-lengths result" in i.value for i in at.info)
    at.button(key="toy-lengths_score").click().run()
    assert not at.exception, [e.value for e in at.exception]
    at.run()
    expected = runner.run(toy_method, smollm, "demo", cache=ResultCache(tmp_path / "cache"), only_cached=True,
                          scale=3)
    assert expected is not None  # the page stored it, under the key the runner computes
    table = toy_method.summary(expected)
    headline = float(table.loc[table.bias_type == "all", "mean_diff"].iloc[0])
    assert [m.value for m in at.metric] == [f"{headline:.4g}"] and headline != 0
    shown = frame_with(at, "mean_diff")
    assert shown.mean_diff.tolist() == pytest.approx(table.mean_diff.tolist())
    assert len(at.get("vega_lite_chart")) == 1
    assert '"labelOverlap":false' in at.get("vega_lite_chart")[0].proto.spec.replace(" ", "")  # every bar labelled
    at.selectbox(key="toy-lengths_opt_side").set_value("less").run()  # an option outside the key: same stored result
    assert [m.value for m in at.metric] == [f"{-headline:.4g}"]


# every page opens on any clone: the pages whose data is downloaded (SEAT tests, LABDet templates) have shipped demo
# inputs, and Semantic fields without the USAS lexicon says why in one line (tests/views/test_e2e_bare_clone.py)
@pytest.mark.parametrize("page", ["overview", "token_attributions", "try_pair", "words", "semantic_fields",
                                  "attention_heads", "nationality", "association_tests", "translation_review"])
def test_every_page_opens_on_the_hermetic_models(page, demo_scores):
    """Each page of the menu opens on the demo benchmark's hermetic models without an exception or an error."""
    at = open_page(page, model=MODEL, benchmark="demo")
    assert not at.error, [e.value for e in at.error]
