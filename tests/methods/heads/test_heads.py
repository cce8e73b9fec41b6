"""Attention-head bias: head masks, the |SEAT| gradient, the counter-stereotype test, masking, CLI, page."""
from __future__ import annotations

import base64
import copy
import json
import math

import numpy as np
import pandas as pd
import pytest

from biascore.stats.tests import one_sample_t_greater
import torch
from scipy import stats

from biascore.methods import get
from biascore.methods.heads import counter_stereotype as cs
from biascore.methods.heads import masking as hmask
from biascore.methods.heads.masks import HeadMask, head_layout, mask_from_heads
from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.models.loading import LanguageModel
from biascore.methods.heads import scorer as heads
from biascore.inputs.seat_tests import load_gender_wordlists, load_seat_test
from biascore.methods.heads.seat_embeddings import SeatEmbedder
from conftest import FIXTURE_DATA

#: a words test the project wrote itself (tests/fixtures/data/seat): 12 names x 8 contexts
FIXTURE_SEAT = str(FIXTURE_DATA / "seat" / "names-career-family.jsonl")

SMALL_SEAT = {
    "targ1": {"category": "Male", "examples": ["He is a man.", "The boy runs."]},
    "targ2": {"category": "Female", "examples": ["She is a woman.", "The girl runs."]},
    "attr1": {"category": "Career", "examples": ["The office is busy.", "A salary is paid."]},
    "attr2": {"category": "Family", "examples": ["The home is warm.", "Children play outside."]},
}


@pytest.fixture(scope="module")
def small_seat(tmp_path_factory):
    path = tmp_path_factory.mktemp("seat") / "small.jsonl"
    path.write_text(json.dumps(SMALL_SEAT))
    return load_seat_test(str(path))


def _tiny_gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=50, n_positions=32, n_embd=12, n_layer=2, n_head=3)
    return GPT2LMHeadModel(cfg).eval()


def _tiny_llama_gqa():
    from transformers import LlamaConfig, LlamaForCausalLM
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=6, max_position_embeddings=32)
    return LlamaForCausalLM(cfg).eval()


def _double(lm: LanguageModel) -> LanguageModel:
    return LanguageModel(lm.name, copy.deepcopy(lm.model).double(), lm.tokenizer, lm.kind, lm.uncased,
                         lm.fingerprint, lm.device, lm.source)


# --------------------------------------------------------------------------- head layout and masks
def test_layout_shapes(random_mlm, minilm, smollm):
    assert head_layout(random_mlm.model).shape == (2, 4)
    assert head_layout(minilm.model).shape == (6, 12)
    lay = head_layout(smollm.model)
    assert lay.shape == (30, 9) and lay.head_dim == 64  # 9 query heads over 3 kv heads
    assert head_layout(_tiny_gpt2()).shape == (2, 3)
    lay = head_layout(_tiny_llama_gqa())
    assert lay.shape == (3, 4) and lay.head_dim == 6  # head_dim from config, not hidden/heads


def _zero_by_hand(model, layer: int, head: int):
    """Copy of the model with head (layer, head)'s input columns of the output projection set to 0."""
    model = copy.deepcopy(model)
    lay = head_layout(model)
    proj, sl = lay.projections[layer], slice(head * lay.head_dim, (head + 1) * lay.head_dim)
    with torch.no_grad():
        if isinstance(proj, torch.nn.Linear):
            proj.weight[:, sl] = 0
        else:  # GPT-2 Conv1D: weight is (in, out)
            proj.weight[sl, :] = 0
    return model


@pytest.mark.parametrize("make", [_tiny_gpt2, _tiny_llama_gqa])
def test_mask_zero_equals_zeroing_by_hand_decoders(make):
    model = make()
    ids = torch.tensor([[1, 5, 7, 9, 11, 3]])
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        with HeadMask(model, mask_from_heads(head_layout(model).shape, [(1, 2)])):
            masked = model(input_ids=ids).logits
        by_hand = _zero_by_hand(model, 1, 2)(input_ids=ids).logits
        after = model(input_ids=ids).logits  # hooks removed on exit
    assert not torch.allclose(plain, masked)
    torch.testing.assert_close(masked, by_hand, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(after, plain)


def test_mask_zero_equals_zeroing_by_hand_encoders(random_mlm, minilm):
    for lm, head in ((random_mlm, (0, 3)), (minilm, (4, 7))):
        enc = lm.tokenizer(["the nurse said she was tired ."], return_tensors="pt")
        with torch.no_grad():
            plain = lm.model(**enc)[0]
            with HeadMask(lm.model, mask_from_heads(head_layout(lm.model).shape, [head])):
                masked = lm.model(**enc)[0]
            by_hand = _zero_by_hand(lm.model, *head)(**enc)[0]
        assert not torch.allclose(plain, masked)
        torch.testing.assert_close(masked, by_hand, rtol=1e-5, atol=1e-5)


def test_mask_shape_is_checked(random_mlm):
    with pytest.raises(ValueError, match="mask shape"):
        HeadMask(random_mlm.model, torch.ones(3, 4))


# --------------------------------------------------------------------------- gradient
def _abs_es(lm, test, mask) -> float:
    emb = SeatEmbedder(lm, test)
    with HeadMask(lm.model, mask), torch.no_grad():
        return abs(float(emb.effect_size(emb.embed_all())))


# Llama's RMSNorm computes in float32 even in a float64 copy, so the loss carries ~1e-7 noise there:
# a larger step (central differences, error O(eps^2)) keeps the difference quotient above that noise.
@pytest.mark.exactness
@pytest.mark.parametrize("which,test_name,probe,eps,rel", [
    ("random_mlm", FIXTURE_SEAT, [(0, 0), (1, 1), (1, 3)], 1e-4, 1e-5),
    pytest.param("tiny_mlm", "weat6b", [(0, 0), (1, 1), (1, 3)], 1e-4, 1e-5,
                 marks=pytest.mark.shared("tiny_mlm", "data")),
    ("smollm", "small", [(0, 4), (17, 2), (29, 8)], 1e-2, 1e-3),
])
def test_gradient_matches_finite_differences(which, test_name, probe, eps, rel, request, small_seat):
    lm = _double(request.getfixturevalue(which))
    test = small_seat if test_name == "small" else load_seat_test(test_name)
    b, es = heads.head_score_matrix(lm, test)
    assert b.shape == head_layout(lm.model).shape
    assert abs(es) == pytest.approx(_abs_es(lm, test, torch.ones(b.shape, dtype=torch.float64)), rel=1e-9)
    for layer, head in probe:
        up, down = torch.ones(b.shape, dtype=torch.float64), torch.ones(b.shape, dtype=torch.float64)
        up[layer, head] += eps
        down[layer, head] -= eps
        fd = (_abs_es(lm, test, up) - _abs_es(lm, test, down)) / (2 * eps)
        assert b[layer, head] == pytest.approx(fd, rel=rel, abs=1e-8)


@pytest.mark.exactness
def test_batched_gradient_equals_single_batch(random_mlm):
    test = load_seat_test(FIXTURE_SEAT)  # 12 words x 8 contexts = 96 texts
    one, es1 = heads.head_score_matrix(random_mlm, test, batch_size=512)
    many, es2 = heads.head_score_matrix(random_mlm, test, batch_size=50)
    np.testing.assert_allclose(many, one, rtol=1e-4, atol=1e-6)
    assert es1 == pytest.approx(es2, rel=1e-5)


def test_head_scores_shapes_and_frame(random_mlm, minilm, smollm, small_seat):
    for lm, shape in ((random_mlm, (2, 4)), (minilm, (6, 12)), (smollm, (30, 9))):
        frame = runner.run(get("heads"), lm, small_seat).frame
        assert list(frame.columns[:3]) == ["layer", "head", "score"]
        assert len(frame) == shape[0] * shape[1]
        # 0-based, as the schema says (issue 33, item 2)
        assert (frame["layer"].min(), frame["head"].min()) == (0, 0)
        assert (frame["layer"].max(), frame["head"].max()) == (shape[0] - 1, shape[1] - 1)
        assert heads.scores_to_matrix(frame).shape == shape
        assert np.isfinite(frame["score"]).all()


@pytest.mark.exactness
def test_cached_head_scores_match_a_fresh_computation(random_mlm, small_seat, tmp_path, monkeypatch):
    cache = ResultCache(tmp_path)
    runner.run(get("heads"), random_mlm, small_seat, cache=cache)
    with monkeypatch.context() as m:  # the second call must read the cache, not recompute
        m.setattr(heads, "head_score_matrix", lambda *a, **k: pytest.fail("recomputed instead of read from the cache"))
        cached = runner.run(get("heads"), random_mlm, small_seat, cache=cache).frame
    # independent of the cache: the batched two-step gradient path (8 texts in batches of 3)
    b, _ = heads.head_score_matrix(random_mlm, small_seat, batch_size=3)
    np.testing.assert_allclose(heads.scores_to_matrix(cached), b, rtol=1e-4, atol=1e-7)
    # and the effect size of the unmasked model, embedded without the head mask or gradients
    emb = SeatEmbedder(random_mlm, small_seat)
    with torch.no_grad():
        direct = float(emb.effect_size(emb.embed_all()))
    assert (cached["effect_size"] == cached["effect_size"].iloc[0]).all()
    assert cached["effect_size"].iloc[0] == pytest.approx(direct, rel=1e-5)


def test_word_level_embedding_is_mean_over_contexts(random_mlm):
    test = load_seat_test(FIXTURE_SEAT)
    emb = SeatEmbedder(random_mlm, test)
    with torch.no_grad():
        occ = emb.embed_all()
    item0 = occ[emb.occ.item_of == 0].mean(dim=0)
    torch.testing.assert_close((emb.average.float() @ occ)[0], item0)
    assert not test.sentence_level and load_seat_test(str(FIXTURE_DATA / "seat" / "sent-names-career-family.jsonl")).sentence_level


# --------------------------------------------------------------------------- counter-stereotype
def test_counter_pair_swaps_only_the_attribute(fixture_data):
    lists = load_gender_wordlists()
    pair = cs.make_counter_pair("Women are too emotional to lead.", lists)
    assert pair.counter == "Men are too emotional to lead."
    assert pair.target.lower() == "emotional"
    assert pair.counter[slice(*pair.counter_target_span)] == pair.target
    assert pair.counter[slice(*pair.counter_attr_span)] == "Men"
    assert cs.make_counter_pair("She told him he was emotional.", lists) is None  # two attribute words
    assert cs.make_counter_pair("Emotional people are fine, said he.", lists, attribute_first=True) is None


def test_word_attention_min_max_over_usable_columns():
    att = np.zeros((1, 1, 4, 4))
    att[0, 0, 3] = [0.5, 0.2, 0.1, 0.2]  # column 0 special (excluded), target row 3
    usable = np.array([False, True, True, True])
    offsets = [(0, 0), (0, 3), (4, 7), (8, 11)]
    w = cs.word_attention(att, offsets, usable, target_span=(8, 11), attr_span=(0, 3), causal=False)
    assert w[0, 0] == pytest.approx((0.2 - 0.1) / (0.2 - 0.1))
    w = cs.word_attention(att, offsets, usable, target_span=(8, 11), attr_span=(4, 7), causal=False)
    assert w[0, 0] == pytest.approx(0.0)


def test_t_test_matches_scipy_and_hand_formula():
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.05, 0.2, -0.05, 0.15])
    t, p = one_sample_t_greater(d)  # (its own check against scipy and the hand formula: tests/stats)
    assert t == pytest.approx(d.mean() / (d.std(ddof=1) / math.sqrt(len(d))))
    # group test: per-sentence mean over the heads of each group
    rng = np.random.default_rng(1)
    D = rng.normal(size=(12, 2, 3))
    scores = np.array([[0.5, -0.1, 0.2], [-0.3, 0.0, 0.7]])
    table = cs.counter_stereotype_test(D, scores)
    biased = D[:, scores > 0].mean(axis=1)
    ref = stats.ttest_1samp(biased, 0.0, alternative="greater")
    row = table.iloc[0]
    assert (row["heads"], row["N"]) == (3, 12)
    assert row["t"] == pytest.approx(ref.statistic) and row["p"] == pytest.approx(ref.pvalue)
    other = stats.ttest_1samp(D[:, scores <= 0].mean(axis=1), 0.0, alternative="greater")
    assert table.iloc[1]["t"] == pytest.approx(other.statistic)


@pytest.mark.exactness
@pytest.mark.parametrize("which, data", [
    ("random_mlm", "fixture_data"), pytest.param("tiny_mlm", "data_dir", marks=pytest.mark.shared("tiny_mlm", "data"))])
def test_counter_attention_frame_tiny_mlm(which, data, request, tmp_path):
    """The stored frame's first pair against the pair's attention computed alone. Both are computed here, on this
    process's torch threads: a frame stored earlier by another test may have been computed on another number of
    threads, which moves float32 attention by ~1e-6 (a different reduction order), not a difference of formula."""
    lm = request.getfixturevalue(which)
    request.getfixturevalue(data)  # the fixture sentences and word lists, or the real ones
    frame = runner.run(get("heads-counter"), lm, cache=ResultCache(tmp_path)).frame
    assert len(frame) >= 10
    d = cs.d_array(frame)
    assert d.shape == (len(frame), 2, 4)
    row = frame.iloc[0]
    pair = cs.make_counter_pair(row["sentence"], load_gender_wordlists())
    w_o, w_c = cs.pair_attention(lm, pair)
    np.testing.assert_allclose(d[0], w_o - w_c, atol=1e-6)


def test_page_helpers_match_the_flattened_frame(random_mlm, small_seat, fixture_data):
    frame = runner.run(get("heads-counter"), random_mlm).frame
    scores = runner.run(get("heads"), random_mlm, small_seat).frame
    row = frame.iloc[1]
    for layer, head in ((0, 0), (1, 3)):  # 0-based, as the head table
        expected = (np.reshape(row["w_orig"], (2, 4))[layer, head],
                    np.reshape(row["w_counter"], (2, 4))[layer, head])
        assert cs.head_attention(row, layer, head) == pytest.approx(expected)
    for layer, head in ((2, 0), (0, 4), (-1, 0)):
        with pytest.raises(ValueError, match="outside 2 layers x 4 heads"):
            cs.head_attention(row, layer, head)
    b = scores.pivot(index="layer", columns="head", values="score").to_numpy()
    pd.testing.assert_frame_equal(cs.counter_stereotype_table(frame, scores),
                                  cs.counter_stereotype_test(cs.d_array(frame), b))


def test_eager_view_leaves_the_shared_model_alone(random_mlm, smollm):
    """Attention weights come from a weight-sharing eager copy: the shared model keeps its implementation,
    and the weights equal those of a model loaded with eager attention from the start."""
    from biascore.models.loading import load_model

    for lm in (random_mlm, smollm):
        before = lm.model.config._attn_implementation
        assert before != "eager"  # otherwise this test would not test anything
        view = cs.eager_view(lm.model)
        assert view is cs.eager_view(lm.model) and view.config._attn_implementation == "eager"
        assert all(a is b for a, b in zip(view.parameters(), lm.model.parameters()))
        tokens, att, _, _ = cs.sentence_attentions(lm, "The nurse said she was tired.")
        assert lm.model.config._attn_implementation == before
        eager = load_model(lm.source if lm.kind == "masked" else lm.name, attn_implementation="eager")
        ids = torch.tensor([eager.tokenizer.convert_tokens_to_ids(tokens)])
        with torch.no_grad():
            ref = eager.model.base_model(input_ids=ids, output_attentions=True).attentions
        np.testing.assert_allclose(att, torch.stack([a[0] for a in ref]).numpy(), rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------- masking table
def test_masking_strategies():
    scores = np.array([[0.3, -0.2, 0.1], [-0.5, 0.9, 0.0]])
    strategies = dict(hmask.masking_strategies(scores, k=2, draws=3))
    assert strategies["top-2"] == [[(1, 1), (0, 0)]]
    assert strategies["bottom-2"] == [[(1, 0), (0, 1)]]
    assert strategies["all positive (3)"] == [[(0, 0), (0, 2), (1, 1)]]
    draws = strategies["random-2 (mean of 3 draws)"]
    assert len(draws) == 3 and all(len(set(h)) == 2 for h in draws)


@pytest.mark.exactness
def test_pseudo_perplexity_matches_one_at_a_time(random_mlm):
    sentences = ["The doctor read the report.", "A cat sat on the mat."]
    manual = []
    for sentence in sentences:
        ids = random_mlm.tokenizer(sentence.lower())["input_ids"]
        for i in range(1, len(ids) - 1):
            masked = list(ids)
            masked[i] = random_mlm.tokenizer.mask_token_id
            with torch.no_grad():
                logits = random_mlm.model(input_ids=torch.tensor([masked])).logits[0, i]
            manual.append(float(torch.log_softmax(logits.double(), -1)[ids[i]]))
    assert hmask.perplexity(random_mlm, sentences) == pytest.approx(math.exp(-np.mean(manual)), rel=1e-5)


@pytest.mark.exactness
def test_causal_perplexity_matches_hf_loss(smollm):
    sentence = "The weather was nice today."
    ids = smollm.tokenizer(sentence, add_special_tokens=False)["input_ids"]
    full = torch.tensor([[smollm.start_token_id()] + ids])
    with torch.no_grad():
        loss = smollm.model(input_ids=full, labels=full).loss
    assert hmask.perplexity(smollm, [sentence]) == pytest.approx(math.exp(float(loss)), rel=1e-4)


@pytest.mark.exactness
def test_masking_table_tiny_mlm_and_encoder(random_mlm, minilm, small_seat, fixture_data):
    frame = runner.run(get("heads"), random_mlm, small_seat).frame
    table = runner.run(get("heads-masking"), random_mlm, small_seat, k=2, draws=2, held_out=4).frame
    assert list(table["strategy"])[:3] == ["none (full model)", "top-2", "bottom-2"]
    full = table.iloc[0]
    assert full["effect_size"] == pytest.approx(frame["effect_size"].iloc[0], rel=1e-5)
    assert full["perplexity"] == pytest.approx(hmask.perplexity(random_mlm, hmask.held_out_sentences(4)), rel=1e-6)
    top = table.iloc[1]
    emb = SeatEmbedder(random_mlm, small_seat)
    mask = mask_from_heads((2, 4), hmask.masking_strategies(heads.scores_to_matrix(frame), 2, 2)[1][1][0])
    assert top["effect_size"] == pytest.approx(hmask.masked_effect_size(random_mlm, emb, mask), rel=1e-6)
    from biascore.methods.heads.head_table import top_heads
    assert top["heads"] == ", ".join(top_heads(frame, 2)["name"])  # the top heads' 0-based names (issue 33, item 2)
    enc_table = runner.run(get("heads-masking"), minilm, small_seat, k=1, draws=1).frame
    assert (enc_table["ppl_kind"] == "n/a").all() and enc_table["perplexity"].isna().all()


# --------------------------------------------------------------------------- CLI and page
def test_cli_writes_one_row_per_head(tmp_path, random_mlm, capsys, fixture_data):
    from biascore.cli.main import main
    out = tmp_path / "heads.csv"
    assert main(["heads", "--model", random_mlm.name, "--seat-test", "names-career-family", "--out", str(out),
                 "--mask-eval", "2", "--held-out", "3", "--draws", "2"]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns) == ["layer", "head", "score", "precision"] and len(frame) == 8
    assert (frame["precision"] == "exact (float32)").all()
    expected = runner.run(get("heads"), random_mlm, "names-career-family").frame
    np.testing.assert_allclose(frame["score"], expected["score"], rtol=1e-6)
    masking = pd.read_csv(tmp_path / "heads_masking.csv")
    assert len(masking) == 5 and "top-2" in set(masking["strategy"])
    assert "top heads" in capsys.readouterr().out
    assert main(["heads", "--model", random_mlm.name, "--seat-test", "no-such-test"]) == 2


def test_page_runs_and_shows_engine_numbers(tiny_mlm, data_dir, monkeypatch):
    from streamlit.testing.v1 import AppTest
    from tests.conftest import REPO, TINY_MLM

    # the server offers the tiny model (a ?model= link may name only offered or cached models)
    monkeypatch.setenv("BIASCORE_MODELS", str(TINY_MLM))
    at = AppTest.from_file(str(REPO / "views" / "pages" / "attention_heads.py"), default_timeout=240)
    at.query_params["model"] = str(TINY_MLM)
    at.query_params["seat"] = "weat6b"
    at.run()
    assert not at.exception, at.exception
    for key in ("ah_score_now", "ah_counter_now"):  # not cached by an earlier test: computed on request
        for button in [b for b in at.button if b.key == key]:
            button.click().run()
            assert not at.exception, at.exception
    frame = runner.run(get("heads"), tiny_mlm, "weat6b").frame
    top = heads.top_heads(frame, 5)
    shown = next(df.value for df in at.dataframe if "name" in df.value.columns)
    assert list(shown["name"])[:5] == list(top["name"])
    np.testing.assert_allclose(shown["score"].to_numpy()[:5], top["score"].to_numpy(), rtol=1e-6)
    text = " ".join(m.value for m in at.markdown)
    assert "2 layers × 4 heads" in text
    counter = cs.counter_stereotype_test(cs.d_array(runner.run(get("heads-counter"), tiny_mlm).frame),
                                         heads.scores_to_matrix(frame))
    shown = next(df.value for df in at.dataframe if "group" in df.value.columns)
    np.testing.assert_allclose(shown["t"], counter["t"], rtol=1e-9)
    assert list(shown["N"]) == list(counter["N"])
    at.number_input(key="n_held_out").set_value(3)
    at.checkbox(key="run_mask").check()
    at.run()
    assert not at.exception, at.exception
    table = runner.run(get("heads-masking"), tiny_mlm, load_seat_test("weat6b"), k=3, held_out=3).frame
    shown = next(df.value for df in at.dataframe if "strategy" in df.value.columns)
    np.testing.assert_allclose(shown["effect_size"], table["effect_size"], rtol=1e-9)
    np.testing.assert_allclose(shown["perplexity"], table["perplexity"], rtol=1e-9)
    # one counter pair: the head inputs are 0-based like the table, and name the top head (issue 33, item 2)
    at.checkbox(key="ah_one_pair").check()
    at.run()
    assert not at.exception, at.exception
    layer, head = (n for n in at.number_input if n.label.startswith(("Layer", "Head")))
    assert (layer.min, layer.max, head.min, head.max) == (0, 1, 0, 3)
    best = heads.top_heads(frame, 1).iloc[0]
    assert (layer.value, head.value) == (best["layer"], best["head"])
    assert any(c.value.startswith(f"Head {best['name']}: b = {best['score']:+.4f}") for c in at.caption)


def test_opening_the_page_on_cached_results_loads_no_model(tiny_mlm, data_dir, monkeypatch, tmp_path):
    """Head scores and counter-stereotype attentions cached: the page shows them without loading the model;
    asking for a computation (the attentions of one counter pair) loads it."""
    from streamlit.testing.v1 import AppTest

    import views.kit.models
    from biascore.models import handle as handle_module
    from tests.conftest import REPO, TINY_MLM

    monkeypatch.setenv("BIASCORE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("BIASCORE_MODELS", str(TINY_MLM))
    frame = runner.run(get("heads"), tiny_mlm, "weat6b").frame  # cached, as by the CLI or an earlier visit
    counter = runner.run(get("heads-counter"), tiny_mlm).frame
    loads: list[str] = []  # every way a page can load weights: through a handle (the runner's or the page's)

    def load(name, **kw):
        loads.append(name)
        return tiny_mlm

    monkeypatch.setattr(handle_module, "load_model", load)
    monkeypatch.setattr(views.kit.models, "get_handle", lambda name: handle_module.ModelHandle(name))  # fresh handles
    at = AppTest.from_file(str(REPO / "views" / "pages" / "attention_heads.py"), default_timeout=240)
    at.query_params.update(model=str(TINY_MLM), seat="weat6b")
    at.run()
    assert not at.exception, at.exception
    shown = next(df.value for df in at.dataframe if "name" in df.value.columns)
    assert list(shown["name"]) == list(heads.top_heads(frame, 10)["name"])
    shown = next(df.value for df in at.dataframe if "group" in df.value.columns)
    expected = cs.counter_stereotype_test(cs.d_array(counter), heads.scores_to_matrix(frame))
    np.testing.assert_allclose(shown["t"], expected["t"], rtol=1e-12)
    assert not [b for b in at.button if b.key == "ah_score_now"] and loads == []  # nothing loaded to show them
    at.checkbox(key="ah_one_pair").check().run()
    assert not at.exception, at.exception
    assert loads and len(at.get("plotly_chart")) >= 4  # the two attention heatmaps need the model
    # they are a run of the runner (heads-attention): stored, and drawn from what it stored
    row = counter.iloc[0]
    stored = runner.run(get("heads-attention"), tiny_mlm, pair=row["source"], only_cached=True)
    assert stored is not None
    layer, head = (int(n.value) for n in at.number_input if n.label.startswith(("Layer", "Head")))
    maps = [json.loads(c.proto.spec)["data"][0]["z"] for c in at.get("plotly_chart")
            if "head " in json.loads(c.proto.spec).get("layout", {}).get("title", {}).get("text", "")]
    for (_, side), z in zip(stored.frame.iterrows(), maps, strict=True):
        text = row["sentence"] if side["side"] == "original" else row["counter"]
        _, expected, _, _ = cs.sentence_attentions(tiny_mlm, text)  # what the page computed before
        if isinstance(z, dict):  # plotly's typed array
            z = np.frombuffer(base64.b64decode(z["bdata"]), dtype=z["dtype"]).reshape(
                [int(n) for n in str(z["shape"]).split(",")])
        np.testing.assert_allclose(z, expected[layer, head], rtol=1e-6)


def test_head_numbering_is_zero_based_in_every_consumer(smollm, small_seat, capsys, tmp_path):
    """Issue 33, item 2: the schema's 0-based layer/head in the frame, the report ("30 layers x 9 heads" for
    SmolLM2), the top heads' names, the masking table's head lists and the matrix all name the same head."""
    from biascore.cli.main import main
    from biascore.methods.heads.head_table import top_heads

    frame = runner.run(get("heads"), smollm, small_seat).frame
    b = heads.scores_to_matrix(frame)
    assert b.shape == (30, 9) and not np.isnan(b).any()
    top = top_heads(frame, 3)
    for _, row in top.iterrows():
        assert row["name"] == f"{row['layer']}-{row['head']}" and b[row["layer"], row["head"]] == row["score"]
    report = get("heads").report(runner.run(get("heads"), smollm, small_seat))
    assert "30 layers x 9 heads" in report[0]
    strategies = hmask.masking_strategies(b, 2, 1)
    assert strategies[1][0] == "top-2" and strategies[1][1][0] == [(int(top.loc[0, "layer"]), int(top.loc[0, "head"])),
                                   (int(top.loc[1, "layer"]), int(top.loc[1, "head"]))]
    seat = tmp_path / "small.jsonl"
    seat.write_text(json.dumps(SMALL_SEAT))
    assert main(["heads", "--model", "smollm2-135m", "--seat-test", str(seat), "--cache-dir",
                 str(tmp_path / "cache")]) == 0
    out = capsys.readouterr().out
    assert "30 layers x 9 heads" in out and "31 layers" not in out and f" {top.loc[0, 'name']} " in out
