"""LABDet: data loading, neutral filler, sentence features, probes split by template, the per-nationality
statistics against independent computations, a planted bias, the CLI and the Nationality page."""
from __future__ import annotations

import zlib

import numpy as np
import pandas as pd
import pytest
import torch
from scipy import stats

from biascore.runs import runner
from biascore.methods import get
from biascore.methods.labdet.probes import PROBES, heldout_accuracy, template_split
from biascore.methods.labdet import scorer as labdet
from biascore.models.embeddings import embed_sentences

from conftest import FIXTURE_DATA, REPO, TINY_MLM
from waits import SAFETY_S

PAGE = REPO / "views" / "pages" / "nationality.py"


@pytest.fixture(scope="module")
def en_data(data_dir):
    return labdet.load_labdet("en", data_dir)


@pytest.fixture(scope="module")
def fixture_en():
    """The English LABDet files the project wrote itself (tests/fixtures/data/labdet): 4 training templates,
    3 surfacing templates x 4 neutral adjectives, 4 nationalities."""
    return labdet.load_labdet("en", FIXTURE_DATA)


# --------------------------------------------------------------------------- data
@pytest.mark.parametrize("lang", [code for code in labdet.LANGUAGES if code != labdet.DEMO])  # the paper's six
def test_all_six_languages_load(data_dir, lang):
    data = labdet.load_labdet(lang, data_dir)
    assert set(data.train["label"]) == {0, 1}
    assert data.train["template"].nunique() >= 2
    neutral = data.test[data.test["nationality"] == labdet.NEUTRAL]
    assert len(neutral) and all(data.placeholder in s for s in neutral["sentence"])
    assert len(data.words) >= 14 and all(data.words.values())
    pairs = labdet.surfacing_pairs(data, data.placeholder)
    # every nationality is paired with the neutral twin of each of its template x adjective items, once
    n_units = len(neutral[["template", "adj"]].drop_duplicates())
    assert pairs.groupby("nationality").size().eq(n_units).all()
    assert not pairs.duplicated(["template", "adj", "nationality"]).any()
    assert pairs["neutral_sentence"].str.contains(data.placeholder, regex=False).all()


def test_english_counts(en_data):
    assert len(en_data.words) == 30
    # 15 listed templates of which one twice (14 distinct) x 20 neutral adjectives
    pairs = labdet.surfacing_pairs(en_data, "[MASK]")
    assert len(pairs) == 30 * 14 * 20
    row = pairs[(pairs["nationality"] == "de") & (pairs["template"] == "This [NATIONALITY] person is [ADJ].")
                & (pairs["adj"] == "calm")].iloc[0]
    assert (row["sentence"], row["neutral_sentence"], row["word"]) == (
        "This German person is calm.", "This [MASK] person is calm.", "German")


def test_missing_language_and_files(tmp_path):
    with pytest.raises(ValueError, match="unknown LABDet language"):
        labdet.load_labdet("xx")
    with pytest.raises(labdet.BenchmarkError, match="not found"):
        labdet.load_labdet("en", tmp_path)


def test_neutral_filler_without_mask_token():
    assert labdet.fill_neutral("This [MASK] person is calm.", "[MASK]", "", "en") == "This person is calm."
    assert labdet.fill_neutral("I feel calm about this [MASK] person.", "[MASK]", "", "en") == \
        "I feel calm about this person."
    assert labdet.fill_neutral("Cet homme <mask> est neutre.", "<mask>", "", "fr") == "Cet homme est neutre."
    assert labdet.fill_neutral("هذا الشخص ال[MASK] محايد", "[MASK]", "", "ar") == "هذا الشخص محايد"
    assert labdet.fill_neutral("This [MASK] person is calm.", "[MASK]", "<mask>", "en") == "This <mask> person is calm."
    assert labdet.describe_filler("") == "(slot removed)"


# --------------------------------------------------------------------------- features
def _one_by_one(lm, sentence: str) -> torch.Tensor:
    enc = lm.tokenizer(lm.prepare_text(sentence), return_tensors="pt")
    with torch.no_grad():
        return lm.model.base_model(**enc).last_hidden_state[0]


@pytest.mark.exactness
def test_embed_sentences_equals_unbatched_forward(random_mlm, smollm, minilm):
    sentences = ["This German person is calm.", "It is a day.", "I hold a measured opinion of this Irish person."]
    assert labdet.neutral_filler(random_mlm) == "[MASK]" and labdet.neutral_filler(minilm) == "[MASK]"
    assert labdet.neutral_filler(smollm) == labdet.SLOT_REMOVED
    for lm in (random_mlm, minilm):  # BERT: [CLS] ... [SEP]; mean over the words only
        got = embed_sentences(lm, sentences, batch_size=2)
        first = embed_sentences(lm, sentences, pooling="first", batch_size=2)
        for i, s in enumerate(sentences):
            h = _one_by_one(lm, s)
            np.testing.assert_allclose(got[i], h[1:-1].mean(0).numpy(), atol=1e-5)
            np.testing.assert_allclose(first[i], h[0].numpy(), atol=1e-5)
    last = embed_sentences(smollm, sentences, pooling="last", batch_size=2)  # right padding, causal
    mean = embed_sentences(smollm, sentences, batch_size=3)
    for i, s in enumerate(sentences):
        h = _one_by_one(smollm, s)
        np.testing.assert_allclose(last[i], h[-1].numpy(), atol=1e-4)
        special = smollm.tokenizer(s, return_special_tokens_mask=True)["special_tokens_mask"]
        keep = torch.tensor(special) == 0
        np.testing.assert_allclose(mean[i], h[keep].mean(0).numpy(), atol=1e-4)
    with pytest.raises(ValueError, match="pooling"):
        embed_sentences(random_mlm, sentences, pooling="max")


# --------------------------------------------------------------------------- probes
@pytest.mark.parametrize("which", ["fixture_en", pytest.param("en_data", marks=pytest.mark.shared("data"))])
def test_accuracy_split_never_shares_templates(which, request):
    groups = request.getfixturevalue(which).train["template"].to_numpy()
    for seed in range(5):
        tr, te = template_split(groups, seed=seed)
        assert len(tr) and len(te) and len(tr) + len(te) == len(groups)
        assert not set(groups[tr]) & set(groups[te])
    with pytest.raises(ValueError, match="two templates"):
        template_split(["a", "a", "a"])


def test_heldout_accuracy_uses_unseen_templates():
    # labels decided by a template-specific direction: a probe that never saw the test templates cannot
    # learn them, so the held-out accuracy is at chance although training accuracy is perfect
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(8).astype(str), 50)
    X = rng.normal(size=(400, 8))
    y = (X[np.arange(400), groups.astype(int)] > 0).astype(int)
    acc = heldout_accuracy(X, y, groups, "svm", seed=0)
    assert acc < 0.75


# --------------------------------------------------------------------------- planted bias
#: data -> (planted nationality, an untouched one, templates, neutral adjectives per template, the least held-out
#: accuracy of a probe on the stand-in features: the fixture trains on 320 sentences, the real data on 3,990)
CASES = {"fixture_en": ("br", "de", 3, 4, 0.9), "en_data": ("ar-sy", "de", 14, 20, 0.95)}


def stand_in_features(data: labdet.LabdetData, planted: str, shift: float = -0.8):
    """Features with the sentiment on axis 0: training sentences at ±1, surfacing sentences at 0, and the
    planted nationality's sentences moved toward the negative class by ``shift``; noise from a hash."""
    labels = dict(zip(data.train["sentence"], data.train["label"]))
    planted_word = data.words[planted]

    def featurize(sentences):
        out = []
        for s in sentences:
            rng = np.random.default_rng(zlib.crc32(s.encode()))
            v = rng.normal(scale=0.3, size=6)
            if s in labels:
                v[0] += 1.0 if labels[s] else -1.0
            elif planted_word in s.split():
                v[0] += shift
            out.append(v)
        return np.array(out)

    return featurize


@pytest.fixture(scope="module", params=["fixture_en", pytest.param("en_data", marks=pytest.mark.shared("data"))])
def planted(request):
    """(items with a planted bias, planted code, untouched code, templates, adjectives, least accuracy) on the
    fixture data and, where it is present, on the real English data."""
    data = request.getfixturevalue(request.param)
    code, untouched, n_templates, n_adj, accuracy = CASES[request.param]
    items = labdet.probe_items(data, stand_in_features(data, code), filler="[MASK]", seed=0)
    return items, code, untouched, n_templates, n_adj, accuracy


@pytest.mark.parametrize("probe", PROBES)
def test_planted_bias_is_red_and_untouched_is_black(planted, probe):
    planted_items, PLANTED, UNTOUCHED = planted[:3]
    table = labdet.summarize(planted_items, probe=probe).set_index("nationality")
    assert table.loc[PLANTED, "direction"] == "negative" and table.loc[PLANTED, "p_value"] < 0.05
    assert table.loc[PLANTED, "ci_high"] < 0
    assert table.index[0] == PLANTED  # the most negative
    assert table.loc[UNTOUCHED, "direction"] == "none" and table.loc[UNTOUCHED, "p_value"] >= 0.05
    assert table.loc[UNTOUCHED, "ci_low"] < 0 < table.loc[UNTOUCHED, "ci_high"]
    assert (table["direction"] == "negative").sum() <= 3  # others only by chance at alpha 0.05
    assert planted_items[f"acc_{probe}"].iloc[0] > planted[5]


def test_planted_items_relative_sentiment_is_paired_difference(planted):
    # independent: recompute each neutral twin's probability by looking it up among the neutral rows
    items, _, _, n_templates, n_adj, _ = planted
    neutral_p = {(t, a): p for t, a, p in zip(items["template"], items["adj"], items["p_neutral_svm"])}
    assert len(neutral_p) == n_templates * n_adj
    expected = items["p_nat_svm"] - [neutral_p[(t, a)] for t, a in zip(items["template"], items["adj"])]
    np.testing.assert_allclose(items["rel_svm"], expected)
    assert items["neutral_sentence"].str.contains("[MASK]", regex=False).all()


# (the statistics — Wilcoxon, the template bootstrap, Pearson — are tested in tests/stats/)


def test_summary_and_robustness_match_independent_computation(planted):
    planted_items, n_templates = planted[0], planted[3]
    table = labdet.summarize(planted_items, probe="mlp", alpha=0.01)
    for row in table.itertuples():
        vals = planted_items.loc[planted_items["nationality"] == row.nationality, "rel_mlp"].to_numpy()
        assert row.mean == pytest.approx(vals.sum() / len(vals))
        assert row.p_value == pytest.approx(stats.wilcoxon(vals).pvalue)
        expected = ("negative" if row.mean < 0 else "positive") if row.p_value < 0.01 else "none"
        assert row.direction == expected
        assert row.ci_low <= row.mean <= row.ci_high
        nat = planted_items[planted_items["nationality"] == row.nationality]
        per_template = nat.groupby("template")["rel_mlp"].mean().to_numpy()  # one observation per template
        assert row.p_template == pytest.approx(stats.wilcoxon(per_template).pvalue)
        assert row.n_templates == n_templates
    assert list(table["mean"]) == sorted(table["mean"])
    rob = labdet.robustness(planted_items, probe="svm")
    svm = planted_items.groupby("nationality")["rel_svm"].mean()
    mlp = planted_items.groupby("nationality")["rel_mlp"].mean()
    assert rob["probe_r"] == pytest.approx(np.corrcoef(svm, mlp)[0, 1])
    first, second = labdet.template_halves(planted_items["template"])
    assert not set(first) & set(second) and len(first) + len(second) == n_templates
    h1 = planted_items[planted_items["template"].isin(first)].groupby("nationality")["rel_svm"].mean()
    h2 = planted_items[planted_items["template"].isin(second)].groupby("nationality")["rel_svm"].mean()
    assert rob["halves_r"] == pytest.approx(np.corrcoef(h1, h2.loc[h1.index])[0, 1])


@pytest.mark.parametrize("copies", [2, 5])
def test_template_level_inference_does_not_shrink_with_copies(planted, copies):
    """Each item copied ``copies`` times inside its own template (more fillers that say nothing new): the
    paper's item-level Wilcoxon p shrinks, the template-level p and the template bootstrap interval do not."""
    items = planted[0]
    copied = pd.concat([items] * copies, ignore_index=True)
    once = labdet.summarize(items, probe="svm", n_boot=500).set_index("nationality")
    many = labdet.summarize(copied, probe="svm", n_boot=500).set_index("nationality")
    assert (many["n_items"] == copies * once["n_items"]).all()
    np.testing.assert_allclose(many["mean"], once["mean"], rtol=1e-12)
    np.testing.assert_allclose(many["p_template"], once["p_template"], rtol=1e-12)
    np.testing.assert_allclose(many[["ci_low", "ci_high"]], once[["ci_low", "ci_high"]], rtol=1e-9)
    moved = once["p_value"] < 1  # where the items are not all zero, copies make the item-level test "surer"
    assert moved.any() and (many.loc[moved, "p_value"] < once.loc[moved, "p_value"]).all()
    # the template-level p never goes below what the number of templates allows: 2 / 2^C
    assert (once["p_template"] >= 2.0 / 2 ** once["n_templates"] - 1e-15).all()


def test_direction_rule():
    assert labdet.direction(-0.1, 0.01) == "negative"
    assert labdet.direction(0.1, 0.01) == "positive"
    assert labdet.direction(-0.1, 0.2) == "none"
    assert labdet.direction(-0.1, 0.03, alpha=0.01) == "none"


# --------------------------------------------------------------------------- real model, CLI, page
def test_random_model_on_the_fixture_data_is_cached_and_reported(random_mlm, tmp_path, capsys):
    """The whole pipeline on a hermetic model and data: features, probes, summary, cache, CLI."""
    from biascore.cli.main import main

    result = runner.run(get("labdet"), random_mlm, "en", data_dir=FIXTURE_DATA, n_boot=200)
    data = labdet.load_labdet("en", FIXTURE_DATA)
    assert list(result.table["mean"]) == sorted(result.table["mean"])  # most negative first
    assert set(result.table["nationality"]) == set(data.words) and result.neutral_filler == "[MASK]"
    assert set(result.table["direction"]) <= set(labdet.DIRECTIONS)
    assert all(0 <= a <= 1 for a in result.accuracy.values())
    again = runner.run(get("labdet"), random_mlm, "en", data_dir=FIXTURE_DATA, n_boot=200, only_cached=True)
    pd.testing.assert_frame_equal(again.table, result.table)  # the cache's answer: the same bits
    assert runner.run(get("labdet"), random_mlm, "en", data_dir=FIXTURE_DATA, nationalities=["de"],
                      only_cached=True) is None
    out = tmp_path / "labdet.csv"
    assert main(["labdet", "--model", random_mlm.name, "--lang", "en", "--data-dir", str(FIXTURE_DATA),
                 "--out", str(out)]) == 0
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame.columns) == [*labdet.OUTPUT_COLUMNS, "precision"] and len(frame) == len(data.words)
    assert "held-out accuracy" in capsys.readouterr().out


@pytest.fixture(scope="module")
def tiny_result(tiny_mlm, data_dir):
    return runner.run(get("labdet"), tiny_mlm, "en")


def test_real_model_all_nationalities_and_cache(tiny_mlm, tiny_result):
    assert len(tiny_result.table) == 30 and set(tiny_result.table["direction"]) <= set(labdet.DIRECTIONS)
    assert tiny_result.neutral_filler == "[MASK]"
    assert all(0 <= a <= 1 for a in tiny_result.accuracy.values())
    assert np.isfinite(list(tiny_result.correlations.values())).all()
    again = runner.run(get("labdet"), tiny_mlm, "en", only_cached=True)
    pd.testing.assert_frame_equal(again.table, tiny_result.table)
    assert runner.run(get("labdet"), tiny_mlm, "en", probe="mlp", alpha=0.01, only_cached=True) is not None
    assert runner.run(get("labdet"), tiny_mlm, "en", nationalities=["de"], only_cached=True) is None


def test_cli_writes_one_row_per_nationality(tiny_result, tmp_path, capsys):
    from biascore.cli.main import main

    out = tmp_path / "labdet.csv"
    assert main(["labdet", "--model", str(TINY_MLM), "--lang", "en", "--out", str(out)]) == 0
    frame = pd.read_csv(out, keep_default_na=False)
    assert list(frame.columns) == ["nationality", "word", "mean", "ci_low", "ci_high", "p_value", "direction",
                                   "p_template", "precision"]
    assert len(frame) == 30
    np.testing.assert_allclose(frame["mean"], tiny_result.table["mean"], rtol=1e-9)
    printed = capsys.readouterr().out
    assert "held-out accuracy" in printed and "SVM vs MLP" in printed and "template halves" in printed
    with pytest.raises(SystemExit):  # argparse rejects an unknown language
        main(["labdet", "--model", str(TINY_MLM), "--lang", "xx"])


def _open_page(model: str):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(PAGE), default_timeout=SAFETY_S)
    at.query_params["model"] = model
    return at.run()


def small_labdet_copy(data_dir, target, lang: str = "nl", keep=("tr", "de", "pl", labdet.NEUTRAL)):
    """A reduced copy of one language's LABDet files (every 8th training sentence, three nationalities and
    four templates) so that scoring from the page is quick on any machine."""
    import json
    import shutil

    src = data_dir / "labdet"
    for sub in ("train", "test", "Templates"):
        (target / "labdet" / sub).mkdir(parents=True, exist_ok=True)
    train = json.loads((src / "train" / f"{lang}.json").read_text(encoding="utf-8"))
    test = json.loads((src / "test" / f"{lang}.json").read_text(encoding="utf-8"))
    templates = sorted({row["template"] for row in test})[:4]
    test = [row for row in test if row["nationality"] in keep and row["template"] in templates]
    (target / "labdet" / "train" / f"{lang}.json").write_text(json.dumps(train[::8]), encoding="utf-8")
    (target / "labdet" / "test" / f"{lang}.json").write_text(json.dumps(test), encoding="utf-8")
    shutil.copy(src / "Templates" / f"{lang}_template.json", target / "labdet" / "Templates")
    return target


def test_page_shows_engine_numbers(tiny_mlm, tiny_result, data_dir, tmp_path, monkeypatch):
    # the server offers the tiny model (a ?model= link may name only offered or cached models)
    monkeypatch.setenv("BIASCORE_MODELS", f"{TINY_MLM},smollm2-135m")
    at = _open_page(str(TINY_MLM))
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    acc, cor = tiny_result.accuracy, tiny_result.correlations
    assert metrics["Probe accuracy (SVM, unseen templates)"] == f"{acc['svm']:.3f}"
    assert metrics["Probe accuracy (MLP, unseen templates)"] == f"{acc['mlp']:.3f}"
    assert metrics["Pearson r, SVM vs MLP means"] == f"{cor['probe_r']:.3f} (p = {cor['probe_p']:.2g})"
    shown = at.dataframe[0].value
    pd.testing.assert_frame_equal(shown[labdet.OUTPUT_COLUMNS].reset_index(drop=True),
                                  tiny_result.table[labdet.OUTPUT_COLUMNS])
    assert len(at.get("plotly_chart")) == 1
    # a language not cached yet: the page offers to score it, and "Score now" runs the engine
    monkeypatch.setenv("BIASCORE_DATA_DIR", str(small_labdet_copy(data_dir, tmp_path)))
    at.selectbox(key="lang").set_value("nl").run()
    assert not at.exception
    button = next(b for b in at.button if b.label == "Score now")
    button.click().run()
    assert not at.exception
    scored = runner.run(get("labdet"), tiny_mlm, "nl", only_cached=True)
    assert scored is not None and len(scored.table) == 3
    pd.testing.assert_frame_equal(at.dataframe[0].value[labdet.OUTPUT_COLUMNS].reset_index(drop=True),
                                  scored.table[labdet.OUTPUT_COLUMNS])
    # compare two models: a second column for the second model (not scored yet: it offers a button)
    at.checkbox(key="compare").check().run()
    assert not at.exception
    from biascore.display import code_span  # model names are shown verbatim, as code spans (never markdown)
    assert [h.value for h in at.subheader] == [code_span(TINY_MLM), code_span("smollm2-135m")]
    assert len(at.dataframe) == 1 and any(b.label == "Score now" for b in at.button)
