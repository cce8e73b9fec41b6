"""Counter-stereotype test of attention heads (attention-head bias paper, Sec. 5.2, Figure 4).

1. S_orig: sentences with exactly one gender attribute word (``wordlists/gender_{female,male}``) and a stereotype
   target word (``gender_stereotype.txt``): the ``sent_more`` side of CrowS-Pairs' gender pairs (``crows-en``,
   ``crows-en-gso``, deduplicated; the paper used Reddit), or on a bare clone the ``demo`` benchmark's
   (``demo-gender-pairs``: a demonstration, not a finding).
2. S_counter: the attribute word swapped for its counterpart ("women" → "men"; case kept).
3. For head i-j: w = target→attribute attention (eager), each row min–max normalised over the non-special,
   non-punctuation columns it can see, averaged over sub-tokens; d = w(orig) − w(counter).
4. One-tailed one-sample t-test of mean d > 0 over sentences (``ttest_1samp(alternative="greater")``), each
   sentence's d averaged over a head group: biased heads (b_ij > 0) and the others; t, p, N as Figure 4.

A causal model's words see only earlier words: a sentence is used only when the attribute comes first.
"""
from __future__ import annotations

import copy
import re
import string
import threading
import unicodedata
import weakref
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from biascore.contract.options import OptionError
from biascore.inputs.datasets import BenchmarkError, load_benchmark
from biascore.progress import ProgressFn
from biascore.inputs.seat_tests import GenderWordLists, load_gender_wordlists
from biascore.stats.tests import one_sample_t_greater
from biascore.store.hashing import bytes_sha256
from biascore.methods.heads.head_table import scores_to_matrix

#: (benchmark, bias_type filter) pairs the sentences come from.
SOURCES = (("crows-en", "gender"), ("crows-en-gso", "gender"))
#: the source on a bare clone, where neither CrowS-Pairs benchmark is downloaded: the shipped demo's English pairs
FALLBACK = ("demo", "gender")
SOURCE_NOTE = ("sent_more sentences of the gender pairs of CrowS-Pairs (crows-en bias_type gender and "
               "crows-en-gso gender, deduplicated; where neither is downloaded, the shipped demo pairs' English "
               "gender pairs) with exactly one gender attribute word and a stereotype target word from the "
               "gender word lists")
_WORD = re.compile(r"[A-Za-z]+")


@dataclass(frozen=True)
class CounterPair:
    source: str
    sentence: str
    counter: str
    attribute: str
    counterpart: str
    target: str
    attr_span: tuple[int, int]  # in sentence
    counter_attr_span: tuple[int, int]  # in counter
    target_span: tuple[int, int]
    counter_target_span: tuple[int, int]


def _match_case(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    if like[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def make_counter_pair(sentence: str, lists: GenderWordLists, *, source: str = "",
                      attribute_first: bool = False) -> CounterPair | None:
    """The counter pair for one sentence, or None when it has not exactly one attribute word and a
    target word (after the attribute when ``attribute_first``)."""
    swap = lists.counterparts()
    targets = {w.lower() for w in lists.stereotype}
    words = [(m.group(), m.start(), m.end()) for m in _WORD.finditer(sentence)]
    attrs = [w for w in words if w[0].lower() in swap]
    if len(attrs) != 1:
        return None
    attr, a0, a1 = attrs[0]
    tgts = [w for w in words if w[0].lower() in targets and w[1] != a0 and (not attribute_first or w[1] > a0)]
    if not tgts:
        return None
    tgt, t0, t1 = tgts[0]
    new = _match_case(swap[attr.lower()], attr)
    counter = sentence[:a0] + new + sentence[a1:]
    shift = len(new) - len(attr) if t0 > a0 else 0
    return CounterPair(source, sentence, counter, attr, new, tgt, (a0, a1), (a0, a0 + len(new)), (t0, t1),
                       (t0 + shift, t1 + shift))


def collect_pairs(lists: GenderWordLists, *, attribute_first: bool = False,
                  data_dir=None) -> tuple[list[CounterPair], dict]:
    """Counter pairs from :data:`SOURCES`, deduplicated by sentence; also the sources' content hashes."""
    pairs, seen, hashes = [], set(), {}
    benches = []
    for name, bias_type in SOURCES:
        try:
            benches.append((load_benchmark(name, data_dir), bias_type))
        except BenchmarkError:
            continue
    if not benches:
        benches = [(load_benchmark(FALLBACK[0], data_dir), FALLBACK[1])]
    for bench, bias_type in benches:
        name = bench.name
        hashes[name] = bench.content_hash
        frame = bench.frame[bench.frame["bias_type"] == bias_type]
        if "language" in frame:
            frame = frame[frame["language"] == "en"]
        for pid, sent in zip(frame["pair_id"], frame["sent_more"]):
            sent = str(sent).strip()
            if sent in seen:
                continue
            seen.add(sent)
            pair = make_counter_pair(sent, lists, source=f"{name}#{pid}", attribute_first=attribute_first)
            if pair is not None:
                pairs.append(pair)
    return pairs, hashes


_EAGER_LOCK = threading.Lock()
_EAGER_VIEWS: "weakref.WeakKeyDictionary[torch.nn.Module, torch.nn.Module]" = weakref.WeakKeyDictionary()


def eager_view(model: torch.nn.Module) -> torch.nn.Module:
    """The model with eager attention (which returns attention weights), without switching the shared model. A model
    already eager is returned as is. Otherwise a structural copy is made once per model (under a lock): its modules and
    config are copied but every parameter and buffer is the original tensor, so it costs no weight memory and computes
    with the same weights; only the copy is set to eager attention."""
    if getattr(model.config, "_attn_implementation", None) in ("eager", None):
        return model
    with _EAGER_LOCK:
        view = _EAGER_VIEWS.get(model)
        if view is None:
            shared = {id(t): t for t in [*model.parameters(), *model.buffers()]}
            view = copy.deepcopy(model, memo=shared)
            view.set_attn_implementation("eager")
            _EAGER_VIEWS[model] = view
        return view


def _is_punct(text: str) -> bool:
    text = text.strip()
    return bool(text) and all(c in string.punctuation or unicodedata.category(c).startswith("P") for c in text)


def sentence_attentions(lm, text: str) -> tuple[list[str], np.ndarray, list[tuple[int, int]], np.ndarray]:
    """Tokens, attention (layers, heads, T, T), char offsets and the 'usable column' flags of one text. Usable columns
    are non-special, non-punctuation tokens. Causal models get their start token first."""
    causal = lm.kind == "causal"
    prepared = lm.prepare_text(text)
    enc = lm.tokenizer(prepared, add_special_tokens=not causal, return_offsets_mapping=True,
                       return_special_tokens_mask=True)
    ids, offsets, special = enc["input_ids"], list(map(tuple, enc["offset_mapping"])), enc["special_tokens_mask"]
    if causal:
        ids, offsets, special = [lm.start_token_id()] + ids, [(0, 0)] + offsets, [1] + special
    with torch.no_grad():
        out = eager_view(lm.model).base_model(input_ids=torch.tensor([ids], device=lm.device), output_attentions=True)
    att = torch.stack([a[0] for a in out.attentions]).float().cpu().numpy()
    usable = np.array([not s and e > b and not _is_punct(prepared[b:e]) for s, (b, e) in zip(special, offsets)])
    tokens = lm.tokenizer.convert_ids_to_tokens(ids)
    return tokens, att, offsets, usable


def _tokens_in(offsets, span) -> list[int]:
    return [i for i, (b, e) in enumerate(offsets) if e > b and b < span[1] and e > span[0]]


def word_attention(att: np.ndarray, offsets, usable: np.ndarray, target_span, attr_span, *, causal: bool) -> np.ndarray:
    """(layers, heads) min–max-normalised attention from the target word to the attribute word."""
    rows, cols = _tokens_in(offsets, target_span), _tokens_in(offsets, attr_span)
    if not rows or not cols:
        raise ValueError("target or attribute word has no tokens")
    scores = []
    for r in rows:
        allowed = usable.copy()
        if causal:
            allowed[r + 1:] = False
        row = att[:, :, r, allowed]
        lo, hi = row.min(axis=-1, keepdims=True), row.max(axis=-1, keepdims=True)
        norm = np.where(hi > lo, (att[:, :, r, :] - lo) / np.where(hi > lo, hi - lo, 1.0), 0.0)
        scores.append(norm[:, :, cols].mean(axis=-1))
    return np.mean(scores, axis=0)


def pair_attention(lm, pair: CounterPair) -> tuple[np.ndarray, np.ndarray]:
    """(w_orig, w_counter), each (layers, heads)."""
    causal = lm.kind == "causal"
    out = []
    for text, t_span, a_span in ((pair.sentence, pair.target_span, pair.attr_span),
                                 (pair.counter, pair.counter_target_span, pair.counter_attr_span)):
        _, att, offsets, usable = sentence_attentions(lm, text)
        out.append(word_attention(att, offsets, usable, t_span, a_span, causal=causal))
    return out[0], out[1]


@dataclass(frozen=True)
class CounterSources:
    """What the counter-stereotype test reads besides the model: the gender word lists and the CrowS-Pairs
    benchmarks its sentences come from (``content_hash`` covers all of them)."""

    lists: GenderWordLists
    sources: dict  # benchmark name -> content hash
    data_dir: object = None

    @property
    def name(self) -> str:
        """``crows-gender-pairs``, or ``demo-gender-pairs`` on the shipped demo pairs (a bare clone)."""
        return "demo-gender-pairs" if set(self.sources) == {FALLBACK[0]} else "crows-gender-pairs"

    @property
    def content_hash(self) -> str:
        return bytes_sha256(repr((sorted(self.sources.items()), self.lists.content_hash)))[:20]


def counter_sources(data_dir=None) -> CounterSources:
    """The word lists and the CrowS-Pairs sources of the counter-stereotype test."""
    lists = load_gender_wordlists(data_dir)
    _, hashes = collect_pairs(lists, data_dir=data_dir)
    return CounterSources(lists, dict(hashes), data_dir)


def counter_rows(lm, sources: CounterSources, progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row per sentence: the pair, ``w_orig``, ``w_counter``, ``d`` (flattened layers × heads)."""
    pairs, _ = collect_pairs(sources.lists, attribute_first=lm.kind == "causal", data_dir=sources.data_dir)
    rows = []
    for k, pair in enumerate(pairs):
        w_o, w_c = pair_attention(lm, pair)
        rows.append({"source": pair.source, "sentence": pair.sentence, "counter": pair.counter,
                     "attribute": pair.attribute, "counterpart": pair.counterpart, "target": pair.target,
                     "layers": w_o.shape[0], "heads": w_o.shape[1], "w_orig": w_o.ravel().tolist(),
                     "w_counter": w_c.ravel().tolist(), "d": (w_o - w_c).ravel().tolist()})
        if progress:
            progress(k + 1, len(pairs))
    return pd.DataFrame(rows, columns=COUNTER_COLUMNS)


def counter_pair(sources: CounterSources, source: str = "", *, causal: bool) -> CounterPair:
    """The counter pair named by its ``source`` as :func:`counter_rows` names it ("": the first), else a one-line
    OptionError; ``causal`` (the attribute comes first) is known from the model's identity before it loads."""
    pairs, _ = collect_pairs(sources.lists, attribute_first=causal, data_dir=sources.data_dir)
    pair = next((p for p in pairs if p.source == source or not source), None)
    if pair is None:
        raise OptionError(f"no counter pair {source!r} for this model (the heads-counter result lists them)")
    return pair


def pair_attentions(lm, sources: CounterSources, source: str = "") -> pd.DataFrame:
    """Every head's attention in both sentences of one counter pair (:func:`counter_pair`): one row per sentence
    (``original``, ``counter``) with its tokens and the attention (layers × heads × T × T, flattened) of
    :func:`sentence_attentions`."""
    pair = counter_pair(sources, source, causal=lm.kind == "causal")
    rows = []
    for side, text in (("original", pair.sentence), ("counter", pair.counter)):
        tokens, att, _, _ = sentence_attentions(lm, text)
        rows.append({"source": pair.source, "side": side, "text": text, "tokens": tokens, "layers": att.shape[0],
                     "heads": att.shape[1], "attention": att.ravel().tolist()})
    return pd.DataFrame(rows)


def attention_array(row: pd.Series) -> tuple[list[str], np.ndarray]:
    """The tokens and the (layers, heads, T, T) attention of one row of a ``heads-attention`` result."""
    n = len(row["tokens"])
    return list(row["tokens"]), np.asarray(row["attention"], dtype=float).reshape(
        int(row["layers"]), int(row["heads"]), n, n)


COUNTER_COLUMNS = ["source", "sentence", "counter", "attribute", "counterpart", "target", "layers", "heads",
                   "w_orig", "w_counter", "d"]


def d_array(frame: pd.DataFrame) -> np.ndarray:
    """(sentences, layers, heads) attention differences from a ``heads-counter`` result frame."""
    if frame.empty:
        return np.zeros((0, 0, 0))
    L, H = int(frame["layers"].iloc[0]), int(frame["heads"].iloc[0])
    return np.stack([np.asarray(d, dtype=float).reshape(L, H) for d in frame["d"]])


def counter_stereotype_test(d: np.ndarray, scores: np.ndarray) -> pd.DataFrame:
    """Figure-4 table: per head group, N sentences, heads, mean d, t, one-tailed p. ``d``: (sentences, layers, heads);
    ``scores``: (layers, heads) bias scores b_ij."""
    biased = np.asarray(scores) > 0
    rows = []
    for label, sel in (("biased heads (b > 0)", biased), ("other heads (b ≤ 0)", ~biased)):
        per_sentence = d[:, sel].mean(axis=1) if sel.any() and len(d) else np.zeros(0)
        t, p = one_sample_t_greater(per_sentence)
        rows.append({"group": label, "heads": int(sel.sum()), "N": int(len(per_sentence)),
                     "mean_d": float(per_sentence.mean()) if len(per_sentence) else float("nan"), "t": t, "p": p})
    return pd.DataFrame(rows)


def counter_stereotype_table(counter: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """The Figure-4 table for a ``heads-counter`` result frame and a head-score frame (``layer, head, score``)."""
    return counter_stereotype_test(d_array(counter), scores_to_matrix(scores))


def head_attention(row: pd.Series, layer: int, head: int) -> tuple[float, float]:
    """Normalised attention target → attribute of head ``layer``-``head`` (0-based, as the head table) in one row of
    a ``heads-counter`` result frame: (original sentence, counter sentence)."""
    L, H = int(row["layers"]), int(row["heads"])
    if not (0 <= layer < L and 0 <= head < H):
        raise ValueError(f"head {layer}-{head} outside {L} layers x {H} heads (0-based: 0-0 to {L - 1}-{H - 1})")
    at = layer * H + head
    return float(row["w_orig"][at]), float(row["w_counter"][at])

