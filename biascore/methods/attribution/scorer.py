"""Token-level bias attribution b(u), S_JSD and B; the CrowS pseudo-log-likelihood bias score.

Bias attribution score paper (Gamboa & Lee): for every unmodified token u shared by the more-biased
and the less-biased sentence,

    b(u)  = d(P_u,more) − d(P_u,less),        d = distance to the one-hot gold distribution (see jsd.py)
    S_JSD = mean_{u∈U} b(u);   a pair is *biased* when S_JSD < 0
    B     = 100 × share of biased pairs (overall and per bias type; 50 = unbiased)

P_u is the masked-LM distribution at u with u masked (everything else kept), or the causal-LM
next-token distribution at u given only the tokens before it (with a start token in front).

Filipino CrowS-Pairs / WinoQueer paper, Appendix B (CrowS pseudo-log-likelihood):

    score(S) = Σ_{u∈U} log P(u | rest of S)  (masked)  or  Σ_{u∈U} log P(u | tokens before u)  (causal)
    PLL bias score = 100 × share of pairs with score(more) > score(less)

Both come from the same forward passes: the cached quantity is log P(u) per shared token; b(u) for
either distance variant and the PLL sums are derived from it in microseconds.

Entry points: :func:`score_benchmark` (cached, resumable), :func:`score_pair` (live), :func:`summarize`.
"""
from __future__ import annotations

import argparse
import functools
import json
import sys
import time
from typing import Callable

import numpy as np
import pandas as pd

from biascore.core.registry import Page, ProgressFn, register_scorer
from biascore.core.cache import CacheKey, ResultCache, check_ids
from biascore.core.keys import result_key
from biascore.core.datasets import Benchmark, load_benchmark
from biascore.methods.attribution.fast_exact import fast_exact_logprobs
from biascore.methods.attribution.frame import attribution_frame
from biascore.methods.attribution.jsd import JSD_VARIANTS, JsdVariant
from biascore.methods.attribution.lmeval import LABEL as LMEVAL_LABEL, require_causal, summarize_lmeval
from biascore.methods.attribution.ties import tie_note, ties
from biascore.core.lm_scoring import BatchPlan, causal_gold_logprobs, masked_gold_logprobs
from biascore.core.models import LanguageModel, ModelIdentity
from biascore.core.prefix import DEFAULT_PREFIX, PREFIX_CONVENTIONS, PREFIX_HELP, prefix_token
from biascore.core.pair_tokens import PairTokens, flatten_spans, pair_of, shares_only_punctuation, tokenize_sentences
from biascore.core.precision import approximate_note, resolve_dtype
from biascore.stats.intervals import proportion_ci

NAME = "score"
SUMMARY = "bias attribution b(u), S_JSD, B and the CrowS PLL score on a pair benchmark"
METRICS = ("attribution", "pll", "lmeval")
NUMERICS = ("exact", "fast-exact")
SHARD_PAIRS = 256
GPU_SHARD_PAIRS = 4096  # on a GPU: fuller batches (and one fast-exact calibration per 4,096 pairs)

#: skipped_reason of a pair whose shared tokens are all punctuation (see pair_tokens.shares_only_punctuation)
ONLY_PUNCTUATION = "shares only punctuation: not a minimal pair"
#: columns of the cached per-pair log-probability frame (independent of the distance variant)
LOGP_COLUMNS = ["pair_id", "tokens", "more_tokens", "less_tokens", "more_spans", "less_spans", "more_u", "less_u",
                "logp_more", "logp_less", "truncated", "skipped_reason"]


# --------------------------------------------------------------------------- tokenisation
def _pair_record(pair_id: int, pt: PairTokens | None, skipped: str) -> dict:
    rec = {"pair_id": int(pair_id), "tokens": [], "more_tokens": [], "less_tokens": [], "more_spans": [],
           "less_spans": [], "more_u": [], "less_u": [], "logp_more": [], "logp_less": [], "truncated": False,
           "skipped_reason": skipped}
    if pt is None:
        return rec
    idx_more = {pos: k for k, pos in enumerate(pt.shared_more)}
    idx_less = {pos: k for k, pos in enumerate(pt.shared_less)}
    content_more = {pos: k for k, pos in enumerate(pt.more.content)}
    rec.update(
        tokens=[pt.more.tokens[content_more[p]] for p in pt.shared_more],
        more_tokens=list(pt.more.tokens), less_tokens=list(pt.less.tokens),
        more_spans=flatten_spans(pt.more.spans), less_spans=flatten_spans(pt.less.spans),
        more_u=[idx_more.get(p, -1) for p in pt.more.content], less_u=[idx_less.get(p, -1) for p in pt.less.content],
        truncated=pt.truncated)
    return rec


def _tokenize_pairs(lm: LanguageModel, frame: pd.DataFrame) -> tuple[list[PairTokens | None], list[dict]]:
    pts, recs, _ = _tokenize_rows(lm, frame)
    return pts, recs


def _tokenize_rows(lm: LanguageModel,
                   frame: pd.DataFrame) -> tuple[list[PairTokens | None], list[dict], list[PairTokens | None]]:
    """(pairs b(u)/PLL score — None when skipped, their cache records, and every row's tokenised pair — None only
    for a row with a load issue: the whole-sentence log-likelihood scores a pair that shares no tokens too)."""
    rows = list(frame.itertuples(index=False))
    todo = [k for k, row in enumerate(rows) if not (getattr(row, "load_issue", "") or "")]
    sentences = tokenize_sentences(lm, [t for k in todo for t in (rows[k].sent_more, rows[k].sent_less)])
    tokenized = {k: pair_of(sentences[2 * j], sentences[2 * j + 1]) for j, k in enumerate(todo)}  # one batch
    pts, recs = [], []
    for k, row in enumerate(rows):
        reason = getattr(row, "load_issue", "") or ""
        pt = None
        if not reason:
            pt = tokenized[k]
            if not pt.shared_more:
                reason, pt = "no shared tokens: not a minimal pair", None
            elif len(pt.shared_more) == len(pt.more.content) and len(pt.shared_less) == len(pt.less.content):
                reason = ("the sentences differ only beyond the model's input limit (truncated)" if pt.truncated
                          else "no modified tokens: the sentences tokenise identically")
                pt = None
            elif shares_only_punctuation(pt):
                reason, pt = ONLY_PUNCTUATION, None
        pts.append(pt)
        recs.append(_pair_record(row.pair_id, pt, reason))
    return pts, recs, [tokenized.get(k) for k in range(len(rows))]


# --------------------------------------------------------------------------- forward passes
def _gold(lm: LanguageModel, fn, seqs: list, pos: list, plan: BatchPlan, progress, numerics: str,
          combine=None) -> list[np.ndarray]:
    """``fn`` (masked/causal_gold_logprobs) over all sequences: exact float32, or fast-exact (fast_exact.py)."""
    if numerics == "exact":
        return fn(lm, seqs, pos, plan, progress)
    if numerics != "fast-exact":
        raise ValueError(f"unknown numerics {numerics!r}; choose one of {', '.join(NUMERICS)}")
    if lm.identity().dtype != "float32":
        raise ValueError("fast-exact needs a float32 model (it re-checks in float32); drop --dtype")

    def runner(which, subsets, fast):
        return fn(lm, [seqs[s] for s in which], subsets, plan, progress if fast else None, fast=fast)

    return fast_exact_logprobs(pos, [(2 * j, 2 * j + 1) for j in range(len(seqs) // 2)], runner, combine)


def _logprobs_for_pairs(lm: LanguageModel, pts: list[PairTokens | None], plan: BatchPlan,
                        progress: ProgressFn | None, numerics: str = "exact",
                        start: int | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    live = [i for i, pt in enumerate(pts) if pt is not None]
    out: list[tuple[np.ndarray, np.ndarray]] = [(np.zeros(0), np.zeros(0)) for _ in pts]
    if not live:
        return out
    if lm.kind == "masked":
        seqs = [s for i in live for s in (pts[i].more.ids, pts[i].less.ids)]
        pos = [p for i in live for p in (pts[i].shared_more, pts[i].shared_less)]
        lps = _gold(lm, masked_gold_logprobs, seqs, pos, plan, progress, numerics)
        for j, i in enumerate(live):
            out[i] = (lps[2 * j], lps[2 * j + 1])
        return out
    if lm.kind != "causal":
        raise ValueError(f"{lm.name} is a {lm.kind} model without an LM head; bias attribution needs a masked or "
                         "causal LM")
    # Causal: a shared token inside the pair's common prefix has the same context in both sentences, so its
    # log-probability is computed once and copied (b(u) = 0 exactly, as it should be).
    seqs, pos, prefix_share = [], [], []
    for i in live:
        pt = pts[i]
        common = 0
        for a, b in zip(pt.more.ids, pt.less.ids):
            if a != b:
                break
            common += 1
        in_prefix = [pm == pl and pm < common for pm, pl in zip(pt.shared_more, pt.shared_less)]
        seqs += [pt.more.ids, pt.less.ids]
        pos += [pt.shared_more, [p for p, same in zip(pt.shared_less, in_prefix) if not same]]
        prefix_share.append(in_prefix)

    def combine(j: int, more: np.ndarray, less_rest: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        rest = iter(less_rest)
        return more, np.array([more[k] if same else next(rest) for k, same in enumerate(prefix_share[j])])

    causal = functools.partial(causal_gold_logprobs, start=start)
    lps = _gold(lm, causal, seqs, pos, plan, progress, numerics, combine)
    for j, i in enumerate(live):
        out[i] = combine(j, lps[2 * j], lps[2 * j + 1])
    return out


# ---- lm-eval-compatible whole-sentence log-likelihood (issue 18): the causal forward passes score every token
def _causal_whole_sentences(lm: LanguageModel, pts: list[PairTokens | None], rows: list[PairTokens | None],
                            plan: BatchPlan, progress: ProgressFn | None, start: int
                            ) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[tuple[float, float]]]:
    """Causal, exact numerics: one forward per sentence, the LM head at **every** position, giving both the
    shared-token log P(u) of b(u)/PLL (``pts``) and the whole-sentence log-likelihoods ll = Σ_t log P(t | prefix,
    tokens before t) of every tokenised row (``rows``; see :mod:`biascore.methods.attribution.lmeval`).

    A token inside the pair's common prefix has the same context in both sentences: its log P is computed once,
    in the more-biased sentence, and copied (b(u) = 0 exactly there, as before). A sentence whose first token is
    the prefix token itself is scored as lm-eval scores it — that token is the context, the rest is summed — on a
    row of its own (its b(u) row keeps the prefix in front, as the published code does).
    """
    nan = float("nan")
    u_out = [(np.zeros(0), np.zeros(0)) for _ in pts]
    ll_out = [(nan, nan) for _ in rows]
    seqs: list[list[int]] = []
    pos: list[list[int]] = []
    jobs = []  # (row index, common-prefix length, index of its more / less sequence, extra rows or None)
    for i, pair in enumerate(rows):
        if pair is None or not pair.more.ids or not pair.less.ids:
            continue
        more, less = list(pair.more.ids), list(pair.less.ids)
        common = 0
        for a, b in zip(more, less):
            if a != b:
                break
            common += 1
        k = len(seqs)
        seqs += [more, less]
        pos += [list(range(len(more))), list(range(common, len(less)))]
        extra = []
        for ids in (more, less):
            if ids[0] == start and len(ids) > 1:  # lm-eval: the prefix token is the sentence's own first token
                extra.append(len(seqs))
                seqs.append(ids[1:])
                pos.append(list(range(len(ids) - 1)))
            else:
                extra.append(None)
        jobs.append((i, common, k, extra))
    if not seqs:
        return u_out, ll_out
    lps = causal_gold_logprobs(lm, seqs, pos, plan, progress, start=start)
    for i, common, k, extra in jobs:
        full_more = lps[k]
        full_less = np.concatenate([full_more[:common], lps[k + 1]])
        sums = [float(np.sum(full_more)), float(np.sum(full_less))]
        for side, e in enumerate(extra):
            if e is not None:
                sums[side] = float(np.sum(lps[e])) if len(lps[e]) else 0.0
        ll_out[i] = (sums[0], sums[1])
        pt = pts[i]
        if pt is not None:
            u_out[i] = (full_more[pt.shared_more], full_less[pt.shared_less])
    return u_out, ll_out


#: per pair, beside LOGP_COLUMNS: the whole-sentence log-likelihoods (causal LMs, exact numerics; NaN otherwise)
#: and the prefix token the causal passes put in front (id −1 and "" for a masked LM)
LL_COLUMNS = ["ll_more", "ll_less", "prefix_token_id", "prefix_token"]


def compute_logprobs(lm: LanguageModel, frame: pd.DataFrame, plan: BatchPlan | None = None,
                     progress: ProgressFn | None = None, numerics: str = "exact",
                     prefix: str = DEFAULT_PREFIX) -> pd.DataFrame:
    """The cached quantity: per pair, the shared tokens and log P(u) in both sentences (see LOGP_COLUMNS), and for
    a causal LM the whole-sentence log-likelihoods ``ll_more``/``ll_less`` from the same forward passes and the
    prefix token used (LL_COLUMNS).

    ``numerics``: ``exact`` (the model's own dtype, float32 by default) or ``fast-exact`` (half-precision pass +
    float32 re-check; every b(u) within 1e-4 of float32 and the same verdicts, see fast_exact.py; it re-checks
    b(u) and PLL only, so ll is not computed there). ``prefix``: the causal prefix convention
    (:mod:`biascore.core.prefix`; the default is the published code's).
    """
    pts, recs, rows = _tokenize_rows(lm, frame)
    plan = plan or BatchPlan.for_model(lm)
    nan = float("nan")
    lls = [(nan, nan)] * len(pts)
    token = lm.prefix_token(prefix) if lm.kind == "causal" else None
    if token is not None and numerics == "exact":
        lps, lls = _causal_whole_sentences(lm, pts, rows, plan, progress, token.id)
    else:
        lps = _logprobs_for_pairs(lm, pts, plan, progress, numerics, start=token.id if token else None)
    for rec, (more, less), (ll_more, ll_less) in zip(recs, lps, lls):
        rec["logp_more"], rec["logp_less"] = more.tolist(), less.tolist()
        rec["ll_more"], rec["ll_less"] = ll_more, ll_less
        rec["prefix_token_id"] = token.id if token else -1
        rec["prefix_token"] = token.text if token else ""
    return pd.DataFrame.from_records(recs, columns=LOGP_COLUMNS + LL_COLUMNS)


# --------------------------------------------------------------------------- entry points
def logprob_cache_key(model: ModelIdentity | LanguageModel, benchmark: Benchmark, limit: int | None,
                      numerics: str = "exact", prefix: str = DEFAULT_PREFIX) -> CacheKey:
    """Everything that determines the log-probabilities: model files, numerics, benchmark content, pair count,
    and for a causal LM the prefix token (id and text) that ``prefix`` gives for it (:mod:`biascore.core.prefix`)."""
    extra = {} if numerics == "exact" else {"numerics": numerics}  # exact keys stay as they were
    extra.update(prefix_key_parts(model, prefix))
    return result_key("attribution", model, benchmark=benchmark.name, benchmark_hash=benchmark.content_hash,
                      n_pairs=len(benchmark.frame) if limit is None else min(limit, len(benchmark.frame)), **extra)


def prefix_key_parts(model: ModelIdentity | LanguageModel, prefix: str = DEFAULT_PREFIX) -> dict:
    """The prefix part of a causal model's key, ``{prefix_token_id, prefix_token}``; ``{}`` for a masked LM."""
    ident = model.identity() if isinstance(model, LanguageModel) else model
    if ident.kind != "causal":
        return {}
    if ident.specials is None:
        raise ValueError(f"{ident.name}: a causal model's result key needs its tokenizer's BOS/EOS tokens "
                         "(use model_identity() or LanguageModel.identity())")
    return prefix_token(ident.specials, prefix, ident.name).key_parts(ident.specials)


def score_benchmark(lm: LanguageModel | Callable[[], LanguageModel], benchmark: str | Benchmark, *,
                    jsd: JsdVariant = "reference", limit: int | None = None,
                    progress: ProgressFn | None = None, cache: ResultCache | None = None,
                    data_dir=None, shard_pairs: int | None = None,
                    identity: ModelIdentity | None = None,
                    waiting: ProgressFn | None = None, numerics: str = "exact",
                    prefix: str = DEFAULT_PREFIX) -> pd.DataFrame:
    """Score every pair of a benchmark (cached; an interrupted run resumes from its completed shards).

    ``prefix``: the token a causal LM gets in front of each sentence (:mod:`biascore.core.prefix`): ``published``
    (default; the published code's), ``lmeval`` (lm-evaluation-harness's), ``bos`` or ``eos``. Conventions that
    give the same token share one cached result.

    ``lm`` is a loaded model or a zero-argument loader; with a loader and a known ``identity``
    (:func:`biascore.core.models.model_identity`) a cached result is answered without loading the model.
    ``progress(done, total)`` is called with the number of pairs done (for the dashboard's progress bar).
    One computation per result across processes: while another process or thread scores the same model ×
    benchmark, this call waits for its result and calls ``waiting(done, total)`` with *its* progress.
    The stored result holds every pair exactly once (checked before it is stored and on every read).
    Returns one row per pair (schema in README.md → "Output schema").
    """
    bm = benchmark if isinstance(benchmark, Benchmark) else load_benchmark(benchmark, data_dir)
    if limit is not None:
        bm = bm.first(limit)
    cache = cache or ResultCache()
    if isinstance(lm, LanguageModel):
        identity = lm.identity()
    elif identity is None:
        lm = lm()
        identity = lm.identity()
    ids = [int(x) for x in bm.frame["pair_id"]]
    verify = lambda frame: check_ids(frame, ids)  # noqa: E731
    key = logprob_cache_key(identity, bm, limit, numerics, prefix)
    logp = cache.load(key, verify)
    if logp is None:
        if not isinstance(lm, LanguageModel):
            lm = lm()
            key = logprob_cache_key(lm.identity(), bm, limit, numerics, prefix)  # the loaded model is the authority
        total = len(ids)
        if shard_pairs is None:
            shard_pairs = GPU_SHARD_PAIRS if lm.device.type == "cuda" else SHARD_PAIRS

        def wait(report) -> None:
            if waiting:
                waiting(report.done if report else 0, report.total if report else total)

        with cache.computing(key, wait):
            logp = cache.load(key, verify)  # another process may have finished it while we waited
            if logp is None:
                logp = _score_shards(lm, bm, cache, key, ids, shard_pairs, progress, numerics, prefix)
    return attribution_frame(bm, logp.sort_values("pair_id").reset_index(drop=True), jsd)


def _score_shards(lm: LanguageModel, bm: Benchmark, cache: ResultCache, key: CacheKey, ids: list[int],
                  shard_pairs: int, progress: ProgressFn | None,
                  numerics: str = "exact", prefix: str = DEFAULT_PREFIX) -> pd.DataFrame:
    """Compute the missing shards of ``key`` (the caller holds its lock), publishing progress, and store the
    finished, checked result."""
    shards = cache.shards(key, ids, shard_pairs)
    done = shards.completed()
    total, last = len(ids), [0.0]

    def report(n: int, force: bool = False) -> None:
        if progress:
            progress(n, total)
        now = time.monotonic()
        if force or now - last[0] > 0.5:  # waiting callers poll every half second
            cache.report_progress(key, n, total)
            last[0] = now

    finished = sum(b - a for a, b in done)
    report(finished, force=True)
    for a, b in shards.ranges:
        if (a, b) in done:
            continue
        chunk = bm.frame.iloc[a:b]

        def inner(d, tot, base=finished, n=b - a):
            report(base + int(round(n * d / max(tot, 1))))

        frame = compute_logprobs(lm, chunk, progress=inner, numerics=numerics, prefix=prefix)
        shards.write(a, b, frame)
        done[(a, b)] = frame
        finished += b - a
        report(finished, force=True)
    return shards.finish(done)


def score_pair(lm: LanguageModel, sent_more: str, sent_less: str, *, jsd: JsdVariant = "reference",
               bias_type: str = "unspecified") -> dict:
    """Score one pair live (no cache). Bad input comes back with ``skipped_reason`` set, never an exception."""
    from biascore.core.datasets import _row_issue

    frame = pd.DataFrame({"pair_id": [0], "sent_more": [sent_more], "sent_less": [sent_less],
                          "bias_type": [bias_type]})
    frame["load_issue"] = [_row_issue(sent_more, sent_less)]
    bm = Benchmark("live", frame, "", "typed by the user", path=None)  # type: ignore[arg-type]
    return attribution_frame(bm, compute_logprobs(lm, frame), jsd).iloc[0].to_dict()


def summarize(frame: pd.DataFrame, metric: str = "attribution", by: str = "bias_type",
              level: float = 0.95) -> pd.DataFrame:
    """B (``attribution``) or the PLL bias score (``pll``) overall and per group, with n, a ``level``
    confidence interval and the ties (:mod:`biascore.methods.attribution.ties`: counted as the score's strict
    inequality says, and shown). ``lmeval``: the lm-eval-compatible score's own table
    (:func:`biascore.methods.attribution.lmeval.summarize_lmeval`).

    Both are shares of pairs (100·k/n), so the interval is the binomial Wilson score interval
    (:func:`biascore.stats.intervals.proportion_ci`), which keeps its width on small or all-one-way groups
    where a bootstrap collapses to a point. Skipped pairs are not counted (their number is in ``n_skipped``).
    """
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; choose one of {', '.join(METRICS)}")
    if metric == "lmeval":
        return summarize_lmeval(frame, by)
    scored = frame[frame["skipped_reason"] == ""]
    flag = (scored["biased"] if metric == "attribution" else scored["pll_more"] > scored["pll_less"]).astype(bool)
    tie = ties(scored, metric)
    groups = [("all", scored.index, frame.index)] + [
        (g, scored.index[scored[by] == g], frame.index[frame[by] == g]) for g in sorted(frame[by].unique())]
    rows = []
    for name, idx, all_idx in groups:
        n, k = len(idx), int(flag.loc[idx].sum())
        lo, hi = proportion_ci(k, n, level)
        rows.append({by: name, "n": int(n), "score": 100.0 * k / n if n else float("nan"),
                     "ci_low": 100.0 * lo, "ci_high": 100.0 * hi, "n_skipped": int(len(all_idx) - n),
                     "ties": int(tie.loc[idx].sum())})
    return pd.DataFrame.from_records(rows)


# --------------------------------------------------------------------------- CLI
@register_scorer(NAME, SUMMARY, order=10,
                 pages=[Page("views/overview.py", "Overview", "📊"),
                        Page("views/token_attributions.py", "Token attributions", "🔎"),
                        Page("views/try_pair.py", "Try a pair", "✍️"),
                        Page("views/translation_review.py", "Translation review", "🇵🇭")])
def register_cli(sub) -> None:
    from biascore.cli.args import add_common_args, add_model_args, int_at_least

    p = sub.add_parser(NAME, help=SUMMARY, description=__doc__.split("\n\n")[0])
    add_model_args(p)
    add_common_args(p)
    p.add_argument("--benchmark", default="demo", help="benchmark name (see `benchmarks`) or a CSV file path")
    p.add_argument("--metric", choices=METRICS, default="attribution",
                   help="attribution: B from S_JSD (bias attribution paper); pll: the CrowS paper's "
                        "pseudo-log-likelihood score over the shared tokens; lmeval: lm-evaluation-harness's "
                        "crows_pairs_english score (whole-sentence log-likelihood; causal LMs only)")
    p.add_argument("--prefix", choices=PREFIX_CONVENTIONS, default=None,
                   help="causal LMs: the token in front of each sentence. " + "; ".join(
                       f"{k}: {v}" for k, v in PREFIX_HELP.items()) + ". Default: published (lmeval for "
                       "--metric lmeval)")
    p.add_argument("--jsd", choices=JSD_VARIANTS, default="reference",
                   help="reference: d = JSD^(1/4) as the published code; paper: d = sqrt(JSD)")
    p.add_argument("--limit", type=int_at_least(1), default=None, help="score only the first N pairs (N ≥ 1)")
    p.add_argument("--fast-exact", action="store_true",
                   help="a half-precision pass, then a float32 re-check of every token and pair it cannot "
                        "guarantee (every b(u) within 1e-4 of float32, the same verdicts)")
    p.add_argument("--out", default=None, help="write the per-pair frame (.csv or .parquet)")
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from biascore.cli.args import model_from_args

    bm = load_benchmark(args.benchmark, args.data_dir)
    if bm.malformed:
        print(f"warning: {len(bm.malformed)} malformed row(s) in {bm.path} were not loaded: "
              + "; ".join(bm.malformed[:5]) + (" …" if len(bm.malformed) > 5 else ""), file=sys.stderr)
    from biascore.core.models import model_identity

    identity = model_identity(args.model, gguf_file=args.gguf_file, device=args.device, dtype=args.dtype)
    numerics = "fast-exact" if getattr(args, "fast_exact", False) else "exact"
    # --- issue 18: the prefix convention and the lm-eval-compatible metric, checked before anything is computed
    prefix = args.prefix or ("lmeval" if args.metric == "lmeval" else DEFAULT_PREFIX)
    load = lambda: model_from_args(args)  # noqa: E731
    if args.metric == "lmeval" and numerics != "exact":
        raise ValueError("--metric lmeval needs exact numerics: fast-exact re-checks b(u) and PLL verdicts only; "
                         "drop --fast-exact")
    if identity is None:  # only a load tells a hub model's kind and tokenizer (score_benchmark would load it too)
        lm = load()
        identity = lm.identity()
        load = lambda: lm  # noqa: E731
    if args.metric == "lmeval":
        require_causal(identity.kind, args.model)
    prefix_key_parts(identity, prefix)  # no such prefix token (no BOS and no EOS): one line, nothing computed
    # ---
    t0 = time.perf_counter()
    bar = tqdm(total=len(bm.frame) if args.limit is None else min(args.limit, len(bm.frame)), unit="pair",
               desc=f"{args.model} on {bm.name}", file=sys.stderr)

    def progress(done, total, desc=f"{args.model} on {bm.name}"):
        bar.set_description_str(desc, refresh=False)
        bar.total = total
        bar.n = done
        bar.refresh()

    def waiting(done, total):  # another process is scoring this very model × benchmark: show its progress
        progress(done, total, f"waiting for another process scoring {args.model} on {bm.name}")

    frame = score_benchmark(load, bm, jsd=args.jsd, limit=args.limit, progress=progress,
                            identity=identity, numerics=numerics, waiting=waiting, prefix=prefix)
    bar.close()
    elapsed = time.perf_counter() - t0
    summary = summarize(frame, args.metric)
    label = {"attribution": "B (% pairs with S_JSD < 0)",
             "pll": "PLL bias score, CrowS paper (% pairs with Σ_U log P(more) > Σ_U log P(less))",
             "lmeval": f"{LMEVAL_LABEL} (lm-eval-compatible, NOT the CrowS paper's PLL: % pairs whose whole "
                       "sentence is more likely in its stereotyped version)"}[args.metric]
    print(f"{args.model} on {bm.name} — {label}; 50 = unbiased; {elapsed:.2f} s")
    _print_prefix(frame, prefix, args.metric)
    note = approximate_note(resolve_dtype(args.dtype))
    if note:
        print(f"numbers: {note}")
    elif numerics == "fast-exact":
        print("numbers: fast-exact — half-precision pass with float32 re-checks; every b(u) within 1e-4 of the "
              "float32 run, same verdicts")
    else:
        print("numbers: exact (float32 forward passes, TF32 off)")
    if args.metric == "lmeval":
        print("stderr: standard error of the mean, as lm-eval reports it (pct_stereotype in %, likelihood_diff in "
              "nats)")
        fmt = {c: (lambda x: f"{x:.4f}") for c in ("likelihood_diff", "likelihood_diff_stderr")}
        print(summary.to_string(index=False, formatters=fmt, float_format=lambda x: f"{x:.2f}"))
    else:
        print("intervals: 95% Wilson score interval (binomial proportion)")
        print(summary.to_string(index=False, float_format=lambda x: f"{x:.2f}"))
    n_ties = int(summary["ties"].iloc[0])
    if n_ties:
        from biascore.methods.attribution.ties import score_difference
        exact = int((score_difference(frame[frame["skipped_reason"] == ""] if args.metric != "lmeval" else frame,
                                      args.metric) == 0).sum())
        print(tie_note(n_ties, exact, args.metric))
    skipped = frame[frame["skipped_reason"] != ""]
    if len(skipped):
        print(f"\n{len(skipped)} pair(s) skipped and kept in the output with skipped_reason:")
        for reason, n in skipped["skipped_reason"].value_counts().items():
            print(f"  {n:5d}  {reason}")
    n_trunc = int(frame["truncated"].sum())
    if n_trunc:
        print(f"{n_trunc} pair(s) had a sentence longer than the model's input limit and were truncated")
    if args.out:
        write_frame(frame, args.out)
        print(f"wrote {len(frame)} rows to {args.out}")
    return 0


def _print_prefix(frame: pd.DataFrame, prefix: str, metric: str) -> None:
    """The CLI's line about the token put in front of each sentence (issue 18: conventions are printed)."""
    ids = frame["prefix_token_id"] if "prefix_token_id" in frame.columns else pd.Series(dtype=int)
    if not len(ids) or int(ids.iloc[0]) < 0:
        print("prefix token: none (masked LM: the tokenizer's own special tokens frame each sentence)"
              + (f"; --prefix {prefix} applies to causal LMs only" if prefix != DEFAULT_PREFIX else ""))
        return
    print(f"prefix token: {str(frame['prefix_token'].iloc[0])!r} (id {int(ids.iloc[0])}; --prefix {prefix}: "
          f"{PREFIX_HELP[prefix]})")
    if metric == "lmeval" and prefix != "lmeval":
        print("note: not lm-eval's prefix convention, so these are not lm-eval's numbers unless the two tokens agree")


def write_frame(frame: pd.DataFrame, path: str) -> None:
    """CSV (list columns as JSON) or parquet, by extension. A frame read back from the cache (numpy arrays of
    numpy scalars) writes the same file as a freshly computed one (Python lists)."""
    if path.endswith(".parquet"):
        frame.to_parquet(path, index=False)
        return
    out = frame.copy()
    for col in out.columns:
        if out[col].map(lambda v: isinstance(v, (list, np.ndarray))).any():
            out[col] = out[col].map(lambda v: json.dumps(np.asarray(v).tolist() if len(v) else [],
                                                         ensure_ascii=False))
    out.to_csv(path, index=False)
