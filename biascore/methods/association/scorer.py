"""Embedding association tests (WEAT, SEAT, CEAT) and masked-LM log-probability bias, cached.

Entry points (each returns a frame and caches it under the model, the test's content hash and every
option): :func:`run_seat` (WEAT on word lists, SEAT on sentence lists), :func:`run_ceat` (one row per
segment length) and :func:`run_logprob` (per-sentence scores), :func:`run_logprob_effects` (effect size
and permutation p per sentence structure; the Figure-2 points come from
:func:`biascore.methods.association.logprob_bias.prior_vs_corrected`).
The maths lives in :mod:`biascore.methods.association.weat`, :mod:`biascore.stats.permutation`,
:mod:`biascore.methods.association.ceat`, :mod:`biascore.methods.association.corpus_contexts` and :mod:`biascore.methods.association.logprob_bias`.

CLI: ``python -m biascore seat|ceat|logprob --model M --test NAME [--out FILE.csv]``.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Sequence

import pandas as pd

from biascore.core.registry import Page, ProgressFn, register_scorer
from biascore.core import settings
from biascore.core.seat_tests import list_seat_tests, load_seat_test
from biascore.methods.association.weat import weat
from biascore.core.cache import CacheKey, ResultCache
from biascore.core.hashing import bytes_sha256
from biascore.core.keys import result_key
from biascore.methods.association.ceat import ceat
from biascore.methods.association.corpus_contexts import Corpus
from biascore.methods.association.logprob_bias import effect_sizes, list_logprob_tests, load_logprob_test, score_logprob
from biascore.core.models import LanguageModel
from biascore.core.embeddings import embed_sentences, embed_words

NAME = "association"
SUMMARY = "WEAT/SEAT/CEAT embedding association tests and masked-LM log-probability bias"
#: Bumped whenever a change alters results, so older cached results are not reused.
METHOD_VERSION = 2
SEGMENT_LENGTHS: tuple[int | None, ...] = (9, 25, 75, None)  # None = the whole line ("all")


def _key(lm: LanguageModel, **inputs) -> CacheKey:
    return result_key(NAME, lm, method_version=METHOD_VERSION, **inputs)


def _cache(cache: ResultCache | None) -> ResultCache:
    return cache or ResultCache()


def _cached_or_computed(cache: ResultCache | None, key: CacheKey, compute: Callable[[], pd.DataFrame],
                        only_cached: bool) -> pd.DataFrame | None:
    """The cached frame; else the computed (and now cached) one, or None when ``only_cached``."""
    store = _cache(cache)
    return store.load(key) if only_cached else store.get_or_compute(key, compute)


# ----------------------------------------------------------------------------- WEAT / SEAT
def run_seat(lm: LanguageModel, test: str, *, pooling: str = "mean", word_mode: str = "contextual",
             seed: int = 0, n_samples: int = 100_000, cache: ResultCache | None = None,
             progress: ProgressFn | None = None, only_cached: bool = False) -> pd.DataFrame | None:
    """One row: ``test, effect_size, p_value, n_x, n_y, n_a, n_b`` (+ what was embedded and how).

    Sentence tests (``sent-*`` and the Heilman tests: see :mod:`biascore.core.seat_tests`) embed each
    sentence (``pooling`` mean over non-special tokens, or first); word tests embed each word alone
    (``word_mode`` contextual) or take its input embedding.
    """
    t = load_seat_test(test)
    how = f"sentence ({pooling} pooling)" if t.kind == "sentences" else f"word ({word_mode})"
    key = _key(lm, kind="seat", test=test, content=t.content_hash, pooling=pooling,
               word_mode=word_mode if t.kind == "words" else None, seed=seed, n_samples=n_samples)

    def compute() -> pd.DataFrame:
        sets = [t.X, t.Y, t.A, t.B]
        flat = [x for s in sets for x in s]
        if t.kind == "sentences":
            vecs = embed_sentences(lm, flat, pooling=pooling, progress=progress)
        else:
            vecs = embed_words(lm, flat, mode=word_mode)
        bounds = [0]
        for s in sets:
            bounds.append(bounds[-1] + len(s))
        X, Y, A, B = (vecs[a:b] for a, b in zip(bounds[:-1], bounds[1:]))
        res = weat(X, Y, A, B, seed=seed, n_samples=n_samples)
        return pd.DataFrame([{"test": test, **res.as_row(), "method": "SEAT" if t.kind == "sentences" else "WEAT",
                              "embedding": how, "language": t.language, "categories": t.describe()}])

    return _cached_or_computed(cache, key, compute, only_cached)


# ----------------------------------------------------------------------------- CEAT
def default_corpus(language: str, data_dir: str | Path | None = None) -> tuple[str, str]:
    """(label, text) of the corpus CEAT samples contexts from when the user gives none.

    Bangla: the sample corpus ``bangla/sample_corpus_porjotonlipi.bn``; English: the CrowS-Pairs
    sentences (both sentences of all 1,508 pairs, one per line).
    """
    root = settings.data_dir(data_dir)
    if language == "bn":
        path = root / "bangla" / "sample_corpus_porjotonlipi.bn"
        if not path.exists():
            raise FileNotFoundError(f"Bangla sample corpus not found at {path}")
        return "bangla-sample-corpus", path.read_text(encoding="utf-8-sig", errors="replace")
    from biascore.core.datasets import load_benchmark
    frame = load_benchmark("crows-en", data_dir=root).frame
    lines = list(dict.fromkeys(frame["sent_more"].tolist() + frame["sent_less"].tolist()))
    return "crows-pairs-sentences", "\n".join(lines)


def read_corpus(path: str | Path) -> tuple[str, str]:
    """A user's corpus file (UTF-8 text; undecodable bytes are replaced, nothing is dropped silently)."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"corpus file not found: {p}")
    return str(p.resolve()), p.read_text(encoding="utf-8-sig", errors="replace")


def run_ceat(lm: LanguageModel, test: str, *, segment_lengths: Sequence[int | None] = SEGMENT_LENGTHS,
             corpus: str | Path | None = None, n_contexts: int = 50, n_draws: int = 1000, seed: int = 0,
             cache: ResultCache | None = None, progress: ProgressFn | None = None,
             only_cached: bool = False) -> pd.DataFrame | None:
    """One row per segment length: CES, SE, two-sided p, σ²_between, Q, counts (``segment_length`` "all" = line)."""
    t = load_seat_test(test)
    label, text = read_corpus(corpus) if corpus else default_corpus(t.language)
    corpus_hash = bytes_sha256(text)[:16]
    indexed: Corpus | None = None
    frames = []
    for n, length in enumerate(segment_lengths):
        key = _key(lm, kind="ceat", test=test, content=t.content_hash, corpus=corpus_hash,
                   segment_length=length, n_contexts=n_contexts, n_draws=n_draws, seed=seed)

        def compute(length=length, n=n) -> pd.DataFrame:
            nonlocal indexed
            indexed = indexed or Corpus(text)
            step = None
            if progress:
                def step(done, total, n=n):
                    progress(n * total + done, len(segment_lengths) * total)
            row = ceat(lm, t, indexed, segment_length=length, n_contexts=n_contexts, n_draws=n_draws, seed=seed,
                       progress=step)
            return pd.DataFrame([{"test": test, "segment_length": "all" if length is None else str(length),
                                  "effect_size": row.pop("ces"), **row, "corpus": label, "language": t.language,
                                  "categories": t.describe()}])

        frame = _cached_or_computed(cache, key, compute, only_cached)
        if frame is not None:
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


# ----------------------------------------------------------------------------- log-probability bias
def run_logprob(lm: LanguageModel, test: str, *, cache: ResultCache | None = None,
                progress: ProgressFn | None = None, only_cached: bool = False) -> pd.DataFrame | None:
    """Per-sentence, per-target scores (log p_tgt, log p_prior, score) of a log-probability test."""
    t = load_logprob_test(test)
    key = _key(lm, kind="logprob", test=test, content=t.content_hash)
    return _cached_or_computed(cache, key, lambda: score_logprob(lm, t, progress=progress), only_cached)


def run_logprob_effects(lm: LanguageModel, test: str, *, seed: int = 0, cache: ResultCache | None = None,
                        progress: ProgressFn | None = None, only_cached: bool = False) -> pd.DataFrame | None:
    """Effect size and permutation p-value per sentence structure (and "all") of a log-probability test,
    from :func:`run_logprob`'s scores, cached under the scores' key and ``seed``.

    ``only_cached``: never run the model; the effect sizes are still computed (once) from cached scores.
    """
    t = load_logprob_test(test)
    key = _key(lm, kind="logprob-effects", test=test, content=t.content_hash, seed=seed)
    store = _cache(cache)
    if only_cached and store.load(key) is None and run_logprob(lm, test, cache=store, only_cached=True) is None:
        return None
    return store.get_or_compute(key, lambda: effect_sizes(run_logprob(lm, test, cache=store, progress=progress),
                                                          t, seed=seed))


# ----------------------------------------------------------------------------- CLI
def _tqdm_progress(desc: str) -> tuple[ProgressFn, Callable[[], None]]:
    from tqdm.auto import tqdm
    bar = tqdm(desc=desc, unit="item", file=sys.stderr)

    def update(done: int, total: int) -> None:
        bar.total = total
        bar.n = done
        bar.refresh()
    return update, bar.close


def _write(frame: pd.DataFrame, out: str | None) -> None:
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        frame.to_csv(out, index=False)
        print(f"wrote {len(frame)} rows to {out}", file=sys.stderr)
    print(frame.to_string(index=False))


def _tests_arg(args) -> list[str]:
    return [t.strip() for t in args.test.split(",") if t.strip()]


def _cmd_seat(args: argparse.Namespace) -> int:
    from biascore.cli.args import model_from_args
    lm = model_from_args(args)
    progress, close = _tqdm_progress("embedding")
    try:
        frames = [run_seat(lm, name, pooling=args.pooling, word_mode=args.word_embedding, seed=args.seed,
                           progress=progress) for name in _tests_arg(args)]
    finally:
        close()
    cols = ["test", "effect_size", "p_value", "n_x", "n_y", "n_a", "n_b"]
    frame = pd.concat(frames, ignore_index=True)
    _write(frame[cols + [c for c in frame.columns if c not in cols]], args.out)
    return 0


def _segment(value: str) -> int | None:
    if value.lower() in ("all", "none", "full"):
        return None
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError("segment length must be positive or 'all'")
    return n


def _cmd_ceat(args: argparse.Namespace) -> int:
    from biascore.cli.args import model_from_args
    lm = model_from_args(args, kind="encoder" if args.encoder else "auto")
    progress, close = _tqdm_progress("embedding contexts")
    try:
        frames = [run_ceat(lm, name, segment_lengths=args.segment_lengths, corpus=args.corpus,
                           n_contexts=args.n_contexts, n_draws=args.draws, seed=args.seed, progress=progress)
                  for name in _tests_arg(args)]
    finally:
        close()
    frame = pd.concat(frames, ignore_index=True)
    cols = ["test", "segment_length", "effect_size", "p_value", "n_x", "n_y", "n_a", "n_b"]
    _write(frame[cols + [c for c in frame.columns if c not in cols]], args.out)
    return 0


def _cmd_logprob(args: argparse.Namespace) -> int:
    from biascore.cli.args import model_from_args
    lm = model_from_args(args, kind="masked")
    progress, close = _tqdm_progress("masked sentences")
    frames = []
    try:
        for name in _tests_arg(args):
            frames.append(run_logprob_effects(lm, name, seed=args.seed, progress=progress))
            if args.scores_out:
                run_logprob(lm, name).to_csv(args.scores_out, index=False)
    finally:
        close()
    _write(pd.concat(frames, ignore_index=True), args.out)
    return 0


@register_scorer(NAME, SUMMARY, order=50, pages=[Page("views/association_tests.py", "Association tests", "📐")])
def register_cli(subparsers) -> None:
    from biascore.cli.args import add_common_args, add_model_args, int_at_least

    p = subparsers.add_parser("seat", help="WEAT/SEAT effect size with a permutation p-value",
                              description="WEAT (word tests) or SEAT (sent-* tests) effect size and one-sided "
                                          "permutation p-value. Tests: " + ", ".join(list_seat_tests()[:8]) + ", …")
    add_model_args(p)
    add_common_args(p)
    p.add_argument("--test", required=True, help="test name(s), comma-separated (e.g. sent-weat6,weat6,bangla-c5)")
    p.add_argument("--pooling", choices=["mean", "first"], default="mean", help="sentence embedding (SEAT)")
    p.add_argument("--word-embedding", choices=["contextual", "input"], default="contextual",
                   help="WEAT word vectors: the word embedded alone (mean over its tokens), or its input embedding")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--out", help="write the result rows to this CSV file")
    p.set_defaults(func=_cmd_seat)

    p = subparsers.add_parser("ceat", help="CEAT: contextual embeddings from a corpus, random-effects CES",
                              description="CEAT combined effect size per segment length (words around the target).")
    add_model_args(p)
    add_common_args(p)
    p.add_argument("--test", required=True, help="word test name(s): weat1..weat10 (English), bangla-c1..c9")
    p.add_argument("--corpus", help="UTF-8 text file to take contexts from (default: Bangla sample corpus, "
                                    "or CrowS-Pairs sentences for English)")
    p.add_argument("--segment-lengths", type=_segment, nargs="+", default=list(SEGMENT_LENGTHS),
                   help="words per segment; 'all' = the whole line (default 9 25 75 all)")
    p.add_argument("--n-contexts", type=int_at_least(2), default=50, help="contexts sampled per word (N)")
    p.add_argument("--draws", type=int_at_least(1), default=1000, help="random draws combined by the random-effects model")
    p.add_argument("--encoder", action="store_true", help="load an MLM checkpoint as a plain encoder")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--out", help="write the result rows to this CSV file")
    p.set_defaults(func=_cmd_ceat)

    p = subparsers.add_parser("logprob", help="masked-LM log-probability bias (Kurita et al.) per structure",
                              description="Log-probability bias effect size per sentence structure. Tests: "
                                          + ", ".join(list_logprob_tests()))
    add_model_args(p)
    add_common_args(p)
    p.add_argument("--test", required=True, help="log-probability test name(s), comma-separated")
    p.add_argument("--seed", type=int_at_least(0), default=0)
    p.add_argument("--out", help="write the effect-size rows to this CSV file")
    p.add_argument("--scores-out", help="also write the per-sentence scores of the last test to this CSV file")
    p.set_defaults(func=_cmd_logprob)
