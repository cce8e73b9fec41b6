"""Semantic fields of bias-inducing words: the ↑/∘/↓ table of the bias-attribution paper (Table 6).

Gamboa & Lee, "A Novel Interpretability Metric for Explaining Bias in Language Models" (§3.4, §4.3, Table 6):
per USAS semantic field f with n_f tagged words w (each with attribution b(w)):

    ↑ bias  up_pct(f)   = 100 · |{w ∈ f : b(w) < 0}| / n_f     (the word pushed the model toward bias)
    ∘ bias  zero_pct(f) = 100 · |{w ∈ f : b(w) = 0}| / n_f     (no influence; exact zero)
    ↓ bias  down_pct(f) = 100 · |{w ∈ f : b(w) > 0}| / n_f

Fields with n_f < ``min_count`` (30 in the paper) are left out, the rest sorted by up_pct. Words are the
attribution engine's word units; a word takes the USAS tags of the spaCy tokens overlapping it most
(:func:`align_tokens`), the first-ranked tag or (``senses="all"``) every candidate, as the paper's script did. A
multi-field tag counts in each field, a word once per field; punctuation and ``Df`` are left out, ``Z99`` is
"Unmatched"; a causal model's b = 0 before the first modified token counts as ∘.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from biascore.models.pair_tokens import unflatten_spans
from biascore.progress import ProgressFn
from biascore.methods.fields import tagging as st_tags
from biascore.methods.fields.table import TABLE_COLUMNS, field_sentences, field_table, field_words, side_by_side  # noqa: F401
from biascore.methods.fields.tagging import NoLexiconError, lexicon_coverage, row_languages  # noqa: F401

WORD_COLUMNS = ["pair_id", "word_index", "word", "start", "end", "b", "field", "tags", "sentence"]
SENSES = ("top", "all")
#: "all" (default): every tag of the matched lexicon entry, as the paper's published script counted them;
#: "top": only the first-ranked tag per token
DEFAULT_SENSES = "all"


def align_tokens(word_spans: list[tuple[int, int]], token_spans: list[tuple[int, int]]) -> list[list[int]]:
    """For each word span, the tagger tokens that belong to it, by character overlap. A token belongs to the word it
    overlaps most (the first on ties), so ``couldn|'t`` (model words) and ``could|n't`` (spaCy) pair up as could→couldn,
    n't→'t. A word that is nobody's best match (a spaCy token covering several model words, e.g. ``e-mail``) takes every
    token it overlaps."""
    def overlap(a: tuple[int, int], b: tuple[int, int]) -> int:
        return max(0, min(a[1], b[1]) - max(a[0], b[0]))

    owned: list[list[int]] = [[] for _ in word_spans]
    for t, tok in enumerate(token_spans):
        scores = [overlap(w, tok) for w in word_spans]
        if scores and max(scores) > 0:
            owned[scores.index(max(scores))].append(t)
    return [own or [t for t, tok in enumerate(token_spans) if overlap(w, tok) > 0] for w, own in zip(word_spans, owned)]


def word_fields(attribution: pd.DataFrame, tagged: pd.DataFrame, senses: str = DEFAULT_SENSES) -> pd.DataFrame:
    """One row per (word, field) for every scored word of ``attribution`` whose tags give a field. ``attribution`` needs
    ``pair_id, sent_more, words, word_spans, word_bu`` (and optionally ``skipped_reason``: skipped pairs have no words);
    ``tagged`` is :func:`semantic_tagging.tag_sentences` output covering every ``sent_more``. Columns: ``pair_id,
    word_index, word, start, end, b, field, tags`` (the tags of the word's spaCy tokens, space-joined) and
    ``sentence``."""
    if senses not in SENSES:
        raise ValueError(f"senses must be one of {SENSES}, not {senses!r}")
    names = st_tags.field_names()
    by_sentence = {row.sentence: row for row in tagged.itertuples(index=False)}
    rows = []
    for pair in attribution.itertuples(index=False):
        if getattr(pair, "skipped_reason", "") or pair.words is None or len(pair.words) == 0:
            continue
        tags_row = by_sentence.get(pair.sent_more)
        if tags_row is None:
            raise ValueError(f"pair {pair.pair_id}: its sentence was not tagged: {pair.sent_more!r}")
        spans = unflatten_spans(pair.word_spans)
        tok_spans = list(zip((int(x) for x in tags_row.tok_start), (int(x) for x in tags_row.tok_end)))
        for i, (word, (start, end), b, toks) in enumerate(zip(pair.words, spans, pair.word_bu,
                                                               align_tokens(spans, tok_spans))):
            tags = [t for k in toks if tags_row.tok_tags[k]
                    for t in tags_row.tok_tags[k].split(st_tags.TAG_SEPARATOR)[:None if senses == "all" else 1]]
            for f in dict.fromkeys(f for t in tags for f in st_tags.tag_fields(t, names)):
                rows.append((int(pair.pair_id), i, str(word), start, end, float(b), f, " ".join(tags), pair.sent_more))
    return pd.DataFrame(rows, columns=WORD_COLUMNS)


@dataclass
class FieldsResult:
    """Everything the CLI and the page show for one model on one benchmark."""

    model: str
    benchmark: str
    table: pd.DataFrame                   # :func:`field_table`, already thresholded and cut to ``top``
    words: pd.DataFrame                   # :func:`word_fields`, every tagged word (for drilling down)
    untagged: dict[str, int] = field(default_factory=dict)  # language → pairs left untagged (no lexicon)


def _require_lexicon(langs: pd.Series, fallback: str) -> pd.Series:
    """Which pairs can be tagged; :class:`NoLexiconError` when none can (e.g. an all-Filipino benchmark)."""
    usable = langs.map(st_tags.has_lexicon).astype(bool)
    if not usable.any():
        raise NoLexiconError(str(langs.iloc[0]) if len(langs) else fallback)
    return usable


def fields_from_scores(attribution: pd.DataFrame, language: str | pd.Series = "en", *,
                       senses: str = DEFAULT_SENSES, progress: ProgressFn | None = None, cache=None) -> pd.DataFrame:
    """Tag the scored pairs (cached) and give their words' fields (:func:`word_fields`). Pairs in a language
    without a lexicon are left out; if no pair has a lexicon, :class:`NoLexiconError` is raised.
    ``progress(done, total)`` follows the tagging of sentences not tagged before."""
    langs = language if isinstance(language, pd.Series) else pd.Series(language, index=attribution.index)
    usable = _require_lexicon(langs, str(language))
    parts = []
    for lang in sorted(langs[usable].unique()):
        rows = attribution[(langs == lang).to_numpy()]
        tagged = st_tags.tag_sentences(rows["sent_more"], lang, progress=progress, cache=cache)
        parts.append(word_fields(rows, tagged, senses=senses))
    return pd.concat(parts, ignore_index=True)


def require_lexicon(bench) -> None:
    """:class:`NoLexiconError` (before anything is scored) when no pair of the benchmark ``bench`` is in a language
    with a USAS lexicon."""
    _require_lexicon(row_languages(bench.frame, bench.language), bench.language)


def fields_result(result) -> FieldsResult:
    """The page's and the CLI's view of a ``fields`` :class:`~biascore.contract.result.Result`: the Table-6 table
    (with the result's ``min_count`` and ``top``), every tagged word, and the pairs left untagged."""
    o = result.options
    untagged = dict(result.conventions.get("untagged_pairs") or {})
    return FieldsResult(result.model, result.input_name, field_table(result.frame, o.min_count, o.top or None),
                        result.frame, {str(k): int(v) for k, v in untagged.items()})

