"""The words method: every word type of a benchmark with its bias attribution, for one model or two.

Gamboa & Lee (§3.3–3.4, §4.3), one level below the semantic fields: per word type, the pairs it occurs in,
mean b, a 95 % Student-t interval over occurrences and the share of occurrences with b < 0 (formulas in
:mod:`biascore.methods.words.table`). It reads the ``attribution`` method's cached result (computed first
if missing) and caches one row per word occurrence; the word table is its summary.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from biascore.inputs.kinds import PAIRS
from biascore.contract.method import Method
from biascore.contract.presentation import Drawing
from biascore.contract.options import OptionError, Options, option
from biascore.contract.schema import Column, columns
from biascore.contract.registry import register
from biascore.methods.attribution.jsd import JSD_VARIANTS
from biascore.methods.attribution.method import Attribution
from biascore.methods.words import table as scorer


@dataclass(frozen=True)
class WordsOptions(Options):
    jsd: str = option("reference", choices=JSD_VARIANTS, convention=True,
                      help="reference: d = JSD^(1/4) as the published code; paper: d = sqrt(JSD)")
    bias_type: tuple[str, ...] = option((), key=False, metavar="T",
                                        help="count only pairs of this bias type (repeatable; default: all)")
    min_count: int = option(1, minimum=1, key=False, help="leave out words in fewer pairs")
    word: str | None = option(None, key=False, help="list the pairs of this word instead of the table")
    top: int = option(30, minimum=0, key=False, help="rows printed (0 = all; --out always gets every row)")


@register
class Words(Method):
    name = "words"
    #: the words page draws the word table, two models side by side and the pairs of one word
    class drawing(Drawing):
        word_table = scorer.word_table
        compare_words = scorer.compare_words
        word_pairs = scorer.word_pairs
        max_pair_count = scorer.max_pair_count
    version = 2  # 2: a word a modified token overlaps is not a scored word (docs/methods.md, "Words")
    order = 15
    summary_line = "every word type of a benchmark with its pair count, mean b, 95 percent t-interval and share of b<0"
    paper = "Gamboa & Lee, A Novel Interpretability Metric for Explaining Bias in Language Models, §3.3–3.4, §4.3"
    formula = "per word type: mean b over occurrences, mean ± t_{0.975,n−1}·s/√n, share of b < 0"
    input_kind = PAIRS
    Options = WordsOptions
    schema = columns([
        ("pair_id", "int64", "the pair"), ("bias_type", "str", "its bias type"),
        ("word_index", "int64", "the word's position among the pair's scored words"), ("word", "str", "as written"),
        ("word_type", "str", "NFKC, apostrophes unified, case-folded"), ("b", "float64", "b(w) of this occurrence")])
    model_kinds = ("masked", "causal")
    needs_model = False  # the attribution result (cached) is all it reads
    compare_flag = "--compare"

    def validate_input(self, bench, options: WordsOptions) -> None:
        known = set(bench.frame["bias_type"].astype(str))
        unknown = [t for t in options.bias_type if t not in known]
        if unknown:
            raise OptionError(f"unknown --bias-type {', '.join(unknown)} for {bench.name}; choose from "
                              + ", ".join(sorted(known)))
        if options.word is not None and not isinstance(self.word_type(options.word), str):
            raise OptionError(f"--word {options.word!r} has no letter or digit (punctuation is not a word type)")

    @staticmethod
    def word_type(word: str):
        return scorer.word_types(pd.Series([word])).iloc[0]

    def compute(self, ctx, bench, options: WordsOptions) -> pd.DataFrame:
        return scorer.word_occurrences(ctx.run(Attribution(), bench, jsd=options.jsd).frame)

    def followups(self, result) -> dict:
        if result.options.word is None:
            return {}
        return {"pairs": (Attribution(), {"jsd": result.options.jsd})}

    def summary(self, result) -> pd.DataFrame:
        o = result.options
        if o.word is not None and "pairs" in result.extras:
            return scorer.word_pairs(result.frame, result.extras["pairs"].frame, self.word_type(o.word), o.bias_type)
        return scorer.word_table(result.frame, o.bias_type, o.min_count)

    def _scope(self, result) -> str:
        types = result.options.bias_type
        return f"bias type {', '.join(types)}" if types else "all bias types"

    def report_all(self, results) -> list[str]:
        first, o = results[0], results[0].options
        if len(results) > 1:
            if results[1].model == first.model:
                raise OptionError("--compare needs a model other than --model")
            table = self.table(results)
            head = (f"{first.model} vs {results[1].model} on {first.input_name}, {self._scope(first)}: {len(table)} "
                    f"word types in >= {o.min_count} pair(s) for at least one model")
        elif o.word is not None:
            table = self.summary(first)
            head = (f"{first.model} on {first.input_name}, {self._scope(first)}: {len(table)} pair(s) with the word "
                    f"{self.word_type(o.word)!r}")
        else:
            table = self.summary(first)
            head = (f"{first.model} on {first.input_name}, {self._scope(first)}: {len(table)} word types in >= "
                    f"{o.min_count} pair(s); b < 0 pushes toward the more-biased sentence; 95% Student-t interval "
                    "over occurrences (NaN when n = 1)")
        shown = table if not o.top else table.head(o.top)
        with pd.option_context("display.width", 200, "display.max_columns", 20, "display.max_colwidth", 60):
            lines = [head, shown.to_string(index=False, float_format=lambda x: f"{x:.4g}") if len(shown) else "(none)"]
        if o.top and len(table) > o.top:
            lines.append(f"… {len(table) - o.top} more (--top 0 prints all; --out writes all)")
        return lines

    def table(self, results) -> pd.DataFrame:
        if len(results) > 1:
            o = results[0].options
            return scorer.compare_words({r.model: r.frame for r in results}, o.bias_type, o.min_count)
        return self.summary(results[0])

    def outputs(self, results) -> dict[str, pd.DataFrame]:
        return {"": self.table(results)}
