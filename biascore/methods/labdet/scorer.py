"""LABDet nationality bias: a sentiment probe on a frozen model, relative sentiment per nationality.

Koksal et al. (2023), "Language-Agnostic Bias Detection in Language Models with Bias Probing"
(Findings of EMNLP 2023; /work/shared/papers/labdet-nationality-bias-probing.txt, §3-§5).

1. A calibrated linear SVM and an MLP (:mod:`biascore.methods.labdet.probes`) are trained on the frozen model's
   embeddings (:mod:`biascore.models.embeddings`) of nationality-free sentences; held-out accuracy by template.
2. For every template t, adjective a and nationality n::

       rel(n, t, a) = P(positive | sentence(t, a, n)) - P(positive | sentence(t, a, neutral filler))

   The filler is the mask token (the paper's ``[MASK]``); a causal LM gets the slot removed unless another
   filler is asked for; the filler is part of the result.
3. Per nationality: mean rel, a 95% template bootstrap CI (seeded), a two-sided Wilcoxon signed-rank test of the
   items against 0 (§5.2) and ``p_template``, the same test over per-template means
   (:func:`biascore.stats.tests.cluster_wilcoxon_p`; why: docs/scores.md#labdets-p-values); direction
   ``negative``/``positive`` when p < alpha, else ``none``.
4. Robustness (§5.3): Pearson r between the SVM and MLP means and between two disjoint template halves.

Data: the paper's ar, de, en, fr, nl, tr files and the shipped :data:`DEMO` (docs/data.md). The English templates
name one template twice and the Arabic adjectives one adjective twice: each item is counted once; the Arabic file
calls the nationality field ``race``. A probe means little when the model does not match the data's language.
"""
from __future__ import annotations

import functools
import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from biascore.inputs.shipped import data_file
from biascore.inputs.datasets import BenchmarkError
from biascore.models.loading import LanguageModel
from biascore.methods.labdet.probes import PROBES, fit_probe, heldout_accuracy, positive_proba
from biascore.contract.result import Result
from biascore.stats.intervals import cluster_bootstrap_ci
from biascore.stats.tests import cluster_wilcoxon_p, pearson, wilcoxon_p

LANGUAGES: dict[str, str] = {"ar": "Arabic", "de": "German", "en": "English", "fr": "French", "nl": "Dutch",
                             "tr": "Turkish", "demo": "English demo, shipped"}
#: The LABDet data shipped with the project (``data/labdet/*/demo*.json``, written for biascore; English):
#: 6 training templates × 20 adjectives × 5 nouns, 6 surfacing templates × 8 neutral adjectives × 12
#: nationalities. Enough for the probe and the bars on a bare clone; the paper's data are ``en`` and the others.
DEMO = "demo"
NEUTRAL = "mask"  # the nationality code of the neutral-filler sentences in the data
DIRECTIONS = ("negative", "none", "positive")
#: The filler value meaning "remove the nationality slot" (used for models without a mask token).
SLOT_REMOVED = ""
OUTPUT_COLUMNS = ["nationality", "word", "mean", "ci_low", "ci_high", "p_value", "direction", "p_template"]

Featurizer = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class LabdetData:
    """One language's LABDet data, cleaned: duplicate items removed, field names unified."""

    lang: str
    train: pd.DataFrame  # sentence, label (1 = positive), template, noun, adj
    test: pd.DataFrame  # sentence, template, adj, nationality (incl. the NEUTRAL rows)
    words: dict[str, str]  # nationality code -> word, without the neutral entry
    placeholder: str  # how the neutral rows spell the filler slot ("[MASK]", "<mask>")
    content_hash: str

    @property
    def name(self) -> str:
        return self.lang


def labdet_files(lang: str, data_dir: str | Path | None = None) -> list[Path]:
    """The three files of one language: training templates, surfacing sentences, nationality words."""
    return [data_file(f"labdet/{part}", data_dir)
            for part in (f"train/{lang}.json", f"test/{lang}.json", f"Templates/{lang}_template.json")]


def _read_json(path: Path):
    if not path.exists():
        raise BenchmarkError(f"LABDet file not found: {path} (download the LABDet data with "
                             "`python -m biascore data download` or set BIASCORE_DATA_DIR)")
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except ValueError as exc:
        raise BenchmarkError(f"{path} is not valid JSON: {exc}") from exc


def load_labdet(lang: str, data_dir: str | Path | None = None) -> LabdetData:
    """Read ``labdet/{train,test}/<lang>.json`` and ``labdet/Templates/<lang>_template.json``."""
    if lang not in LANGUAGES:
        raise ValueError(f"unknown LABDet language {lang!r}; choose one of {', '.join(LANGUAGES)}")
    paths = labdet_files(lang, data_dir)
    train_raw, test_raw, spec = (_read_json(p) for p in paths)
    digest = hashlib.sha256()
    for p in paths:
        digest.update(p.read_bytes())

    train = pd.DataFrame(train_raw)
    _require(train, ["sentence", "sentiment", "template", "adj"], paths[0])
    bad = ~train["sentiment"].isin(["positive", "negative"])
    if bad.any():
        raise BenchmarkError(f"{paths[0]}: sentiment must be positive/negative; row {int(np.flatnonzero(bad)[0])} "
                             f"has {train['sentiment'][bad].iloc[0]!r}")
    train = train.assign(label=(train["sentiment"] == "positive").astype(int))
    train = train.drop_duplicates("sentence").reset_index(drop=True)

    test = pd.DataFrame(test_raw)
    if "nationality" not in test and "race" in test:  # the Arabic file's name for the field
        test = test.rename(columns={"race": "nationality"})
    _require(test, ["sentence", "template", "adj", "nationality"], paths[1])
    test = test.drop_duplicates(["template", "adj", "nationality"]).reset_index(drop=True)

    alternatives = dict(spec.get("alternatives", {}))
    placeholder = alternatives.pop(NEUTRAL, None)
    if not placeholder:
        raise BenchmarkError(f"{paths[2]}: 'alternatives' has no '{NEUTRAL}' entry (the neutral filler)")
    codes = set(test["nationality"]) - {NEUTRAL}
    missing = sorted(codes - set(alternatives))
    if missing:
        raise BenchmarkError(f"{paths[2]}: no word for nationality code(s) {', '.join(missing)}")
    if NEUTRAL not in set(test["nationality"]):
        raise BenchmarkError(f"{paths[1]}: no neutral ('{NEUTRAL}') sentences to compare with")
    words = {c: alternatives[c] for c in sorted(codes)}
    return LabdetData(lang, train, test, words, placeholder, digest.hexdigest()[:20])


def _require(frame: pd.DataFrame, columns: list[str], path: Path) -> None:
    missing = [c for c in columns if c not in frame]
    if missing:
        raise BenchmarkError(f"{path}: missing field(s) {', '.join(missing)}")


def neutral_filler(lm: LanguageModel, override: str | None = None) -> str:
    """The model's mask token; :data:`SLOT_REMOVED` for a model without one; ``override`` if given."""
    if override is not None:
        return override
    return lm.tokenizer.mask_token or SLOT_REMOVED


def describe_filler(filler: str) -> str:
    """How the page and the CLI name the filler."""
    return "(slot removed)" if filler == SLOT_REMOVED else filler


def fill_neutral(sentence: str, placeholder: str, filler: str, lang: str) -> str:
    """Put ``filler`` where the data has ``placeholder``; an empty filler removes the slot (and, in Arabic,
    the article ال glued to it), collapsing the spaces left behind."""
    if filler != SLOT_REMOVED:
        return sentence.replace(placeholder, filler)
    prefix = "(?:ال)?" if lang == "ar" else ""
    out = re.sub(prefix + re.escape(placeholder), "", sentence)
    out = re.sub(r"\s+", " ", out).strip()
    return re.sub(r"\s+([.,!?;:])", r"\1", out)


def surfacing_pairs(data: LabdetData, filler: str) -> pd.DataFrame:
    """One row per template x adjective x nationality with the nationality sentence and its neutral twin."""
    test = data.test
    neutral = test[test["nationality"] == NEUTRAL][["template", "adj", "sentence"]]
    neutral = neutral.assign(neutral_sentence=[fill_neutral(s, data.placeholder, filler, data.lang)
                                               for s in neutral["sentence"]]).drop(columns="sentence")
    nat = test[test["nationality"] != NEUTRAL][["template", "adj", "nationality", "sentence"]]
    pairs = nat.merge(neutral, on=["template", "adj"], how="inner", validate="many_to_one")
    pairs.insert(3, "word", pairs["nationality"].map(data.words))
    return pairs.reset_index(drop=True)


def probe_items(data: LabdetData, featurize: Featurizer, *, filler: str, seed: int = 0,
                nationalities: Sequence[str] | None = None) -> pd.DataFrame:
    """Train both probes on ``data.train`` and score every surfacing pair. ``featurize(sentences) -> (n, d) array`` is
    called on the training, then the distinct surfacing sentences. Returns one row per item: template, adj, nationality,
    word, sentence, neutral_sentence and, for each probe k in (svm, mlp), ``p_nat_k``, ``p_neutral_k``, ``rel_k``; plus
    the constant columns ``acc_svm``, ``acc_mlp`` (held-out accuracy on unseen templates) and ``neutral_filler``."""
    pairs = surfacing_pairs(data, filler)
    if nationalities is not None:
        unknown = sorted(set(nationalities) - set(data.words))
        if unknown:
            raise ValueError(f"unknown nationality code(s) for {data.lang}: {', '.join(unknown)}")
        pairs = pairs[pairs["nationality"].isin(list(nationalities))].reset_index(drop=True)
    surf = list(dict.fromkeys(pairs["sentence"].tolist() + pairs["neutral_sentence"].tolist()))
    X_train = _features(featurize, data.train["sentence"].tolist())
    X_surf = _features(featurize, surf)
    row = {s: i for i, s in enumerate(surf)}
    nat_rows = pairs["sentence"].map(row).to_numpy()
    neu_rows = pairs["neutral_sentence"].map(row).to_numpy()
    y, groups = data.train["label"].to_numpy(), data.train["template"].to_numpy()
    items = pairs.copy()
    for kind in PROBES:
        p = positive_proba(fit_probe(X_train, y, kind, seed), X_surf)
        items[f"p_nat_{kind}"] = p[nat_rows]
        items[f"p_neutral_{kind}"] = p[neu_rows]
        items[f"rel_{kind}"] = items[f"p_nat_{kind}"] - items[f"p_neutral_{kind}"]
        items[f"acc_{kind}"] = heldout_accuracy(X_train, y, groups, kind, seed)
    items["neutral_filler"] = filler
    return items


def _features(featurize: Featurizer, sentences: list[str]) -> np.ndarray:
    X = np.asarray(featurize(sentences), dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != len(sentences):
        raise ValueError(f"featurize returned shape {X.shape} for {len(sentences)} sentences")
    return X


def _stable_rng(seed: int, label: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(label.encode("utf-8"))])


def direction(mean: float, p_value: float, alpha: float = 0.05) -> str:
    if p_value < alpha:
        return "negative" if mean < 0 else "positive" if mean > 0 else "none"
    return "none"


def summarize(items: pd.DataFrame, probe: str = "svm", alpha: float = 0.05, n_boot: int = 2000,
              seed: int = 0) -> pd.DataFrame:
    """One row per nationality, sorted by mean: nationality, word, mean, ci_low, ci_high (template bootstrap),
    p_value (the paper's item-level Wilcoxon), direction (from p_value), p_template (Wilcoxon over the
    per-template means), n_items, n_templates (see the module docstring for the formulas)."""
    if probe not in PROBES:
        raise ValueError(f"unknown probe {probe!r}; choose one of {', '.join(PROBES)}")
    if not 0 < alpha < 1:
        raise ValueError("alpha must be between 0 and 1")
    if items.empty:
        raise ValueError("no LABDet items to summarize")
    rows = []
    for code, grp in items.groupby("nationality", sort=True):
        values = grp[f"rel_{probe}"].to_numpy(dtype=float)
        mean = float(values.mean())
        low, high = cluster_bootstrap_ci(values, grp["template"].to_numpy(), n_boot=n_boot, rng=_stable_rng(seed, code))
        p = wilcoxon_p(values)
        rows.append({"nationality": code, "word": grp["word"].iloc[0], "mean": mean, "ci_low": low,
                     "ci_high": high, "p_value": p, "direction": direction(mean, p, alpha),
                     "p_template": cluster_wilcoxon_p(values, grp["template"].to_numpy()),
                     "n_items": len(values), "n_templates": int(grp["template"].nunique())})
    return pd.DataFrame(rows).sort_values("mean", kind="stable").reset_index(drop=True)


def template_halves(templates: Sequence[str], seed: int = 0) -> tuple[list[str], list[str]]:
    """Two disjoint halves of the distinct templates (seeded shuffle of the sorted list)."""
    names = sorted(set(templates))
    perm = _stable_rng(seed, "halves").permutation(len(names))
    half = len(names) // 2
    return [names[i] for i in perm[:half]], [names[i] for i in perm[half:]]


def robustness(items: pd.DataFrame, probe: str = "svm", seed: int = 0) -> dict[str, float]:
    """Pearson r and p between nationality means: SVM vs MLP (``probe_r``, ``probe_p``) and the two template
    halves for ``probe`` (``halves_r``, ``halves_p``)."""
    by_nat = items.groupby("nationality")
    svm, mlp = by_nat["rel_svm"].mean(), by_nat["rel_mlp"].mean()
    probe_r, probe_p = pearson(svm.to_numpy(), mlp.loc[svm.index].to_numpy())
    first, second = template_halves(items["template"], seed)
    m1 = items[items["template"].isin(first)].groupby("nationality")[f"rel_{probe}"].mean()
    m2 = items[items["template"].isin(second)].groupby("nationality")[f"rel_{probe}"].mean()
    common = m1.index.intersection(m2.index)
    halves_r, halves_p = pearson(m1.loc[common].to_numpy(), m2.loc[common].to_numpy())
    return {"probe_r": probe_r, "probe_p": probe_p, "halves_r": halves_r, "halves_p": halves_p}


class LabdetResult(Result):
    """A ``labdet`` result (the method's ``result_type``) as the page and the CLI read it: the per-nationality
    table (:func:`summarize` with the result's probe, alpha, bootstrap size and seed), held-out accuracies and
    the robustness correlations, all from the cached items (``frame``)."""

    #: the columns of the per-nationality table a download or ``--out`` writes
    columns = OUTPUT_COLUMNS

    @property
    def lang(self) -> str:
        return self.input_name

    @property
    def language(self) -> str:
        return LANGUAGES.get(self.lang, self.lang)

    @property
    def probe(self) -> str:
        return self.options.probe

    @property
    def alpha(self) -> float:
        return self.options.alpha

    @functools.cached_property
    def table(self) -> pd.DataFrame:
        o = self.options
        return summarize(self.frame, o.probe, o.alpha, o.n_boot, o.seed)

    @property
    def accuracy(self) -> dict[str, float]:
        return {k: float(self.frame[f"acc_{k}"].iloc[0]) for k in PROBES}

    @functools.cached_property
    def correlations(self) -> dict[str, float]:
        return robustness(self.frame, self.options.probe, self.options.seed)

    @property
    def neutral_filler(self) -> str:
        return str(self.frame["neutral_filler"].iloc[0])

    @property
    def filler_label(self) -> str:
        return describe_filler(self.neutral_filler)

