"""Time a cold LABDet run stage by stage (not a test): model load, embedding, probes, summary.

    python bench/labdet_timing.py --model all-minilm-l6-v2 --lang en [--threads 1]

Nothing is read from or written to the result cache, so every stage is computed. On a machine shared
with other busy processes, ``--threads 1`` can be many times faster than torch's default thread count
(threads that spin-wait for a core they do not get).
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from biascore.models.loading import load_model
from biascore.methods.labdet.probes import PROBES, fit_probe, heldout_accuracy, positive_proba
from biascore.methods.labdet import scorer as labdet
from biascore.models.embeddings import embed_sentences


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="all-minilm-l6-v2")
    ap.add_argument("--lang", default="en", choices=list(labdet.LANGUAGES))
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    clock = {}

    t = time.perf_counter()
    lm = load_model(args.model)
    data = labdet.load_labdet(args.lang)
    clock["load model + data"] = time.perf_counter() - t

    filler = labdet.neutral_filler(lm)
    pairs = labdet.surfacing_pairs(data, filler)
    surf = list(dict.fromkeys(pairs["sentence"].tolist() + pairs["neutral_sentence"].tolist()))
    train = data.train["sentence"].tolist()
    t = time.perf_counter()
    X = embed_sentences(lm, train + surf)
    clock[f"embed {len(train) + len(surf)} sentences"] = time.perf_counter() - t

    y, groups = data.train["label"].to_numpy(), data.train["template"].to_numpy()
    for kind in PROBES:
        t = time.perf_counter()
        acc = heldout_accuracy(X[:len(train)], y, groups, kind)
        p = positive_proba(fit_probe(X[:len(train)], y, kind), X[len(train):])
        clock[f"{kind}: held-out accuracy {acc:.3f} + fit + predict"] = time.perf_counter() - t
        assert np.all((p >= 0) & (p <= 1))

    known = dict(zip(train + surf, X))  # features reused: the summary below times the rest only
    items = labdet.probe_items(data, lambda sents: np.stack([known[x] for x in sents]), filler=filler)
    t = time.perf_counter()
    labdet.summarize(items)
    labdet.robustness(items)
    clock["summary (bootstrap, Wilcoxon) + robustness"] = time.perf_counter() - t

    print(f"{args.model} / {args.lang}, torch threads {torch.get_num_threads()}")
    for name, secs in clock.items():
        print(f"  {secs:8.1f} s  {name}")


if __name__ == "__main__":
    main()
