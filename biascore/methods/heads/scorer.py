"""Attention-head bias scores: b_ij = ∂|SEAT effect size| / ∂m_ij at m = 1.

Attention-head bias paper (Yang et al., "Bias A-head? Analyzing bias in transformer-based language
model attention heads"), eqs. 2–4::

    MultiHead_i(X) = Concat_j (m_ij · head_ij) W^O,        m = 1
    L = |ES(X, Y, A, B)|                                    (SEAT effect size, biascore.stats.effect_size)
    b_ij = ∂L / ∂m_ij

A positive b_ij means that turning the head down (m_ij: 1 → 0) would shrink the measured bias: a
"biased head". All heads come from one forward and one backward pass. When the test's contexts do not
fit in one batch the gradient is taken in two exact steps: a no-grad forward gives every embedding E
and g = ∂L/∂E, then each batch is re-run with grad and back-propagated with g (a vector–Jacobian
product), which sums to the same ∂L/∂m without holding every batch's graph in memory.

Entry point: :func:`head_scores`. The counter-stereotype test is in
:mod:`biascore.methods.heads.counter_stereotype`, the masking table in :mod:`biascore.methods.heads.masking`.
"""
from __future__ import annotations

import argparse
import numpy as np
import pandas as pd
import torch
from tqdm.auto import tqdm

from biascore.core.registry import Page, ProgressFn, register_scorer
from biascore.core.cache import CacheKey, ResultCache
from biascore.methods.heads.head_table import scores_frame, scores_to_matrix, top_heads
from biascore.methods.heads.masking import masking_table
from biascore.core.keys import result_key
from biascore.methods.heads.masks import HeadMask
from biascore.core.seat_tests import WORD_TEMPLATES, SeatTest, load_seat_test
from biascore.methods.heads.seat_embeddings import SeatEmbedder, pooled

NAME = "heads"
SUMMARY = "attention-head bias scores: gradient of |SEAT effect size| w.r.t. head masks"

DEFAULT_SEAT_TEST = "weat6b"


def _as_test(test: SeatTest | str, data_dir=None) -> SeatTest:
    return test if isinstance(test, SeatTest) else load_seat_test(test, data_dir)


def head_score_matrix(lm, test: SeatTest, *, batch_size: int = 256,
                      progress: ProgressFn | None = None) -> tuple[np.ndarray, float]:
    """(b, effect size at m = 1): b is the (layers, heads) gradient of |ES| w.r.t. the head mask.

    ``progress(done, total)`` follows the backward batches (a test that fits in one batch has none).
    """
    emb = SeatEmbedder(lm, test, batch_size=batch_size)
    with HeadMask(lm.model) as hm:
        mask = hm.mask.requires_grad_(True)
        if len(emb.batches) == 1:
            es = emb.effect_size(pooled(lm, emb.batches[0]))
            (grad,) = torch.autograd.grad(es.abs(), mask)
        else:
            with torch.no_grad():
                E = emb.embed_all()
            E.requires_grad_(True)
            es = emb.effect_size(E)
            (gE,) = torch.autograd.grad(es.abs(), E)
            grad = torch.zeros_like(mask)
            bar = tqdm(list(zip(emb.batches, emb.slices)), desc="head scores (backward)", leave=False)
            for k, (batch, sl) in enumerate(bar):
                (g,) = torch.autograd.grad(pooled(lm, batch), mask, grad_outputs=gE[sl].to(mask.dtype))
                grad += g
                if progress:
                    progress(k + 1, len(emb.batches))
    return grad.detach().double().cpu().numpy(), float(es.detach())


def cache_key(lm, test: SeatTest) -> CacheKey:
    return result_key(NAME, lm, seat_test=test.name, seat_hash=test.content_hash, templates=list(WORD_TEMPLATES))


def head_scores(lm, seat_test: SeatTest | str = DEFAULT_SEAT_TEST, *, data_dir=None, batch_size: int = 256,
                cache: ResultCache | None = None, progress: ProgressFn | None = None,
                only_cached: bool = False) -> pd.DataFrame | None:
    """Per-head bias scores for one SEAT test, cached. Columns ``layer, head, score, effect_size``
    (``effect_size``: the signed SEAT effect size of the unmasked model, the same on every row).
    ``only_cached``: never run the model; None when the scores are not cached."""
    test = _as_test(seat_test, data_dir)
    cache = cache or ResultCache()
    if only_cached:
        return cache.load(cache_key(lm, test))

    def compute() -> pd.DataFrame:
        b, es = head_score_matrix(lm, test, batch_size=batch_size, progress=progress)
        frame = scores_frame(b)
        frame["effect_size"] = es
        return frame

    return cache.get_or_compute(cache_key(lm, test), compute)


# --------------------------------------------------------------------------- CLI
@register_scorer(NAME, SUMMARY, order=30, pages=[Page("views/attention_heads.py", "Attention heads", "🧠")])
def register_cli(subparsers) -> None:
    from biascore.cli.args import add_common_args, add_model_args, int_at_least

    p = subparsers.add_parser(NAME, help=SUMMARY, description=__doc__.split("\n\n")[0])
    add_model_args(p)
    add_common_args(p)
    p.add_argument("--seat-test", default=DEFAULT_SEAT_TEST,
                   help=f"SEAT test name in <data-dir>/seat/ (file stem) or a .jsonl path; default {DEFAULT_SEAT_TEST}")
    p.add_argument("--out", default=None, help="CSV with one row per head: layer, head, score")
    p.add_argument("--mask-eval", type=int_at_least(1), default=None, metavar="K",
                   help="also mask top-K / bottom-K / K random / all positive heads and report SEAT effect size "
                        "and (pseudo-)perplexity; the table goes to <out>_masking.csv")
    p.add_argument("--held-out", type=int_at_least(1), default=40, metavar="N",
                   help="held-out CrowS-Pairs sentences for the (pseudo-)perplexity of --mask-eval; default 40")
    p.add_argument("--draws", type=int_at_least(1), default=5, help="random head sets averaged in --mask-eval; default 5")
    p.add_argument("--batch-size", type=int_at_least(1), default=256,
                   help="texts per forward pass; a test that fits in one batch needs no second forward")
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    from biascore.cli.args import model_from_args

    lm = model_from_args(args)
    test = load_seat_test(args.seat_test)
    frame = head_scores(lm, test, batch_size=args.batch_size)
    b = scores_to_matrix(frame)
    print(f"{lm.name}: {b.shape[0]} layers x {b.shape[1]} heads; SEAT {test.name} ({test.describe()}) "
          f"effect size {frame['effect_size'].iloc[0]:+.4f}; {int((frame['score'] > 0).sum())} positive heads")
    print("top heads:")
    print(top_heads(frame, 10)[["name", "score"]].to_string(index=False))
    out = frame[["layer", "head", "score"]]
    if args.out:
        out.to_csv(args.out, index=False)
        print(f"wrote {args.out}")
    if args.mask_eval is not None:
        table = masking_table(lm, test, frame, k=args.mask_eval, draws=args.draws, n_held_out=args.held_out)
        print("\ntargeted head masking:")
        shown = table.assign(heads=[h if len(h) <= 40 else h[:37] + "..." for h in table["heads"]])
        print(shown.to_string(index=False))
        if args.out:
            path = args.out[:-4] if args.out.lower().endswith(".csv") else args.out
            table.to_csv(f"{path}_masking.csv", index=False)
            print(f"wrote {path}_masking.csv")
    return 0
