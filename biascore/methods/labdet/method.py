"""The LABDet method: a sentiment probe on a frozen model, relative sentiment per nationality.

Koksal et al. (2023), "Language-Agnostic Bias Detection in Language Models with Bias Probing" (§3–§5);
formulas in :mod:`biascore.methods.labdet.scorer`. The cached frame holds one row per template × adjective ×
nationality item (both probes' probabilities and relative sentiments, held-out accuracies, the neutral
filler); the per-nationality table (mean, template-bootstrap interval, Wilcoxon p, direction) is its summary.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from biascore.models.embeddings import POOLINGS, cached_embeddings
from biascore.contract.input_kind import InputKind
from biascore.contract.method import Method
from biascore.contract.presentation import Headline, View
from biascore.contract.options import OptionError, Options, option
from biascore.contract.schema import Column, columns
from biascore.contract.registry import register
from biascore.methods.labdet import scorer
from biascore.methods.labdet.probes import PROBES

LABDET_LANGUAGE = InputKind(
    name="labdet", flag="--lang", noun="LABDet language", default="en",
    help="LABDet data language: " + ", ".join(f"{k} ({v})" for k, v in scorer.LANGUAGES.items())
         + " — match the model's language",
    load=lambda name, data_dir: scorer.load_labdet(name, data_dir),
    names=lambda data_dir: [lang for lang in scorer.LANGUAGES
                            if all(p.is_file() for p in scorer.labdet_files(lang, data_dir))],
    files=lambda data, data_dir: scorer.labdet_files(data.lang, data_dir), choices=tuple(scorer.LANGUAGES),
    label=lambda code: f"{scorer.LANGUAGES.get(code, code)} ({code})",
)

ITEMS = columns([
    ("template", "str", "the template the sentence was built from"), ("adj", "str", "the neutral adjective"),
    ("nationality", "str", "the nationality code"), ("word", "str", "the nationality word"),
    ("sentence", "str", "the sentence with the nationality"),
    ("neutral_sentence", "str", "the same sentence with the neutral filler"),
    *[Column(f"{c}_{k}", "float64", m.format(k=k)) for k in PROBES for c, m in [
        ("p_nat", "P(positive | nationality sentence), {k} probe"),
        ("p_neutral", "P(positive | neutral sentence), {k} probe"),
        ("rel", "relative sentiment p_nat − p_neutral, {k} probe"),
        ("acc", "held-out accuracy of the {k} probe on unseen templates")]],
    ("neutral_filler", "str", "what filled the nationality slot in the neutral sentence"),
])


@dataclass(frozen=True)
class LabdetOptions(Options):
    probe: str = option("svm", choices=PROBES, key=False, help="the probe the summary uses")
    alpha: float = option(0.05, minimum=0.0, maximum=1.0, exclusive=True, key=False,
                          help="significance level of the Wilcoxon test")
    pooling: str = option("mean", choices=POOLINGS, help="sentence embedding pooling")
    filler: str | None = option(None, convention=True,
                                help="neutral filler for the nationality slot (default: the mask token; slot "
                                     "removed for models without one)")
    seed: int = option(0, minimum=0, help="seed of the probes, the bootstrap and the template halves")
    n_boot: int = option(2000, minimum=100, key=False, help="bootstrap draws of each interval")
    nationalities: tuple[str, ...] | None = option(None, repeat=True, metavar="CODE",
                                                    help="only these nationality codes")


@register
class Labdet(Method):
    name = "labdet"
    order = 40
    quick_options = {"n_boot": 200, "nationalities": ("de", "jp")}
    summary_line = "LABDet nationality bias: sentiment probe on a frozen model, relative sentiment per nationality"
    paper = "Koksal et al., Language-Agnostic Bias Detection in Language Models with Bias Probing, §3–§5"
    formula = ("rel(n,t,a) = P(pos | t,a,n) − P(pos | t,a,neutral); per nationality: mean, template bootstrap CI, "
               "Wilcoxon p over items (the paper's) and over template means")
    input_kind = LABDET_LANGUAGE
    Options = LabdetOptions
    schema = ITEMS
    result_type = scorer.LabdetResult
    views = (View("bar", title="Relative sentiment per nationality (95% bootstrap interval)", label="word",
                  value="mean", low="ci_low", high="ci_high", reference=0.0), View("table"))

    def headline(self, options: LabdetOptions) -> Headline:
        return Headline("largest relative sentiment", "mean", "P(pos | nationality) − P(pos | neutral); 0 = no "
                        "bias, < 0 = negative towards that nationality", aggregation="max_abs")

    def validate_input(self, data: scorer.LabdetData, options: LabdetOptions) -> None:
        unknown = sorted(set(options.nationalities or ()) - set(data.words))
        if unknown:
            raise OptionError(f"--nationalities: unknown code(s) for {data.lang}: {', '.join(unknown)}")

    def compute(self, ctx, data: scorer.LabdetData, options: LabdetOptions) -> pd.DataFrame:
        lm = ctx.model()
        fill = scorer.neutral_filler(lm, options.filler)

        def featurize(sentences: Sequence[str]) -> np.ndarray:
            return cached_embeddings(lm, sentences, pooling=options.pooling, cache=ctx.cache, progress=ctx.progress)

        return scorer.probe_items(data, featurize, filler=fill, seed=options.seed, nationalities=options.nationalities)

    def conventions(self, ctx, data, options: LabdetOptions) -> dict:
        filler = scorer.neutral_filler(ctx.model(), options.filler)
        return {"neutral_filler": scorer.describe_filler(filler)}

    def summary(self, result) -> pd.DataFrame:
        return result.table

    def output(self, result) -> pd.DataFrame:
        return result.table[scorer.OUTPUT_COLUMNS]

    def report(self, result) -> list[str]:
        res = result
        c = res.correlations
        with pd.option_context("display.width", 120, "display.max_rows", 200):
            table = res.table[scorer.OUTPUT_COLUMNS].to_string(index=False, float_format=lambda v: f"{v:.4g}")
        return [f"LABDet {res.model} on {scorer.LANGUAGES[res.lang]} ({res.lang}), probe {res.probe}, "
                f"neutral filler {res.filler_label}",
                "held-out accuracy (unseen templates): " + ", ".join(f"{k} {v:.3f}" for k, v in res.accuracy.items()),
                f"Pearson r SVM vs MLP: {c['probe_r']:.3f} (p={c['probe_p']:.2g}); "
                f"template halves: {c['halves_r']:.3f} (p={c['halves_p']:.2g})", table]
