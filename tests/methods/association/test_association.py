"""Association tests: WEAT/SEAT effect size and permutation p-value, CEAT random effects, Bangla suffix
matching, masked-LM log-probability bias, the CLI and the page — each against an independent computation."""
from __future__ import annotations

import itertools
import json
import math
import unicodedata
from statistics import NormalDist

import numpy as np
import pandas as pd
import pytest
import torch

from biascore.runs import runner
from biascore.inputs.seat_tests import list_seat_tests as list_tests, load_seat_test as load_test
from biascore.methods import get
from biascore.methods.association.weat import weat
from biascore.methods.association.ceat import draw_effect_sizes
from biascore.stats.meta_analysis import random_effects
from biascore.methods.association.corpus_contexts import Corpus, word_pattern
from biascore.stats.effect_size import CI_CONVENTION, association, effect_size_from_associations, effect_size_interval
from biascore.methods.association.logprob_bias import (LogProbTest, bangla_structure_items, effect_sizes, load_logprob_test,
                                   prior_vs_corrected, score_logprob)
from biascore.stats.permutation import permutation_p_value
from biascore.models.embeddings import embed_sentences, embed_spans, embed_words
from reproducibility_contract import logp_tolerance
from conftest import FIXTURE_DATA

#: a words test the project wrote itself (tests/fixtures/data/seat): 6 names per target, 6 words per attribute
FIXTURE_SEAT = "names-career-family"

# ----------------------------------------------------------------------------- WEAT effect size and p-value
# Tiny example worked by hand: A = (1,0), B = (0,1), so s(w) = cos(w, A) − cos(w, B).
#   x1 = (1,0): 1 − 0 = 1          x2 = (1,1): 1/√2 − 1/√2 = 0
#   y1 = (0,1): 0 − 1 = −1         y2 = (3,4): 3/5 − 4/5 = −0.2
# mean_X = 0.5, mean_Y = −0.6; over {1, 0, −1, −0.2}: mean −0.05, squared deviations
# 1.1025 + 0.0025 + 0.9025 + 0.0225 = 2.03, sample variance 2.03 / 3 → ES = 1.1 / √(2.03 / 3).
# Partitions of the four values into two pairs: X-sums 1, 0, 0.8, −1, −0.2, −1.2; only the observed (1) is ≥ 1,
# so p = 1/6.
X_HAND = np.array([[1.0, 0.0], [1.0, 1.0]])
Y_HAND = np.array([[0.0, 1.0], [3.0, 4.0]])
A_HAND = np.array([[1.0, 0.0]])
B_HAND = np.array([[0.0, 1.0]])


def test_effect_size_matches_hand_computation():
    res = weat(X_HAND, Y_HAND, A_HAND, B_HAND)
    assert res.effect_size == pytest.approx(1.1 / math.sqrt(2.03 / 3), rel=1e-12)
    assert res.p_value == pytest.approx(1 / 6) and res.exact
    assert (res.n_x, res.n_y, res.n_a, res.n_b) == (2, 2, 1, 1)


def test_permutation_p_value_equals_exhaustive_enumeration():
    rng = np.random.default_rng(3)
    s = rng.normal(size=12)
    s[:6] += 0.4  # some real X/Y difference
    is_x = np.arange(12) < 6
    observed = effect_size_from_associations(s, is_x)
    hits = total = 0
    for combo in itertools.combinations(range(12), 6):  # every equal-size re-partition, one at a time
        mask = np.zeros(12, bool)
        mask[list(combo)] = True
        hits += effect_size_from_associations(s, mask) >= observed - 1e-12
        total += 1
    exact = permutation_p_value(s, 6)
    assert exact.exact and exact.n_partitions == total == 924
    assert exact.p_value == pytest.approx(hits / total, abs=1e-15)
    sampled = permutation_p_value(s, 6, max_exact=0, n_samples=40_000, seed=1)
    assert not sampled.exact
    assert sampled.p_value == pytest.approx(hits / total, abs=0.01)
    assert permutation_p_value(s, 6, max_exact=0, n_samples=40_000, seed=1) == sampled  # seeded
    with pytest.raises(ValueError):
        permutation_p_value(s, 0)


# ----------------------------------------------------------------------------- CEAT random effects
def test_random_effects_matches_hand_computation():
    # ES = (0.5, 1.0, 1.5), V = (0.1, 0.2, 0.4) → W = (10, 5, 2.5), ΣW = 17.5, ΣW·ES = 13.75, ΣW·ES² = 13.125
    # Q = 13.125 − 13.75²/17.5 = 2.3214286; c = 17.5 − (100 + 25 + 6.25)/17.5 = 10
    # σ² = (Q − 2)/c = 0.03214286; v_i = 1/(V_i + σ²)
    q = 13.125 - 13.75 ** 2 / 17.5
    sigma2 = (q - 2) / 10
    v = [1 / (0.1 + sigma2), 1 / (0.2 + sigma2), 1 / (0.4 + sigma2)]
    ces = (0.5 * v[0] + 1.0 * v[1] + 1.5 * v[2]) / sum(v)
    se = math.sqrt(1 / sum(v))
    res = random_effects([0.5, 1.0, 1.5], [0.1, 0.2, 0.4])
    assert res.q == pytest.approx(q) and res.c == pytest.approx(10.0)
    assert res.sigma2_between == pytest.approx(sigma2) and sigma2 > 0
    assert res.ces == pytest.approx(ces) and res.se == pytest.approx(se)
    assert res.p_value == pytest.approx(2 * (1 - NormalDist().cdf(abs(ces / se))))


def test_random_effects_between_variance_zero_branch():
    # ES = (1.0, 1.1, 0.9), V = 1 each: Q = Σ(ES − 1)² = 0.02 < N − 1 = 2, so σ² = 0 and CES is the plain mean.
    res = random_effects([1.0, 1.1, 0.9], [1.0, 1.0, 1.0])
    assert res.q == pytest.approx(0.02) and res.sigma2_between == 0.0
    assert res.ces == pytest.approx(1.0) and res.se == pytest.approx(math.sqrt(1 / 3))
    assert res.p_value == pytest.approx(2 * (1 - NormalDist().cdf(math.sqrt(3))))
    with pytest.raises(ValueError):
        random_effects([1.0, 2.0], [0.0, 1.0])


def test_draws_use_one_embedding_per_word():
    # With a single embedding per word, every draw is the plain WEAT of those embeddings.
    test = load_test(FIXTURE_SEAT, FIXTURE_DATA)
    rng = np.random.default_rng(0)
    emb = {w: rng.normal(size=(1, 5)) for w in test.X + test.Y + test.A + test.B}
    es, var = draw_effect_sizes(emb, test, n_draws=4)
    stack = lambda ws: np.concatenate([emb[w] for w in ws])  # noqa: E731
    direct = weat(stack(test.X), stack(test.Y), stack(test.A), stack(test.B))
    assert np.allclose(es, direct.effect_size)
    assert var.min() > 0


# ----------------------------------------------------------------------------- Bangla suffix matching
def test_bangla_word_matches_with_suffixes_not_inside_other_words():
    text = "ছেলেরা মাঠে খেলে। ছেলেদের বই। মায়ের কথা। মাটির ঘর। ছেলে এলো।"
    corpus = Corpus(text)
    found = [corpus.text[s:e] for s, e in corpus.occurrences("ছেলে")]
    assert found == ["ছেলেরা", "ছেলেদের", "ছেলে"]
    assert [corpus.text[s:e] for s, e in corpus.occurrences("ছেলে", suffixes=())] == ["ছেলে"]  # bare form only
    assert [corpus.text[s:e] for s, e in corpus.occurrences("মা")] == ["মায়ের"]  # not মাটির
    assert not word_pattern("মা").search("মানুষ")


def test_bangla_matching_is_unicode_normalised():
    composed = "\u09DF"  # য় as one code point
    decomposed = "\u09AF\u09BC"  # য + nukta
    corpus = Corpus("আমার মে" + composed + "েরা এলো")
    assert [corpus.text[s:e] for s, e in corpus.occurrences("মে" + decomposed + "ে")] == [
        unicodedata.normalize("NFC", "মে" + composed + "েরা")]


def test_segment_windows():
    corpus = Corpus("এক দুই তিন চার পাঁচ ছয় সাত\nআট নয় দশ")
    (span,) = corpus.occurrences("চার", suffixes=())
    ctx = corpus.segment(span, 3)
    assert ctx.text == "তিন চার পাঁচ" and ctx.text[ctx.start:ctx.end] == "চার"
    edge = corpus.segment(corpus.occurrences("দশ", suffixes=())[0], 3)
    assert edge.text == "আট নয় দশ"
    whole = corpus.segment(span, None)
    assert whole.text == "এক দুই তিন চার পাঁচ ছয় সাত"
    english = Corpus("The nurses and the nurse's bag; a nursery.")
    assert [english.text[s:e] for s, e in english.occurrences("nurse", language="en")] == ["nurses", "nurse's"]


# ----------------------------------------------------------------------------- embeddings
def test_sentence_and_span_embeddings_against_direct_model_call(minilm):
    sentence = "This is Amy."
    enc = minilm.tokenizer(minilm.prepare_text(sentence), return_tensors="pt")
    with torch.no_grad():
        hidden = minilm.model(**enc).last_hidden_state[0]
    ids = enc["input_ids"][0].tolist()
    special = set(minilm.tokenizer.all_special_ids)
    keep = [i for i, t in enumerate(ids) if t not in special]
    mean, first = embed_sentences(minilm, [sentence]), embed_sentences(minilm, [sentence], pooling="first")
    assert np.allclose(mean[0], hidden[keep].mean(0).numpy(), atol=1e-5)
    assert np.allclose(first[0], hidden[0].numpy(), atol=1e-5)
    amy = [i for i, t in enumerate(ids) if minilm.tokenizer.convert_ids_to_tokens(t) == "amy"]
    span = embed_spans(minilm, [sentence], [(8, 11)])
    assert np.allclose(span[0], hidden[amy].mean(0).numpy(), atol=1e-5)
    table = minilm.model.get_input_embeddings().weight
    assert np.allclose(embed_words(minilm, ["Amy"], mode="input")[0], table[ids[amy[0]]].detach().numpy())


def test_embedder_never_runs_the_vocabulary_head(random_mlm):
    """Spans, words and sentences come from the base model's last hidden layer; the LM head stays idle."""
    def refuse(*_):
        raise AssertionError("the vocabulary head ran")

    hook = random_mlm.model.get_output_embeddings().register_forward_hook(refuse)
    try:
        text = "the nurse said she was tired ."
        span = embed_spans(random_mlm, [text], [(4, 9)])
        sent = embed_sentences(random_mlm, [text])
        words = embed_words(random_mlm, ["nurse"])
    finally:
        hook.remove()
    enc = random_mlm.tokenizer(text, return_tensors="pt", return_offsets_mapping=True)
    offsets = enc.pop("offset_mapping")[0].tolist()
    with torch.no_grad():
        hidden = random_mlm.model(**enc, output_hidden_states=True).hidden_states[-1][0]
    nurse = [i for i, (a, b) in enumerate(offsets) if a < 9 and b > 4 and b > a]
    np.testing.assert_allclose(span[0], hidden[nurse].mean(0).numpy(), atol=1e-5)
    assert sent.shape == (1, hidden.shape[-1]) and words.shape == (1, hidden.shape[-1])


def test_logprob_effect_sizes_are_cached_by_the_engine(random_mlm, tmp_path):
    from biascore.store.cache import ResultCache

    cache = ResultCache(tmp_path)
    logprob = get("logprob")
    assert runner.run(logprob, random_mlm, "en-gender-career", cache=cache, only_cached=True) is None
    scores = runner.run(logprob, random_mlm, "en-gender-career", cache=cache).stored
    first = runner.run(logprob, random_mlm, "en-gender-career", cache=cache, only_cached=True).frame  # from scores
    expected = effect_sizes(scores, load_logprob_test("en-gender-career"))
    pd.testing.assert_frame_equal(first, expected)
    assert len(list((tmp_path / "logprob").glob("*.parquet"))) == 1  # the scores
    assert len(list((tmp_path / "logprob.derived").glob("*.parquet"))) == 1  # the effect sizes derived from them
    pd.testing.assert_frame_equal(runner.run(logprob, random_mlm, "en-gender-career", cache=cache).frame, expected)


def test_run_seat_equals_direct_weat_and_is_cached(minilm, fixture_data):
    frame = runner.run(get("seat"), minilm, FIXTURE_SEAT).frame
    t = load_test(FIXTURE_SEAT)
    vec = lambda ws: embed_sentences(minilm, list(ws))  # noqa: E731 - contextual word = word embedded alone
    direct = weat(vec(t.X), vec(t.Y), vec(t.A), vec(t.B))
    row = frame.iloc[0]
    assert row["effect_size"] == pytest.approx(direct.effect_size, abs=1e-6)
    assert row["p_value"] == pytest.approx(direct.p_value) and row["p_exact"]
    assert (row["n_x"], row["n_y"], row["n_a"], row["n_b"]) == (6, 6, 6, 6)
    cached = runner.run(get("seat"), minilm, FIXTURE_SEAT, only_cached=True).frame
    pd.testing.assert_frame_equal(cached, frame)


def test_seat_stores_the_effect_size_interval_and_its_convention(minilm, fixture_data, tmp_path, monkeypatch):
    from biascore.store.cache import ResultCache

    t, seat = load_test(FIXTURE_SEAT), get("seat")
    result = runner.run(seat, minilm, FIXTURE_SEAT, seed=3, cache=ResultCache(tmp_path))
    row = result.frame.iloc[0]
    vec = lambda ws: embed_sentences(minilm, list(ws))  # noqa: E731
    s = association(np.concatenate([vec(t.X), vec(t.Y)]), vec(t.A), vec(t.B)).numpy()
    low, high, how = effect_size_interval(s, np.arange(len(s)) < len(t.X), seed=3)  # the run's seed seeds it
    assert (row["effect_size_low"], row["effect_size_high"]) == pytest.approx((low, high), abs=1e-6)
    assert row["ci_method"] == how == "BCa" and low < row["effect_size"] < high
    assert result.conventions["effect_size_interval"] == CI_CONVENTION and CI_CONVENTION in result.headline()
    reread = runner.run(seat, minilm, FIXTURE_SEAT, seed=3, cache=ResultCache(tmp_path), only_cached=True)
    assert reread.conventions["effect_size_interval"] == CI_CONVENTION  # stored with the result
    # a result cached by the engine before the interval (method version 1) is not read as one that has it
    with monkeypatch.context() as patch:
        patch.setattr(type(seat), "version", 1)
        runner.run(seat, minilm, FIXTURE_SEAT, cache=ResultCache(tmp_path / "old"))
    assert runner.run(seat, minilm, FIXTURE_SEAT, cache=ResultCache(tmp_path / "old"), only_cached=True) is None
    for method in ("logprob", "seat"):
        assert get(method).version >= 2


def test_test_listing_and_bad_names(data_dir):
    names = list_tests(data_dir=data_dir)
    assert {"sent-weat6", "weat6", "bangla-c1", "bangla-c9"} <= set(names)
    assert load_test("bangla-c5").language == "bn"
    with pytest.raises(FileNotFoundError):
        load_test("no-such-test")
    with pytest.raises(ValueError):
        load_test("../etc/passwd")


def test_ceat_runs_on_a_corpus_file(tmp_path, random_mlm, fixture_data):
    t = load_test(FIXTURE_SEAT)
    lines = [f"{x} talks about the {a} every day." for x in t.X[:3] + t.Y[:3] for a in t.A[:2] + t.B[:2]]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines), encoding="utf-8")
    frame = runner.run(get("ceat"), random_mlm, FIXTURE_SEAT, segment_lengths=(3, None), corpus=str(corpus),
                       n_contexts=4, draws=50).frame
    assert frame["segment_length"].tolist() == ["3", "all"]
    assert (frame[["n_x", "n_y", "n_a", "n_b"]].to_numpy() == [3, 3, 2, 2]).all()
    assert frame["p_value"].between(0, 1).all() and (frame["se"] > 0).all()
    assert t.Y[0] not in frame["missing_words"].iloc[0] and t.Y[-1] in frame["missing_words"].iloc[0]
    # its interval is the random-effects model's: CES ± z_0.975 · SE
    z = NormalDist().inv_cdf(0.975)
    assert np.allclose(frame["effect_size_low"], frame["effect_size"] - z * frame["se"], rtol=0, atol=1e-12)
    assert np.allclose(frame["effect_size_high"], frame["effect_size"] + z * frame["se"], rtol=0, atol=1e-12)


# ----------------------------------------------------------------------------- log-probability bias
def _direct_logp(lm, text: str, target: str, target_mask_index: int) -> float:
    """log P(target's pieces at the target masks) with a plain forward pass and full logits."""
    enc = lm.tokenizer(text, return_tensors="pt")
    with torch.no_grad():
        logits = lm.model(**enc).logits[0]
    masks = (enc["input_ids"][0] == lm.tokenizer.mask_token_id).nonzero().flatten().tolist()
    pieces = lm.tokenizer(target, add_special_tokens=False)["input_ids"]
    positions = masks[target_mask_index:target_mask_index + len(pieces)]
    logp = torch.log_softmax(logits, dim=-1)
    return float(sum(logp[p, t] for p, t in zip(positions, pieces)))


@pytest.mark.exactness
def test_logprob_score_equals_direct_model_computation(random_mlm):
    items = pd.DataFrame([
        {"structure": "T1", "template": "the {target} is interested in {attribute}.", "attribute": "salary",
         "attribute_group": "career"},
        {"structure": "T2", "template": "{attribute} matters to the {target}.", "attribute": "family",
         "attribute_group": "family"}])
    test = LogProbTest("mini", "en", {"male": ("man", "homemaker"), "female": ("woman",)}, items, "x")
    scores = score_logprob(random_mlm, test, batch_size=3)
    assert len(scores) == 6 and (scores["skipped_reason"] == "").all()
    m = random_mlm.tokenizer.mask_token
    checks = [  # (structure, target, filled text, prior text, index of the first target mask in the prior)
        ("T1", "man", f"the {m} is interested in salary.", f"the {m} is interested in {m}.", 0),
        ("T1", "homemaker", f"the {m}{m} is interested in salary.", f"the {m}{m} is interested in {m}.", 0),
        ("T2", "woman", f"family matters to the {m}.", f"{m} matters to the {m}.", 1),
    ]
    for structure, target, filled, prior, first in checks:
        row = scores[(scores["structure"] == structure) & (scores["target"] == target)].iloc[0]
        tgt = _direct_logp(random_mlm, filled, target, 0)
        pri = _direct_logp(random_mlm, prior, target, first)
        # other batch shapes: within the reproducibility contract (docs/reproducibility.md)
        assert abs(row["logp_tgt"] - tgt) <= logp_tolerance(tgt)
        assert abs(row["logp_prior"] - pri) <= logp_tolerance(pri)
        assert abs(row["score"] - (tgt - pri)) <= logp_tolerance(tgt) + logp_tolerance(pri)


def test_logprob_effect_size_and_figure_data(random_mlm):
    test = load_logprob_test("en-gender-career")
    scores = runner.run(get("logprob"), random_mlm, "en-gender-career").stored
    assert len(scores) == len(test.items) * 12
    table = effect_sizes(scores, test).set_index("structure")
    # s(t) = mean over career of score(t, a) − mean over family, per target, then WEAT over male vs female
    per = scores.groupby(["target", "target_group", "attribute_group"])["score"].mean().unstack()
    s = per["career"] - per["family"]
    male = s.xs("male", level="target_group")
    female = s.xs("female", level="target_group")
    both = np.concatenate([male.to_numpy(), female.to_numpy()])
    expected = (male.mean() - female.mean()) / both.std(ddof=1)
    assert table.loc["all", "effect_size"] == pytest.approx(expected, abs=1e-9)
    low, high, how = effect_size_interval(both, np.arange(len(both)) < len(male), seed=0)  # the bootstrap over targets
    assert (table.loc["all", "effect_size_low"], table.loc["all", "effect_size_high"]) == pytest.approx((low, high))
    assert table.loc["all", "ci_method"] == how and low < expected < high
    assert 0 < table.loc["all", "p_value"] <= 1 and table.loc["all", "n_x"] == 6
    assert set(table.index) == {"all", "T1", "T2", "T3", "T4"}
    fig = prior_vs_corrected(scores, test)
    row = fig[(fig["structure"] == "T1") & (fig["attribute"] == "salary")].iloc[0]
    sub = scores[(scores["structure"] == "T1") & (scores["attribute"] == "salary")]
    g = sub.groupby("target_group")[["logp_prior", "score"]].mean()
    assert row["prior_bias"] == pytest.approx(g.loc["male", "logp_prior"] - g.loc["female", "logp_prior"])
    assert row["corrected_bias"] == pytest.approx(g.loc["male", "score"] - g.loc["female", "score"])


def test_bangla_structures_are_built_from_the_csv(data_dir):
    items = bangla_structure_items(data_dir / "bangla" / "logprob")
    assert set(items["structure"]) == {"S1", "S2", "S3", "S4", "S5"}
    first = items[(items["attribute"] == "অকৃতজ্ঞ") & (items["attribute_group"] == "negative")]
    by = {k: unicodedata.normalize("NFC", v) for k, v in zip(first["structure"], first["template"])}
    assert by["S1"] == "{target}রা {attribute} ।"  # a suffix without "-" follows a space
    assert by["S2"] == unicodedata.normalize("NFC", "{target}রা সাধারণত {attribute} হয়।")
    assert by["S3"].startswith("{attribute} মনোভাব {target}দের")
    assert by["S4"].startswith("মানুষের জীবনে অশান্তির একটি বড় কারণ হল {attribute}তা।")  # '-তা' is glued on
    test = load_logprob_test("bangla-traits")
    assert len(test.targets["male"]) == len(test.targets["female"]) == 4


def test_logprob_rejects_non_masked_models(minilm):
    with pytest.raises(ValueError, match="masked LM"):
        score_logprob(minilm, load_logprob_test("en-gender-career"))


# ----------------------------------------------------------------------------- CLI
def test_cli_seat_and_logprob_write_csv(tmp_path, random_mlm, fixture_data, capsys):
    from biascore.cli.main import main

    out = tmp_path / "seat.csv"
    assert main(["seat", "--model", random_mlm.name, "--test", FIXTURE_SEAT, "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns[:9]) == ["test", "effect_size", "effect_size_low", "effect_size_high", "p_value", "n_x",
                                       "n_y", "n_a", "n_b"]
    assert frame["ci_method"].tolist() == ["BCa"]
    assert f"effect_size_low/high: {CI_CONVENTION}" in capsys.readouterr().out  # the printed report says how
    assert frame["test"].tolist() == [FIXTURE_SEAT]
    out = tmp_path / "lp.csv"
    assert main(["logprob", "--model", random_mlm.name, "--test", "en-gender-science", "--out", str(out)]) == 0
    frame = pd.read_csv(out)
    assert frame["structure"].tolist() == ["all", "T1", "T2", "T3"]
    assert (frame["effect_size_low"] < frame["effect_size"]).all() and (frame["effect_size"] < frame["effect_size_high"]).all()
    assert main(["seat", "--model", random_mlm.name, "--test", "nope"]) == 2


# ----------------------------------------------------------------------------- page
@pytest.mark.shared("data")  # weat7
def test_association_page_shows_engine_numbers(tiny_mlm):
    from streamlit.testing.v1 import AppTest

    from tests.conftest import REPO, TINY_MLM

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=240)
    at.run()
    at.switch_page("views/pages/association_tests.py").run()
    assert not at.exception
    at.selectbox(key="model_select").set_value("other…").run()
    at.text_input(key="model_custom").set_value(str(TINY_MLM)).run()
    at.multiselect(key="logprob_tests").set_value(["en-gender-career"]).run()
    at.multiselect(key="seat_tests").set_value(["weat7"]).run()
    at.button(key="logprob_score").click().run()
    at.button(key="seat_score").click().run()
    assert not at.exception, at.exception
    tables = [df.value for df in at.dataframe]
    expected = effect_sizes(runner.run(get("logprob"), tiny_mlm, "en-gender-career").stored,
                            load_logprob_test("en-gender-career"))
    logprob_table = next(t for t in tables if "structure" in t.columns)
    assert np.allclose(logprob_table["effect_size"], expected["effect_size"])
    assert list(logprob_table["significant"]) == ["yes (p < 0.05)" if p < 0.05 else "no" for p in expected["p_value"]]
    # (issue 41) no "Score now" above results that are all shown
    assert not {"logprob_score", "seat_score"} & {b.key for b in at.button}
    seat_table = next(t for t in tables if "method" in t.columns)
    seat = runner.run(get("seat"), tiny_mlm, "weat7").frame
    assert seat_table["effect_size"].iloc[0] == pytest.approx(seat["effect_size"].iloc[0])
    # each effect size with its interval: in the table, and drawn (the kit's Estimates: whiskers from low to high)
    for shown, engine in ((seat_table, seat), (logprob_table, expected)):
        for end in ("effect_size_low", "effect_size_high"):
            assert np.allclose(shown[end], engine[end])
    drawn = [json.loads(c.proto.spec)["data"] for c in at.get("plotly_chart")]
    bars = {round(y, 9): (tr["error_y"]["arrayminus"][i], tr["error_y"]["array"][i])
            for traces in drawn for tr in traces for i, y in enumerate(tr["y"])}
    for row in pd.concat([seat, expected]).itertuples():
        minus, plus = bars[round(row.effect_size, 9)]
        assert (row.effect_size - minus, row.effect_size + plus) == pytest.approx((row.effect_size_low, row.effect_size_high))
    assert any("bootstrap interval (approximate)" in json.dumps(c.proto.spec) for c in at.get("plotly_chart"))
