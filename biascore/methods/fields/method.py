"""The semantic-fields method: USAS fields of the words that push a model toward bias (the paper's Table 6).

Gamboa & Lee, "A Novel Interpretability Metric for Explaining Bias in Language Models" (§3.4, §4.3, Table 6);
formulas in :mod:`biascore.methods.fields.scorer`. It reads the ``attribution`` method's cached result for
the same model and benchmark (computed first if missing), tags the more-biased sentences with pymusas USAS
(cached per sentence list) and caches one row per (word, field); the table per field is its summary.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from biascore.inputs.kinds import PAIRS
from biascore.contract.method import Method
from biascore.contract.presentation import Drawing
from biascore.contract.options import Options, option
from biascore.contract.schema import Column, columns
from biascore.contract.registry import register
from biascore.methods.attribution.method import Attribution
from biascore.methods.fields import scorer, table
from biascore.methods.fields import tagging as st_tags


@dataclass(frozen=True)
class FieldsOptions(Options):
    senses: str = option(scorer.DEFAULT_SENSES, choices=scorer.SENSES, convention=True,
                         help="top: the tagger's first-ranked tag per token; all: every candidate tag (as the "
                              "paper's tagging script did)")
    min_count: int = option(30, minimum=1, key=False, help="leave out fields with fewer words")
    top: int = option(10, minimum=0, key=False, help="fields per model, by share of b<0 (0 = all)")


@register
class Fields(Method):
    name = "fields"
    #: the semantic fields page draws the field tables, their words and sentences, and the lexicons' coverage
    class drawing(Drawing):
        field_table = table.field_table
        side_by_side = table.side_by_side
        field_words = table.field_words
        field_sentences = table.field_sentences
        lexicon_coverage = st_tags.lexicon_coverage
        missing_lexicon_files = st_tags.missing_lexicon_files
        NoLexiconError = st_tags.NoLexiconError
        language_names = st_tags.LANGUAGE_NAMES
    version = 2  # 2: a word a modified token overlaps is not a scored word
    order = 20
    quick_options = {"min_count": 1}
    summary_line = "USAS semantic fields of bias-inducing words: share of words with b<0 / b=0 / b>0 per field"
    paper = "Gamboa & Lee, A Novel Interpretability Metric for Explaining Bias in Language Models, §3.4, Table 6"
    formula = "per field f: ↑ = % words with b(w) < 0, ∘ = % with b(w) = 0, ↓ = % with b(w) > 0 (n_f ≥ min count)"
    input_kind = PAIRS
    Options = FieldsOptions
    schema = columns([
        ("pair_id", "int64", "the pair"), ("word_index", "int64", "the word's position among the pair's words"),
        ("word", "str", "the word"), ("start", "int64", "its first character"), ("end", "int64", "one past its last"),
        ("b", "float64", "b(w) = mean b(u) of its shared tokens"), ("field", "str", "a USAS field of the word"),
        ("tags", "str", "the USAS tags of the word's tokens"), ("sentence", "str", "the more-biased sentence")])
    model_kinds = ("masked", "causal")
    needs_model = False  # everything it needs is the attribution result (cached) and the tagger
    compare_flag = "--also"

    def validate_input(self, bench, options) -> None:
        scorer.require_lexicon(bench)

    def compute(self, ctx, bench, options: FieldsOptions) -> pd.DataFrame:
        scores = ctx.run(Attribution(), bench).frame
        langs = scorer.row_languages(scores, bench.language)
        return scorer.fields_from_scores(scores, langs, senses=options.senses, cache=ctx.cache, progress=ctx.progress)

    def conventions(self, ctx, bench, options) -> dict:
        return {"untagged_pairs": scorer.lexicon_coverage(bench)}

    def summary(self, result) -> pd.DataFrame:
        return scorer.fields_result(result).table

    def report(self, result) -> list[str]:
        r = scorer.fields_result(result)
        skipped = "".join(f"; {n} pairs in {st_tags.LANGUAGE_NAMES.get(k, k)} left out (no USAS lexicon)"
                          for k, n in r.untagged.items())
        return [f"\n{r.model} on {r.benchmark}: {r.words.drop_duplicates(['pair_id', 'word_index']).shape[0]} "
                f"tagged words, fields with n >= {result.options.min_count}{skipped}",
                r.table.to_string(index=False, float_format=lambda x: f"{x:.2f}") if len(r.table)
                else "(no field reaches the threshold)"]

    def report_all(self, results) -> list[str]:
        lines = [line for r in results for line in self.report(r)]
        if len(results) > 1:
            wide = scorer.side_by_side({r.model: scorer.fields_result(r).table for r in results})
            lines += ["\nside by side (↑ / ∘ / ↓ %):", wide.to_string(float_format=lambda x: f"{x:.2f}")]
        return lines

    def outputs(self, results) -> dict[str, pd.DataFrame]:
        return {"": pd.concat([f.table.assign(model=f.model, benchmark=f.benchmark)
                               for f in map(scorer.fields_result, results)], ignore_index=True)}
