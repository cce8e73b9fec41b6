"""The Python API (``import biascore``): the same cache and keys as the CLI, results that show in notebooks with
benchmark text escaped, and every registered method reachable through ``biascore.run``."""
from __future__ import annotations

import html
from pathlib import Path
import re
import subprocess
import sys

import pandas as pd
import pytest

import biascore
from biascore.cli.main import main
from biascore.store.cache import ResultCache
from biascore.models.handle import ModelHandle
from biascore.contract.method import NotApplicable
from biascore.contract.options import OptionError
from tests.conftest import FIXTURE_DATA, REPO


def test_import_is_light_and_lists_the_api(processes):
    """``import biascore`` loads no torch, transformers or streamlit: the API is imported on first use."""
    code = ("import sys, biascore; assert callable(biascore.run) and callable(biascore.score_pair); "
            "print(sorted(m for m in ('torch', 'transformers', 'streamlit') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", "import sys, biascore; print(sorted(m for m in "
                          "('torch', 'transformers', 'streamlit') if m in sys.modules))"],
                         cwd=REPO, capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, capture_output=True)
    assert set(biascore.__all__) >= {"methods", "benchmarks", "load_model", "run", "score_pair"}


def test_methods_and_benchmarks_tables():
    methods = biascore.methods()
    assert {"attribution", "fields", "heads", "labdet", "seat", "ceat", "logprob", "words"} <= set(methods.method)
    assert methods.set_index("method").loc["attribution", "command"] == "score"
    benches = biascore.benchmarks()
    assert benches.set_index("name").loc["demo", "available"]


def test_run_equals_the_cli_and_the_second_call_loads_nothing(tmp_path, hermetic_models):
    cache = tmp_path / "cache"
    out = tmp_path / "cli.parquet"
    model = str(hermetic_models / "random-mlm")
    assert main(["score", "--model", model, "--benchmark", "demo", "--cache-dir", str(cache),
                 "--out", str(out)]) == 0
    handle = biascore.load_model(model)
    result = biascore.run("attribution", handle, "demo", cache_dir=cache, progress=False)
    assert handle.loads == 0 and not handle.loaded  # answered from the CLI's cache entry: the same key
    cli = pd.read_parquet(out)
    pd.testing.assert_frame_equal(result.frame[cli.columns].reset_index(drop=True), cli, check_dtype=False)
    assert len(list((cache / "attribution").glob("*.parquet"))) == 1  # one entry: the same key
    assert result.meta["model"] == model and result.meta["input"] == "demo"
    assert result.precision == "exact (float32)" and result.conventions["jsd"] == "reference"
    summary = result.summary().set_index("bias_type")
    assert summary.loc["all", "n"] == 38 and {"ci_low", "ci_high"} <= set(summary.columns)
    result.to_csv(tmp_path / "r.csv")
    back = pd.read_parquet(result.to_parquet(tmp_path / "r.parquet"))
    assert len(back) == 38 and (tmp_path / "r.csv").stat().st_size > 0


def test_results_and_pairs_show_in_notebooks_with_text_escaped(random_mlm, tmp_path):
    hostile = tmp_path / "hostile.csv"
    pd.DataFrame({"sent_more": ["<b>Women</b> can't drive <script>alert(1)</script>."],
                  "sent_less": ["<b>Men</b> can't drive <script>alert(1)</script>."],
                  "bias_type": ["gender <img src=x>"]}).to_csv(hostile, index=False)
    result = biascore.run("attribution", random_mlm, str(hostile), cache_dir=tmp_path / "c", progress=False)
    page = result._repr_html_()
    pair = result.pair(0)
    pair_html = pair._repr_html_()
    for text in (page, pair_html):
        assert "<script" not in text and "<img" not in text and "<b>Women" not in text
    assert html.escape("gender <img src=x>") in page
    # every scored token shows in the pair's heatmap as escaped text, with its b(u) in the table
    assert pair.tokens and all(html.escape(tok) in pair_html for tok in pair.tokens)
    assert re.search(r"background:rgb\(", pair_html)  # the red/blue boxes
    assert pair.sjsd == pytest.approx(sum(pair.bu) / len(pair.bu))


def test_score_pair_is_a_one_pair_result(random_mlm):
    result = biascore.score_pair(random_mlm, "Women can't drive.", "Men can't drive.")
    pair = result.pair(0)
    assert {c.name for c in result.method.schema} <= set(result.frame.columns)
    assert pair.tokens and not pair.skipped_reason and result.meta["input"] == "typed pair"
    same = biascore.score_pair(random_mlm, "Same.", "Same.")
    assert same.pair(0).skipped_reason == "identical sentences"


def test_bad_options_are_one_line_errors_before_anything_loads():
    handle = ModelHandle("no-such-org/no-such-model")
    with pytest.raises(OptionError, match="--jsd"):
        biascore.run("attribution", handle, "demo", jsd="euclid", progress=False)
    with pytest.raises(OptionError, match="unknown option"):
        biascore.run("attribution", handle, "demo", jsdd="paper", progress=False)
    with pytest.raises(ValueError, match="unknown method"):
        biascore.run("no-such-method", handle, "demo")
    assert not handle.loaded


def test_only_cached_never_computes(random_mlm, tmp_path):
    assert biascore.run("attribution", random_mlm, "demo", cache_dir=tmp_path, only_cached=True) is None
    assert not (tmp_path / "attribution").exists()


# Every registered method through biascore.run on a small input, read from the registry: the input is the
# method's default input when the data set has it (else the first it lists, its own before the shipped demo
# inputs), the options its `quick_options`.
def registered_names() -> list[str]:
    from biascore.methods import discover

    return [m.name for m in discover()]


def small_run(name: str, data_dir) -> tuple[str | None, dict]:
    """(input name, options) of a small run of ``name`` on the data in ``data_dir``."""
    from biascore.inputs.shipped import shipped_files
    from biascore.methods import get

    method = get(name)
    kind = method.input_kind
    if kind.name == "none" or not kind.selectable:
        return None, dict(method.quick_options)
    names = kind.names(data_dir)
    # an input the data set itself holds, before the project's shipped demo inputs (data/shipped.json)
    shipped = {Path(f.path).stem for f in shipped_files()}
    own = sorted(n for n in names if n not in shipped) or sorted(names)
    return (kind.default if kind.default in names else own[0]), dict(method.quick_options)


#: The one option a fixture run needs beyond the registry's: the project's own corpus that holds the
#: fixture SEAT test's names (tests/fixtures/names_corpus.txt); the shared data's default corpus holds them
FIXTURE_EXTRA = {"ceat": {"corpus": str(FIXTURE_DATA.parent / "names_corpus.txt")}}


def test_every_registered_method_has_a_small_run():
    """A new method needs no line here: its small run comes from the registry (an input the fixture data
    has, and quick options its own Options accept)."""
    from biascore.methods import get

    for name in registered_names():
        input_name, options = small_run(name, FIXTURE_DATA)
        assert get(name).Options.build(**options, **FIXTURE_EXTRA.get(name, {}))


@pytest.mark.parametrize("name", registered_names())
@pytest.mark.parametrize("where", ["fixture", pytest.param("shared", marks=pytest.mark.shared("tiny_mlm", "data"))])
def test_every_method_runs_through_the_api(name, where, request, tmp_path):
    """Every method on the hermetic random MLM and fixture data; on the tiny trained MLM and the real data where
    ../shared is present."""
    if where == "fixture":
        request.getfixturevalue("fixture_data")
    from biascore import settings
    from biascore.methods import get

    lm = request.getfixturevalue("random_mlm" if where == "fixture" else "tiny_mlm")
    input_name, options = small_run(name, FIXTURE_DATA if where == "fixture" else settings.data_dir(None))
    if where == "fixture":
        options.update(FIXTURE_EXTRA.get(name, {}))
    kwargs = {"limit": 12} if get(name).input_kind.first is not None else {}
    result = biascore.run(name, lm, input_name, cache_dir=tmp_path, progress=False, **kwargs, **options)
    assert len(result.frame) > 0
    assert {c.name for c in result.method.schema} <= set(result.frame.columns)
    assert isinstance(result.summary(), pd.DataFrame) and "<table" in result._repr_html_()
    again = biascore.run(name, ModelHandle.standin(lm.name, lm.identity(), "must not load"), input_name,
                         cache_dir=tmp_path, progress=False, only_cached=True, **kwargs, **options)
    assert again is not None  # stored under its own key, read back without the model
    pd.testing.assert_frame_equal(again.frame, result.frame)
    assert again.frame.equals(result.frame)  # the cache's answer is the fresh one, bit for bit and type for type
    assert (ResultCache(tmp_path).root / result.method.cache_folder / f"{result.digest}.parquet").is_file()


def test_a_plain_encoder_runs_the_embedding_methods_and_is_refused_by_the_lm_ones(random_encoder, fixture_data,
                                                                                  tmp_path):
    """A seeded random BERT encoder without an LM head: SEAT, head bias and LABDet read its hidden states; the
    methods that need log-probabilities refuse it in one line."""
    assert random_encoder.kind == "encoder"
    for name in ("seat", "heads", "labdet"):
        input_name, options = small_run(name, FIXTURE_DATA)
        result = biascore.run(name, random_encoder, input_name, cache_dir=tmp_path, progress=False, **options)
        assert len(result.frame) > 0 and result.frame.select_dtypes("number").notna().any().any(), name
    heads = biascore.run("heads", random_encoder, "names-career-family", cache_dir=tmp_path, progress=False)
    assert len(heads.frame) == 2 * 4  # 2 layers x 4 heads
    with pytest.raises(NotApplicable, match="needs a masked or causal model; this one is encoder") as err:
        biascore.run("attribution", random_encoder, "demo", cache_dir=tmp_path, progress=False)
    assert "\n" not in str(err.value)
