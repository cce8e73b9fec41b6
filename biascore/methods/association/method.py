"""The embedding association methods: WEAT/SEAT, CEAT, and masked-LM log-probability bias.

The Bangla context-length paper ("Bangla contextual bias": WEAT/SEAT effect sizes, CEAT over segment lengths,
and the log-probability bias test of Kurita et al.); formulas in :mod:`.weat`, :mod:`.ceat`,
:mod:`.logprob_bias` and :mod:`biascore.stats.effect_size` / :mod:`biascore.stats.permutation`.

* ``seat`` — one row per test: effect size d = [mean s(x) − mean s(y)] / std s(w), one-sided permutation p;
* ``ceat`` — one row per segment length: random-effects combined effect size over sampled contexts;
* ``logprob`` — per sentence structure: effect size and permutation p of the prior-corrected scores
  log(p_tgt / p_prior) (the per-sentence scores are the cached frame, ``result.stored``).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from scipy.stats import norm

from biascore.store.hashing import bytes_sha256
from biascore.inputs.kinds import SEAT
from biascore.contract.input_kind import InputKind
from biascore.contract.presentation import Drawing, Headline
from biascore.contract.method import Method, NotApplicable
from biascore.contract.options import Options, option
from biascore.contract.schema import Column, columns
from biascore.contract.registry import register
from biascore.methods.association import logprob_bias, scorer
from biascore.stats.effect_size import CI_CONVENTION, CI_LEVEL

PAPER = "Bangla contextual bias paper (WEAT/SEAT, CEAT across context lengths, log-probability bias)"
TEST_FLAG = "--test"

LOGPROB_TEST = InputKind(
    name="logprob-test", flag=TEST_FLAG, noun="log-probability test", default="en-gender-career",
    help="log-probability test name: " + ", ".join(logprob_bias.list_logprob_tests()),
    load=lambda name, data_dir: logprob_bias.load_logprob_test(name, data_dir),
    names=lambda data_dir: logprob_bias.list_logprob_tests(),
    files=lambda test, data_dir: logprob_bias.logprob_files(test.name, data_dir),
)


INTERVAL = [("effect_size_low", "float64", "95% interval of d, low end (bootstrap: approximate)"), ("effect_size_high",
            "float64", "its high end"), ("ci_method", "str", "BCa or percentile (BCa undefined)")]
SEAT_COLUMNS = columns([
    ("test", "str", "the test"), ("effect_size", "float64", "WEAT/SEAT effect size d"), *INTERVAL,
    ("p_value", "float64", "one-sided permutation p-value"), ("n_x", "int64", "|X|"), ("n_y", "int64", "|Y|"),
    ("n_a", "int64", "|A|"), ("n_b", "int64", "|B|"), ("method", "str", "WEAT (words) or SEAT (sentences)"),
    ("embedding", "str", "what was embedded and how"), ("language", "str", "the test's language"),
    ("categories", "str", "the test's four categories")])


def interval_line(result) -> str:  # how its effect-size intervals were computed (CEAT's: its model's)
    return "effect_size_low/high: " + result.conventions.get("effect_size_interval", "95% CES ± z·SE (random effects)")


class _EffectSizeTable(Method):
    """Seat and Ceat: a small table of effect sizes, printed and written with its leading columns first."""

    leading: tuple[str, ...] = ()

    def headline(self, options) -> Headline:
        return Headline("effect size", "effect_size", "Cohen's d-like effect size of the association; 0 = no "
                        "association, larger magnitude = stronger (sign: towards the first attribute set)",
                        aggregation="max_abs")

    def summary(self, result) -> pd.DataFrame:
        cols = list(self.leading)
        return result.frame[cols + [c for c in result.frame.columns if c not in cols]]

    def report(self, result) -> list[str]:
        return [self.summary(result).to_string(index=False), interval_line(result)]

    def outputs(self, results) -> dict[str, pd.DataFrame]:
        return {"": pd.concat([self.summary(r) for r in results], ignore_index=True)}


@dataclass(frozen=True)
class SeatOptions(Options):
    pooling: str = option("mean", choices=("mean", "first"), help="sentence embedding (SEAT)")
    word_mode: str = option("contextual", choices=("contextual", "input"), flag="--word-embedding",
                            help="WEAT word vectors: the word embedded alone (mean over its tokens), or its input "
                                 "embedding")
    seed: int = option(0, minimum=0, help="seed of the permutation test and the effect size's bootstrap")
    n_samples: int = option(100_000, minimum=100, help="permutations sampled when exact enumeration is too large")


@register
class Seat(_EffectSizeTable):
    name = "seat"
    order = 50
    quick_options = {"n_samples": 1000}
    summary_line = "WEAT/SEAT effect size with a one-sided permutation p-value"
    paper = PAPER + "; Caliskan et al. (WEAT), May et al. (SEAT)"
    formula = "d = [mean_x s(x,A,B) − mean_y s(y,A,B)] / std_w s(w,A,B); p by permutation of X ∪ Y"
    input_kind = SEAT
    input_flag = TEST_FLAG
    Options = SeatOptions
    schema = SEAT_COLUMNS
    leading = ("test", "effect_size", "effect_size_low", "effect_size_high", "p_value", "n_x", "n_y", "n_a", "n_b")
    version = 2  # 2: the effect size's 95% interval

    def conventions(self, ctx, loaded, options) -> dict:
        return {"effect_size_interval": CI_CONVENTION}

    def key_parts(self, test, options: SeatOptions, data_dir=None) -> dict:
        parts = super().key_parts(test, options, data_dir)
        if test.kind != "words":  # the word embedding mode does not apply to sentence tests
            parts["word_mode"] = None
        return parts

    def compute(self, ctx, test, options: SeatOptions) -> pd.DataFrame:
        return scorer.seat_row(ctx.model(), test, pooling=options.pooling, word_mode=options.word_mode,
                               seed=options.seed, n_samples=options.n_samples, progress=ctx.progress)


def _segment(value: str) -> int | None:
    if value.lower() in ("all", "none", "full"):
        return None
    try:
        n = int(value)
    except ValueError:
        raise ValueError(f"segment length must be a whole number or 'all', got {value!r}") from None
    if n < 1:
        raise ValueError("segment length must be positive or 'all'")
    return n


@dataclass(frozen=True)
class CeatOptions(Options):
    segment_lengths: tuple[int | None, ...] = option(default_factory=lambda: scorer.SEGMENT_LENGTHS, repeat=True,
                                                     parse=_segment, minimum=1, metavar="N",
                                                     help="words per segment; 'all' = the whole line")
    corpus: str | None = option(None, help="UTF-8 text file to take contexts from (default: Bangla sample corpus, "
                                           "or CrowS-Pairs sentences for English); keyed by its content")
    n_contexts: int = option(50, minimum=2, help="contexts sampled per word (N)")
    draws: int = option(1000, minimum=1, help="random draws combined by the random-effects model")
    encoder: bool = option(False, help="load an MLM checkpoint as a plain encoder")
    seed: int = option(0, minimum=0, help="seed of the context sampling and the draws")


@register
class Ceat(_EffectSizeTable):
    name = "ceat"
    order = 51
    quick_options = {"segment_lengths": (5,), "n_contexts": 2, "draws": 5}
    summary_line = "CEAT: contextual embeddings from a corpus, random-effects combined effect size per segment length"
    paper = PAPER + "; Guo & Caliskan (CEAT)"
    formula = "CES = Σ v_i⁻¹ ES_i / Σ v_i⁻¹ with v_i = within + between-draw variance (random effects)"
    input_kind = SEAT
    input_flag = TEST_FLAG
    Options = CeatOptions
    leading = ("test", "segment_length", "effect_size", "effect_size_low", "effect_size_high", "p_value", "n_x", "n_y",
               "n_a", "n_b")
    stored_schema = columns([
        ("test", "str", "the test"), ("segment_length", "str", "words per context segment ('all' = the line)"),
        ("effect_size", "float64", "combined effect size CES"), ("se", "float64", "its random-effects standard error"),
        ("p_value", "float64", "two-sided p"), ("n_x", "int64", "|X|"), ("n_y", "int64", "|Y|"),
        ("n_a", "int64", "|A|"), ("n_b", "int64", "|B|"), ("corpus", "str", "where the contexts came from")])
    schema = stored_schema + columns([("effect_size_low", "float64", "95% interval CES − z·SE (random effects)"),
                                      ("effect_size_high", "float64", "CES + z·SE")])

    def derive(self, ctx, stored, test, options) -> pd.DataFrame:  # the random-effects model's normal interval
        es, half = stored["effect_size"], norm.ppf(0.5 + CI_LEVEL / 2) * stored["se"]
        return stored.assign(effect_size_low=es - half, effect_size_high=es + half)

    def load_variant(self, options: CeatOptions) -> dict:
        return {"kind": "encoder" if options.encoder else None, "attn_implementation": None}

    def key_parts(self, test, options: CeatOptions, data_dir=None) -> dict:
        parts = super().key_parts(test, options, data_dir)
        _, text = scorer.corpus_for(test, options.corpus, data_dir)
        parts["corpus"] = bytes_sha256(text)[:16]  # the corpus by content, never by path
        parts.pop("encoder")  # the model kind (encoder) is in the model identity already
        return parts

    def compute(self, ctx, test, options: CeatOptions) -> pd.DataFrame:
        label, text = scorer.corpus_for(test, options.corpus, ctx.data_dir)
        if options.corpus:
            label = Path(label).name  # the file's name only: results never carry a server path
        return scorer.ceat_rows(ctx.model(), test, label, text, segment_lengths=options.segment_lengths,
                                n_contexts=options.n_contexts, n_draws=options.draws, seed=options.seed,
                                progress=ctx.progress)

    def data_files(self, test, options: CeatOptions, data_dir: Path) -> list[Path]:
        if options.corpus:
            return []  # a user's corpus is not shipped in a snapshot
        return scorer.default_corpus_files(test.language, data_dir)


@dataclass(frozen=True)
class LogprobOptions(Options):
    seed: int = option(0, minimum=0, key=False, help="seed of the permutation test and the effect sizes' bootstrap")
    scores_out: str | None = option(None, key=False, help="also write the per-sentence scores to this CSV file")


@register
class Logprob(Method):
    name = "logprob"
    #: the association page lists the tests and draws each sentence's prior against its corrected score
    class drawing(Drawing):
        tests = logprob_bias.list_logprob_tests
        load_test = logprob_bias.load_logprob_test
        prior_vs_corrected = logprob_bias.prior_vs_corrected
    order = 52
    version = 2  # 2: the effect size's 95% interval
    summary_line = "masked-LM log-probability bias (Kurita et al.): effect size per sentence structure"
    paper = PAPER + "; Kurita et al. (log-probability bias)"
    formula = "score = log p_tgt − log p_prior (attribute masked too); effect size and permutation p per structure"
    input_kind = LOGPROB_TEST
    input_flag = TEST_FLAG
    Options = LogprobOptions
    model_kinds = ("masked",)
    load_kind = "masked"
    stored_schema = columns([
        ("test", "str", "the test"), ("structure", "str", "sentence structure"),
        ("attribute", "str", "the attribute word"), ("target", "str", "the target word"),
        ("score", "float64", "log p_tgt − log p_prior")])
    schema = columns([
        ("test", "str", "the test"), ("structure", "str", "sentence structure (or 'all')"),
        ("effect_size", "float64", "effect size of the scores between the two target groups"), *INTERVAL,
        ("p_value", "float64", "permutation p-value")])
    cache_derived = True
    conventions = Seat.conventions

    def check(self, model_kind: str, loaded, options) -> None:
        if model_kind != "masked":
            raise NotApplicable(f"the log-probability test needs a masked LM; this model is {model_kind}")

    def compute(self, ctx, test, options) -> pd.DataFrame:
        return logprob_bias.score_logprob(ctx.model(), test, progress=ctx.progress)

    def derive(self, ctx, stored, test, options: LogprobOptions) -> pd.DataFrame:
        return logprob_bias.effect_sizes(stored, test, seed=options.seed)

    def derive_key_parts(self, options: LogprobOptions) -> dict:
        return {"seed": options.seed}

    def report(self, result) -> list[str]:
        return [result.frame.to_string(index=False), interval_line(result)]

    def outputs(self, results) -> dict[str, pd.DataFrame]:
        out = {"": pd.concat([r.frame for r in results], ignore_index=True)}
        last = results[-1]
        if last.options.scores_out:
            out[last.options.scores_out] = last.stored  # a path of its own (legacy --scores-out: the last test)
        return out
