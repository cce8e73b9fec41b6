"""The attention-head bias methods: head scores, targeted masking, the counter-stereotype attentions.

Yang et al., "Bias A-head? Analyzing bias in transformer-based language model attention heads":

* ``heads`` — b_ij = ∂|SEAT effect size| / ∂m_ij at m = 1 for every head (eqs. 2–4; :mod:`.scorer`);
* ``heads-masking`` — Table 1a: SEAT effect size and (pseudo-)perplexity with the top-K / bottom-K / K random
  / all positive heads masked (§6; :mod:`.masking`);
* ``heads-counter`` — the counter-stereotype attentions of Figure 4 (§5.2; :mod:`.counter_stereotype`); the
  t-test against the head scores is its page's table (:func:`.counter_stereotype.counter_stereotype_table`);
* ``heads-attention`` — every head's attention in both sentences of one counter pair (its page's attention maps).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from biascore.inputs.datasets import benchmark_path
from biascore.store.hashing import bytes_sha256
from biascore.inputs.kinds import SEAT
from biascore.contract.input_kind import InputKind
from biascore.contract.method import Method
from biascore.contract.presentation import Drawing
from biascore.contract.options import Options, option
from biascore.contract.schema import Column, columns
from biascore.contract.registry import register
from biascore.inputs.seat_tests import WORD_TEMPLATES, gender_wordlist_path
from biascore.models.handle import ModelHandle
from biascore.models.precision import agreement
from biascore.runs import runner
from biascore.methods.heads import counter_stereotype as cs
from biascore.methods.heads import masking, scorer
from biascore.methods.heads.head_table import top_heads

PAPER = "Yang et al., Bias A-head? Analyzing bias in transformer-based language model attention heads"


@dataclass(frozen=True)
class HeadOptions(Options):
    batch_size: int = option(256, minimum=1, key=False,
                             help="texts per forward pass; a test that fits in one batch needs no second forward")
    mask_eval: int | None = option(None, minimum=1, key=False, metavar="K",
                                   help="also mask top-K / bottom-K / K random / all positive heads and report SEAT "
                                        "effect size and (pseudo-)perplexity (the heads-masking method); the table "
                                        "goes to <out>_masking.csv")
    held_out: int = option(40, minimum=1, key=False, metavar="N",
                           help="held-out CrowS-Pairs sentences for the (pseudo-)perplexity of --mask-eval")
    draws: int = option(5, minimum=1, key=False, help="random head sets averaged in --mask-eval")


@register
class HeadBias(Method):
    name = "heads"
    #: the heads page draws the layer × head matrix and the top heads
    class drawing(Drawing):
        top_heads = top_heads
    #: 2: layers and heads 0-based (1-based before, against the schema)
    version = 2
    order = 30
    summary_line = "attention-head bias scores: gradient of |SEAT effect size| w.r.t. head masks"
    paper = PAPER + ", eqs. 2–4"
    formula = "b_ij = ∂|ES(X, Y, A, B)| / ∂m_ij at m = 1 (positive: masking the head lowers the bias)"
    input_kind = SEAT
    Options = HeadOptions
    schema = columns([
        ("layer", "int64", "layer (0-based)"), ("head", "int64", "head (0-based)"),
        ("score", "float64", "b_ij; > 0 = a biased head"),
        ("effect_size", "float64", "signed SEAT effect size of the unmasked model (the same on every row)")])

    def key_parts(self, loaded, options, data_dir=None) -> dict:
        return {**super().key_parts(loaded, options, data_dir), "templates": list(WORD_TEMPLATES)}

    def model_key_parts(self, identity, options) -> dict:  # quantized: measured against float32 (a key of its own)
        return {"float32_agreement": 1} if identity.weights else {}

    def compute(self, ctx, test, options: HeadOptions) -> pd.DataFrame:
        exact = None
        if ctx.handle.spec.quantize:  # the float32 run of the same model first (cached), to measure against
            fp32 = ModelHandle(replace(ctx.handle.spec, quantize=None))
            exact = runner.run(self, fp32, test, cache=ctx.cache, data_dir=ctx.data_dir, batch_size=options.batch_size,
                               progress=ctx.progress)
            fp32.release()
            ctx.used["heads float32"] = exact.digest
        frame = scorer.head_frame(ctx.model(), test, batch_size=options.batch_size, progress=ctx.progress)
        ctx.float32_agreement = exact and agreement(frame["score"], exact.frame["score"])
        return frame

    def followups(self, result) -> dict:
        o = result.options
        if o.mask_eval is None:
            return {}
        return {"masking": (HeadMasking(), {"k": o.mask_eval, "draws": o.draws, "held_out": o.held_out})}

    def summary(self, result) -> pd.DataFrame:
        return top_heads(result.frame, 10)[["name", "layer", "head", "score"]]

    def output(self, result) -> pd.DataFrame:
        return result.frame[["layer", "head", "score"]]

    def outputs(self, results) -> dict[str, pd.DataFrame]:
        out = super().outputs(results)
        masking_tables = [r.extras["masking"].frame for r in results if "masking" in r.extras]
        if masking_tables:
            out["_masking"] = pd.concat(masking_tables, ignore_index=True)
        return out

    def report(self, result) -> list[str]:
        frame, test = result.frame, result.input
        layers, heads = int(frame["layer"].max()) + 1, int(frame["head"].max()) + 1
        return [f"{result.model}: {layers} layers x {heads} heads; SEAT {test.name} ({test.describe()}) "
                f"effect size {frame['effect_size'].iloc[0]:+.4f}; {int((frame['score'] > 0).sum())} positive heads",
                "top heads:", top_heads(frame, 10)[["name", "score"]].to_string(index=False)]


@dataclass(frozen=True)
class MaskingOptions(Options):
    k: int = option(3, minimum=1, help="heads per targeted set (top-K, bottom-K, K random)")
    draws: int = option(5, minimum=1, help="random head sets averaged")
    held_out: int = option(40, minimum=1, help="held-out CrowS-Pairs sentences for the (pseudo-)perplexity")


@register
class HeadMasking(Method):
    name = "heads-masking"
    #: 2: the masked heads named 0-based (1-based before)
    version = 2
    order = 31
    quick_options = {"k": 1, "draws": 1, "held_out": 2}
    summary_line = "targeted head masking: SEAT effect size and (pseudo-)perplexity with chosen heads masked"
    paper = PAPER + ", §6, Table 1a"
    formula = "m_ij = 0 for top-K / bottom-K / K random / all b_ij > 0; report |ES| and PPPL (masked) or PPL (causal)"
    input_kind = SEAT
    Options = MaskingOptions
    schema = columns([
        ("strategy", "str", "which heads are masked"), ("heads", "str", "the masked heads (layer-head, 0-based)"),
        ("n_masked", "int64", "number of heads masked"),
        ("effect_size", "float64", "SEAT effect size of the masked model (mean over random draws)"),
        ("abs_effect_size", "float64", "mean |effect size|"),
        ("ppl_kind", "str", "pseudo-perplexity (masked LM), perplexity (causal LM) or n/a (encoder)"),
        ("perplexity", "float64", "on the held-out sentences"), ("n_held_out", "int64", "held-out sentences")])

    def key_parts(self, loaded, options: MaskingOptions, data_dir=None) -> dict:
        held_out = masking.held_out_sentences(options.held_out, data_dir)
        return {**super().key_parts(loaded, options, data_dir), "held_out_hash": bytes_sha256("\n".join(held_out))[:16]}

    model_key_parts = HeadBias.model_key_parts

    def compute(self, ctx, test, options: MaskingOptions) -> pd.DataFrame:
        heads = ctx.run(HeadBias(), test, progress=None)
        ctx.float32_agreement = (heads.meta.get("info") or {}).get("float32_agreement")  # the label of its heads
        return masking.masking_rows(ctx.model(), test, heads.frame, k=options.k, draws=options.draws,
                                    n_held_out=options.held_out, data_dir=ctx.data_dir, progress=ctx.progress)

    def report(self, result) -> list[str]:
        table = result.frame
        shown = table.assign(heads=[h if len(h) <= 40 else h[:37] + "..." for h in table["heads"]])
        return ["targeted head masking:", shown.to_string(index=False)]

    def data_files(self, loaded, options, data_dir: Path) -> list[Path]:
        return [benchmark_path("crows-en", data_dir)]


COUNTER_SOURCES = InputKind(
    name="counter", flag="--input", noun="CrowS-Pairs gender sentences + gender word lists",
    default="crows-gender-pairs",
    help="the counter-stereotype sentences: gender pairs of crows-en / crows-en-gso (without them: the shipped "
         "demo pairs) and the gender word lists",
    load=lambda name, data_dir: cs.counter_sources(data_dir), names=lambda data_dir: ["crows-gender-pairs"],
    files=lambda src, data_dir: [
        *(gender_wordlist_path(part, data_dir) for part in ("female", "male", "stereotype")),
        *(benchmark_path(name, data_dir) for name in src.sources)],
    selectable=False,
)


@register
class HeadCounterStereotype(Method):
    name = "heads-counter"
    #: the heads page draws the counter-stereotype table, its sentences' source and one pair's head attention
    class drawing(Drawing):
        table = cs.counter_stereotype_table
        source_note = cs.SOURCE_NOTE
        head_attention = cs.head_attention
    order = 32
    summary_line = "counter-stereotype attentions: target→attribute attention per head, original vs counter sentence"
    paper = PAPER + ", §5.2, Figure 4"
    formula = "d = w(orig) − w(counter) per head; one-tailed t-test of mean d > 0 over sentences per head group"
    input_kind = COUNTER_SOURCES
    Options = Options
    schema = columns([
        ("source", "str", "benchmark#pair the sentence comes from"), ("sentence", "str", "original sentence"),
        ("counter", "str", "the sentence with the attribute word swapped"),
        ("attribute", "str", "the gender word"), ("counterpart", "str", "its counterpart"),
        ("target", "str", "the stereotype target word"), ("layers", "int64", "layers"), ("heads", "int64", "heads"),
        ("w_orig", "list[float]", "normalised target→attribute attention per head (layers × heads, flattened)"),
        ("w_counter", "list[float]", "the same in the counter sentence"), ("d", "list[float]", "w_orig − w_counter")])

    def compute(self, ctx, sources: cs.CounterSources, options) -> pd.DataFrame:
        return cs.counter_rows(ctx.model(), sources, progress=ctx.progress)

    def summary(self, result) -> pd.DataFrame:
        return pd.DataFrame({"sentences": [len(result.frame)], "sources": [", ".join(sorted(result.input.sources))]})


@dataclass(frozen=True)
class PairAttentionOptions(Options):
    pair: str = option("", metavar="SOURCE", help="the counter pair, by its source as the heads-counter result names "
                                                  "it (benchmark#pair id); empty: the first")


@register
class HeadPairAttention(Method):
    name = "heads-attention"
    #: the heads page draws one counter pair's attention maps (and bertviz's head view) from it
    class drawing(Drawing):
        attentions = cs.attention_array
    order = 33
    summary_line = "every head's attention in both sentences of one counter pair (original and counter)"
    paper = PAPER + ", §5.2, Figure 4"
    formula = "A_ij[t, s] = attention of head i-j from token t to token s (eager attention), in each sentence"
    input_kind = COUNTER_SOURCES
    Options = PairAttentionOptions
    schema = columns([
        ("source", "str", "benchmark#pair the sentence comes from"), ("side", "str", "original or counter"),
        ("text", "str", "the sentence"), ("tokens", "list[str]", "its tokens (a causal model's start token first)"),
        ("layers", "int64", "layers"), ("heads", "int64", "heads"),
        ("attention", "list[float]", "attention weights, layers × heads × tokens × tokens, flattened")])

    def compute(self, ctx, sources: cs.CounterSources, options: PairAttentionOptions) -> pd.DataFrame:
        return cs.pair_attentions(ctx.model(), sources, options.pair)

    def check(self, model_kind: str, loaded: cs.CounterSources, options: PairAttentionOptions) -> None:
        super().check(model_kind, loaded, options)
        cs.counter_pair(loaded, options.pair, causal=model_kind == "causal")  # an unknown pair: before any load

    def summary(self, result) -> pd.DataFrame:
        return result.frame.drop(columns="attention")
