"""Embedding association tests (WEAT, SEAT, CEAT) and masked-LM log-probability bias, cached.

The ``seat`` and ``ceat`` methods' rows: :func:`seat_row` (WEAT on word lists, SEAT on sentence lists) and
:func:`ceat_rows` (one row per segment length); the maths lives in :mod:`.weat`, :mod:`biascore.stats.permutation`,
:mod:`.ceat` and :mod:`.corpus_contexts`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from biascore import settings
from biascore.models.embeddings import embed_sentences, embed_words
from biascore.models.loading import LanguageModel
from biascore.progress import ProgressFn
from biascore.inputs.datasets import benchmark_path, load_benchmark
from biascore.inputs.seat_tests import SeatTest
from biascore.methods.association.ceat import ceat
from biascore.methods.association.corpus_contexts import Corpus
from biascore.methods.association.weat import weat

SEGMENT_LENGTHS: tuple[int | None, ...] = (9, 25, 75, None)  # None = the whole line ("all")


def seat_row(lm: LanguageModel, t: SeatTest, *, pooling: str, word_mode: str, seed: int, n_samples: int,
             progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row: ``test, effect_size, p_value, n_x, n_y, n_a, n_b`` (+ what was embedded and how). Sentence tests
    (``sent-*`` and the Heilman tests: see :mod:`biascore.inputs.seat_tests`) embed each sentence (``pooling`` mean over
    non-special tokens, or first); word tests embed each word alone (``word_mode`` contextual) or take its input
    embedding."""
    how = f"sentence ({pooling} pooling)" if t.kind == "sentences" else f"word ({word_mode})"
    sets = [t.X, t.Y, t.A, t.B]
    flat = [x for s in sets for x in s]
    if t.kind == "sentences":
        vecs = embed_sentences(lm, flat, pooling=pooling, progress=progress)
    else:
        vecs = embed_words(lm, flat, mode=word_mode)
    bounds = np.cumsum([0] + [len(s) for s in sets]).tolist()
    X, Y, A, B = (vecs[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
    res = weat(X, Y, A, B, seed=seed, n_samples=n_samples)
    return pd.DataFrame([{"test": t.name, **res.as_row(), "method": "SEAT" if t.kind == "sentences" else "WEAT",
                          "embedding": how, "language": t.language, "categories": t.describe()}])


def default_corpus(language: str, data_dir: str | Path | None = None) -> tuple[str, str]:
    """(label, text) of the corpus CEAT samples contexts from when the user gives none. Bangla: the sample corpus
    ``bangla/sample_corpus_porjotonlipi.bn``; English: the CrowS-Pairs sentences (both sentences of all 1,508 pairs, one
    per line)."""
    root = settings.data_dir(data_dir)
    if language == "bn":
        path = root / "bangla" / "sample_corpus_porjotonlipi.bn"
        if not path.exists():
            raise FileNotFoundError(f"Bangla sample corpus not found at {path}")
        return "bangla-sample-corpus", path.read_text(encoding="utf-8-sig", errors="replace")
    frame = load_benchmark("crows-en", data_dir=root).frame
    lines = list(dict.fromkeys(frame["sent_more"].tolist() + frame["sent_less"].tolist()))
    return "crows-pairs-sentences", "\n".join(lines)


def default_corpus_files(language: str, data_dir: str | Path | None = None) -> list[Path]:
    """The data files :func:`default_corpus` reads (what a snapshot must carry)."""
    root = settings.data_dir(data_dir)
    return [root / "bangla" / "sample_corpus_porjotonlipi.bn"] if language == "bn" else [benchmark_path("crows-en", root)]


def read_corpus(path: str | Path) -> tuple[str, str]:
    """A user's corpus file (UTF-8 text; undecodable bytes are replaced, nothing is dropped silently)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"corpus file not found: {p}")
    return str(p.resolve()), p.read_text(encoding="utf-8-sig", errors="replace")


def corpus_for(t: SeatTest, corpus: str | Path | None, data_dir: str | Path | None = None) -> tuple[str, str]:
    """(label, text) of the corpus a CEAT run reads: the user's file, else the default corpus."""
    return read_corpus(corpus) if corpus else default_corpus(t.language, data_dir)


def ceat_rows(lm: LanguageModel, t: SeatTest, label: str, text: str, *, segment_lengths: Sequence[int | None],
              n_contexts: int, n_draws: int, seed: int, progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row per segment length: CES, SE, two-sided p, σ²_between, Q, counts (``segment_length`` "all" = line)."""
    indexed = Corpus(text)
    rows = []
    for n, length in enumerate(segment_lengths):
        step = None
        if progress:
            def step(done, total, n=n):
                progress(n * total + done, len(segment_lengths) * total)
        row = ceat(lm, t, indexed, segment_length=length, n_contexts=n_contexts, n_draws=n_draws, seed=seed,
                   progress=step)
        rows.append({"test": t.name, "segment_length": "all" if length is None else str(length),
                     "effect_size": row.pop("ces"), **row, "corpus": label, "language": t.language,
                     "categories": t.describe()})
    return pd.DataFrame(rows)
