"""Batched gold-token log-probabilities log P(gold token | context) for masked and causal LMs (b(u) and PLL).

Sequences are sorted by length and packed under a token budget; the LM head runs only at the scored positions
(:func:`position_logits`), with nothing attached to or changed on the shared model, so threads may score at once;
the log-softmax keeps log P precise near P = 1 in float32 (:func:`_launch_gold_logprobs`); a batch that runs out of
memory is split in half and the budget stays halved.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import torch

from biascore.models.loading import LanguageModel
from biascore.progress import ProgressFn

log = logging.getLogger(__name__)

@dataclass
class BatchPlan:
    """Token budget per batch; adapted downwards when a batch does not fit in memory."""

    max_tokens: int
    max_rows: int = 512

    @classmethod
    def for_model(cls, lm: LanguageModel) -> "BatchPlan":
        if lm.device.type == "cuda":
            free, _ = torch.cuda.mem_get_info(lm.device)
            # memory this process's allocator holds but does not use is free for the next batch too
            free += torch.cuda.memory_reserved(lm.device) - torch.cuda.memory_allocated(lm.device)
            hidden = getattr(lm.config, "hidden_size", 768)
            # activations ~ tokens * hidden * layers-ish bytes; stay well inside free memory
            return cls(max_tokens=int(max(4096, min(262144, free / (hidden * 400)))), max_rows=4096)
        return cls(max_tokens=4096)


def _is_oom(exc: BaseException) -> bool:
    return isinstance(exc, torch.cuda.OutOfMemoryError) or (
        isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower())


def _softcapped(model: torch.nn.Module, head: Callable[[torch.Tensor], torch.Tensor]):
    """``head`` followed by the final logit soft-capping of gemma-2/3 (cap·tanh(logits/cap)), when configured,
    in the same operation order as their ``forward``."""
    cap = getattr(model.config, "final_logit_softcapping", None)
    if cap is None:
        return head

    def capped(hidden: torch.Tensor) -> torch.Tensor:
        return torch.tanh(head(hidden) / cap) * cap
    return capped


def _distilbert_head(model: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor]:
    def head(hidden: torch.Tensor) -> torch.Tensor:
        h = model.vocab_layer_norm(model.activation(model.vocab_transform(hidden)))
        return model.vocab_projector(h)
    return head


#: Architectures whose ``forward`` is exactly ``head(base_model(...).last_hidden_state)`` (final norms live
#: inside the base model), with how to get that head. Each entry is checked against the full forward on a
#: tiny random model in tests/models/test_lm_scoring.py; anything else takes the full forward.
_HEADS: dict[str, Callable[[torch.nn.Module], Callable[[torch.Tensor], torch.Tensor]]] = {
    "BertForMaskedLM": lambda m: m.cls, "RobertaForMaskedLM": lambda m: m.lm_head,
    "XLMRobertaForMaskedLM": lambda m: m.lm_head, "CamembertForMaskedLM": lambda m: m.lm_head,
    "DistilBertForMaskedLM": _distilbert_head,
    **{name: (lambda m: _softcapped(m, m.lm_head)) for name in [
        "GPT2LMHeadModel", "LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
        "GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "Phi3ForCausalLM"]},
}


def lm_head_of(model: torch.nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """The function from the base model's last hidden states to vocabulary logits, for a recognised
    architecture; None when the model is not one (its full forward must be used)."""
    make = _HEADS.get(type(model).__name__)
    base = getattr(model, "base_model", None)
    if make is None or base is None or base is model:
        return None
    return make(model)


def position_logits(lm: LanguageModel, input_ids: torch.Tensor, attention: torch.Tensor, rows: torch.Tensor,
                    cols: torch.Tensor) -> torch.Tensor:
    """Vocabulary logits [K, V] at positions (rows[k], cols[k]) of a padded batch. For a recognised architecture the
    base model runs, the K hidden states are gathered and the LM head is applied to them alone (shaped [1, K, H], as the
    model's own forward would see them); otherwise the full forward runs and its logits are gathered. Stateless: the
    shared model is only called, never modified."""
    head = lm_head_of(lm.model)
    if head is None:
        return lm.model(input_ids=input_ids, attention_mask=attention).logits[rows, cols]
    hidden = lm.model.base_model(input_ids=input_ids, attention_mask=attention)[0]
    return head(hidden[rows, cols].unsqueeze(0).to(lm.model.dtype))[0]


def _launch_gold_logprobs(lm: LanguageModel, input_ids: torch.Tensor, attention: torch.Tensor, rows: torch.Tensor,
                          cols: torch.Tensor, gold: torch.Tensor):
    """Queue, on the device, log P(gold[k] | input row rows[k]) read at position cols[k], for every k; returns what
    :func:`_finish_gold_logprobs` reads. Precise near P = 1 without float64 over the vocabulary: with z = logits − max,
    log P(g) = z_g − log1p(Σ_{i≠argmax} exp z_i). The sum leaves out the top term, so it keeps full relative precision
    in float32 even when it is ~1e-7 (a token predicted with P ≈ 1 − 1e-7), and only the per-row scalars go to float64.
    On CUDA the two per-row scalars are copied into pinned host memory without waiting (an event marks when they are
    there), so the CPU can prepare the next batch while the GPU computes this one."""
    with torch.inference_mode():
        z = position_logits(lm, input_ids, attention, rows, cols).float()
        gold = gold.to(z.device)
        top, arg = z.max(dim=-1, keepdim=True)
        z.sub_(top)  # in place: no vocabulary-sized temporaries
        z_gold = z.gather(1, gold.unsqueeze(1)).squeeze(1)
        rest = z.exp_().scatter_(1, arg, 0.0).sum(dim=-1)
        parts = torch.stack([z_gold, rest])
        if parts.device.type != "cuda":
            return parts, None
        host = torch.empty(parts.shape, dtype=parts.dtype, pin_memory=True)
        host.copy_(parts, non_blocking=True)
        ready = torch.cuda.Event()
        ready.record()
        return host, ready


def _finish_gold_logprobs(host: torch.Tensor, ready) -> np.ndarray:
    if ready is not None:
        ready.synchronize()
    return (host[0].double() - torch.log1p(host[1].double())).numpy()


def _batches(lengths: Sequence[int], plan: BatchPlan, max_waste: float = 0.08,
             min_tokens: int = 512) -> list[list[int]]:
    """Bucket items by length: sorted, packed under the token budget, and a new batch is started when padding
    would exceed ``max_waste`` of the batch (once the batch holds ``min_tokens``, so batches stay efficient)."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    batches, cur, cur_max, cur_sum = [], [], 0, 0
    for i in order:
        n = int(lengths[i])
        new_max = max(cur_max, n)
        padded = new_max * (len(cur) + 1)
        too_big = padded > plan.max_tokens or len(cur) >= plan.max_rows
        wasteful = cur_sum >= min_tokens and padded - (cur_sum + n) > max_waste * padded
        if cur and (too_big or wasteful):
            batches.append(cur)
            cur, new_max, cur_sum = [], n, 0
        cur.append(int(i))
        cur_max, cur_sum = new_max, cur_sum + n
    if cur:
        batches.append(cur)
    return batches


def to_device(array, device) -> torch.Tensor:
    """A host array on ``device``; to CUDA through pinned memory without waiting for the copy."""
    t = torch.from_numpy(np.ascontiguousarray(array, dtype=np.int64))
    device = torch.device(device)
    if device.type == "cuda":
        return t.pin_memory().to(device, non_blocking=True)
    return t.to(device)


def pad_batch(seqs: list[list[int]], pad_id: int, device) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad id sequences into (input_ids, attention_mask) tensors on ``device``."""
    width = max(len(s) for s in seqs)
    ids = np.full((len(seqs), width), pad_id, dtype=np.int64)
    att = np.zeros((len(seqs), width), dtype=np.int64)
    for r, s in enumerate(seqs):
        ids[r, :len(s)] = s
        att[r, :len(s)] = 1
    return to_device(ids, device), to_device(att, device)


def _run_batches(lm: LanguageModel, n_items: int, lengths: Sequence[int], make_batch, plan: BatchPlan,
                 progress: ProgressFn | None, weights: Sequence[int]) -> list[np.ndarray]:
    """Run ``make_batch(indices) -> (ids, att, rows, cols, gold, splits)`` over batches with OOM back-off. One batch in
    flight: batch k+1 is prepared on the CPU (and copied without waiting) while the device computes batch k; batch k's
    results are read afterwards."""
    results: list[np.ndarray | None] = [None] * n_items
    total = int(sum(weights))
    if plan.max_tokens >= 65536:  # a big GPU budget: batches stay large with much less padding
        queue = _batches(lengths, plan, max_waste=0.02, min_tokens=plan.max_tokens // 16)
    else:
        queue = _batches(lengths, plan)
    pending = None
    done = 0

    def collect(item) -> None:
        nonlocal done
        idx, splits, launched = item
        lp = _finish_gold_logprobs(*launched)
        for i, (a, b) in zip(idx, splits):
            results[i] = lp[a:b]
        done += sum(weights[i] for i in idx)
        if progress:
            progress(done, total)

    while queue:
        idx = queue.pop(0)
        try:
            ids, att, rows, cols, gold, splits = make_batch(idx)
            launched = _launch_gold_logprobs(lm, ids, att, rows, cols, gold)
        except Exception as exc:  # noqa: BLE001 - only OOM is handled, the rest re-raised
            if not _is_oom(exc) or len(idx) == 1:
                raise
            if lm.device.type == "cuda":
                torch.cuda.empty_cache()
            plan.max_tokens = max(1, plan.max_tokens // 2)
            log.warning("out of memory on a batch of %d; retrying in halves (token budget now %d)", len(idx),
                        plan.max_tokens)
            half = len(idx) // 2
            queue[:0] = [idx[:half], idx[half:]]
            continue
        if pending is not None:
            collect(pending)
        pending = (idx, splits, launched)
    if pending is not None:
        collect(pending)
    return results  # type: ignore[return-value]


def masked_gold_logprobs(lm: LanguageModel, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                         plan: BatchPlan | None = None, progress: ProgressFn | None = None) -> list[np.ndarray]:
    """For each sequence s and each p in its positions: log P(s[p] | s with s[p] masked). Every (sequence, position) is
    its own masked variant — one forward row each, as the method requires — but rows of similar length share a batch and
    the head runs only at the masked position."""
    mask_id = lm.tokenizer.mask_token_id
    if mask_id is None:
        raise ValueError(f"{lm.name} has no mask token; masked scoring needs a masked LM")
    variants = [(si, p) for si, ps in enumerate(positions) for p in ps]
    lengths = [len(sequences[si]) for si, _ in variants]
    pad_id = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0

    def make_batch(idx):
        chosen = [variants[k] for k in idx]
        seqs = [[*sequences[si][:p], mask_id, *sequences[si][p + 1:]] for si, p in chosen]
        cols = [p for _, p in chosen]
        gold = [sequences[si][p] for si, p in chosen]
        ids, att = pad_batch(seqs, pad_id, lm.device)
        dev = lm.device
        return (ids, att, torch.arange(len(idx), device=dev), to_device(cols, dev), to_device(gold, dev),
                [(r, r + 1) for r in range(len(idx))])

    flat = _run_batches(lm, len(variants), lengths, make_batch, plan or BatchPlan.for_model(lm), progress,
                        weights=[1] * len(variants))
    values = iter(flat)  # in the order of ``variants``
    return [np.array([next(values)[0] for _ in ps], dtype=np.float64) for ps in positions]


def causal_gold_logprobs(lm: LanguageModel, sequences: Sequence[Sequence[int]], positions: Sequence[Sequence[int]],
                         plan: BatchPlan | None = None, progress: ProgressFn | None = None,
                         start: int | None = None) -> list[np.ndarray]:
    """For each content sequence s and p in positions: log P(s[p] | start, s[:p]) — one forward per sequence.
    ``start``: the prefix token id (default: the published convention's, :meth:`LanguageModel.start_token_id`; see
    :mod:`biascore.models.prefix`).

    A served model (:class:`biascore.models.served.ServedModel`) answers the same question from its server's prompt
    log-probabilities."""
    served = getattr(lm, "causal_gold_logprobs", None)
    if served is not None:
        return served(sequences, positions, progress, start=start)
    start = lm.start_token_id() if start is None else int(start)
    pad_id = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else start
    lengths = [len(s) + 1 for s in sequences]

    def make_batch(idx):
        seqs = [[start] + list(sequences[i]) for i in idx]
        rows, cols, gold, splits, n = [], [], [], [], 0
        for r, i in enumerate(idx):
            ps = list(positions[i])
            rows += [r] * len(ps)
            cols += ps  # logits at input position p (= after start + s[:p]) predict s[p]
            gold += [sequences[i][p] for p in ps]
            splits.append((n, n + len(ps)))
            n += len(ps)
        ids, att = pad_batch(seqs, pad_id, lm.device)
        dev = lm.device
        return ids, att, to_device(rows, dev), to_device(cols, dev), to_device(gold, dev), splits

    keep = [i for i, ps in enumerate(positions) if len(ps)]
    res = _run_batches(lm, len(keep), [lengths[i] for i in keep], lambda idx: make_batch([keep[j] for j in idx]),
                       plan or BatchPlan.for_model(lm), progress, weights=[len(positions[i]) for i in keep])
    out = [np.zeros(0, dtype=np.float64) for _ in sequences]
    for j, i in enumerate(keep):
        out[i] = np.asarray(res[j], dtype=np.float64)
    return out
