"""Numerical precision of model forward passes: exact (float32, no TF32) by default on every device.

The bias-attribution distance d = JSD^¼ is very sensitive near P(u) = 1, where bf16 logits carry two or three
significant digits: on the tiny test MLM, CUDA bf16 flips 12 of 230 verdicts against the published code and
TF32 matmuls flip 1; CUDA float32 (TF32 off) stays within 5.4e-7 of it (issue 11). So:

* ``auto`` resolves to float32 on CPU, CUDA and MPS alike;
* on CUDA, TF32 is switched off for matmuls and cuDNN and the float32 matmul precision is "highest"
  (:func:`exact_matmuls`; process-wide settings, set to the exact values only — never toggled per call);
* ``bf16`` / ``fp16`` stay available as an explicit fast mode whose numbers are *approximate*:
  :func:`is_approximate` says so, the CLI prints it, the cache entry records it and the dashboard shows it;
* quantized weights (``--quantize int8`` / ``int4``, :mod:`biascore.models.quantize`) are approximate too: the
  forward pass computes in float32 from rounded weights, so :func:`precision_label` says
  ``approximate (int8 weights)`` wherever a dtype alone would say ``exact (float32)``.

A model's identity, a stored result, a row of the cached runs: each says how its numbers were computed with the
one :class:`Precision` (:func:`precision_of`): its label and kind, and the one warning line beside numbers that are
not exact (:attr:`Precision.note`), with its measured agreement with float32 where it has one (:func:`agreement`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from biascore.models.names import SERVED_DTYPE  # the dtype a served model's results carry

DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32, "float32": torch.float32, "bf16": torch.bfloat16, "bfloat16": torch.bfloat16,
    "fp16": torch.float16, "float16": torch.float16,
    # reference numerics (slow; CPU): cross-checks against other tools without float32 noise (tests/, docs/scores.md)
    "fp64": torch.float64, "float64": torch.float64,
}


def resolve_dtype(dtype: str) -> torch.dtype:
    """``auto`` → float32 on every device (exact); ``fp32`` / ``bf16`` / ``fp16`` as asked."""
    if dtype == "auto":
        return torch.float32
    if dtype not in DTYPES:
        raise ValueError(f"unknown dtype {dtype!r}; choose one of auto, {', '.join(sorted(DTYPES))}")
    return DTYPES[dtype]


def dtype_name(dtype: torch.dtype | str) -> str:
    """``torch.float32`` → ``"float32"`` (the spelling stored in cache keys)."""
    return str(dtype).replace("torch.", "")


SERVED_LABEL = "served (precision as the server computes)"


def is_approximate(dtype: torch.dtype | str, weights: str = "") -> bool:
    """True for reduced-precision (bf16 / fp16) forward passes and for quantized weights (``weights`` = ``int8`` /
    ``int4``): their verdicts are not guaranteed. (A served model's results are neither: they are labelled
    :data:`SERVED_LABEL`, see :func:`precision_label`.)"""
    return bool(weights) or dtype_name(dtype) not in ("float32", "float64", "", SERVED_DTYPE)


def precision_label(dtype: torch.dtype | str, weights: str = "") -> str:
    """What every result, CLI line and page says about its numerics: ``exact (float32)``, ``approximate
    (bfloat16)``, ``approximate (int8 weights)`` or ``served (precision as the server computes)``."""
    if weights:
        return f"approximate ({weights} weights)"
    name = dtype_name(dtype) or "float32"
    if name == SERVED_DTYPE:
        return SERVED_LABEL
    return f"approximate ({name})" if is_approximate(name) else f"exact ({name})"


def cuda_attention_without_cudnn() -> None:
    """Leave PyTorch's cuDNN attention kernel out of ``scaled_dot_product_attention`` (flash / memory-efficient
    kernels remain). It builds an execution plan on the CPU for every new batch shape (1.8 ms per call measured
    for the Qwen2-7B shape on an H100), and length-bucketed batches are almost all new shapes: without it the
    7B-shaped bf16 forward passes over WinoQueer took 14.3 s instead of 15.7 s (bench/results/gpu_bench.md).
    It only serves fp16/bf16, so exact float32 results do not change. Process-wide, set once at model load.
    """
    torch.backends.cuda.enable_cudnn_sdp(False)


def exact_matmuls() -> None:
    """Switch TF32 off for CUDA matmuls and cuDNN convolutions and ask for "highest" float32 matmul precision
    (process-wide, module docstring). TF32 keeps 10 mantissa bits: on the tiny MLM it moves b(u) by up to 2.8e-4."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


PrecisionKind = Literal["exact", "approximate", "served"]


@dataclass(frozen=True)
class Precision:
    """How one result's numbers were computed (this module): ``label`` is what every shell
    writes beside them, ``kind`` whether they are ``exact`` (float32/float64 forward passes), ``approximate``
    (quantized weights, bf16/fp16) or ``served`` (prompt log-probabilities from a completions server)."""

    label: str
    kind: PrecisionKind
    far: bool = False  # measured below :data:`AGREES` against the float32 run of the same model

    @property
    def exact(self) -> bool:
        return self.kind == "exact"

    @property
    def note(self) -> str:
        """The one line shown beside numbers that are not exact ("" for exact ones)."""
        if self.far:
            return (f"it disagrees with the float32 run of the same model (agreeing needs cosine ≥ {AGREES[0]} and "
                    f"{AGREES[1]:.0%} of the top heads in common): do not read it as the model's; drop --quantize")
        if self.kind == "approximate":
            return ("a quantized or reduced-precision run: verdicts can differ from the exact float32 run of the same "
                    "model; do not mix it with exact results unlabelled")
        if self.kind == SERVED_DTYPE:
            return ("prompt log-probabilities from a completions server, computed in the server's own precision "
                    "(often bf16 on a GPU server): equal to an exact run only where the server computes in float32")
        return ""


#: agreement with float32: at least this cosine and this share of the top k in common (docs/performance.md)
AGREES = (0.9, 0.7)


def agreement(scores: Any, exact: Any, k: int = 10) -> dict:
    """A result's ``info["float32_agreement"]``: the cosine of its scores with the float32 run's, top k shared."""
    a, b, k = np.asarray(scores, dtype=np.float64), np.asarray(exact, dtype=np.float64), min(k, len(scores))
    common = len(set(np.argsort(-a, kind="stable")[:k]) & set(np.argsort(-b, kind="stable")[:k]))
    return {"cosine": float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b))), "common": common, "k": k}


def precision_of(source: Any) -> Precision:
    """The precision of a result from what it stored: a result's ``meta`` (or the result itself), a row of the
    cached-runs table, or a :class:`~biascore.models.loading.ModelIdentity` — anything with ``dtype`` and
    ``weights`` (``""`` for the model's own weights); a :class:`Precision` as it is."""
    if isinstance(source, Precision):
        return source
    meta = getattr(source, "meta", source)
    if hasattr(meta, "get"):  # a dict or a pandas row (whose attribute ``dtype`` is the row's own dtype)
        dtype, weights = meta.get("dtype", ""), meta.get("weights", "")
    else:
        dtype, weights = getattr(meta, "dtype", ""), getattr(meta, "weights", "")
    dtype = "" if dtype is None or dtype != dtype else str(dtype)  # None / NaN: a row without one
    weights = "" if weights is None or weights != weights else str(weights)
    kind: PrecisionKind = ("served" if dtype == SERVED_DTYPE and not weights
                           else "approximate" if is_approximate(dtype, weights) else "exact")
    info = meta.get("info") if hasattr(meta, "get") else None
    if not (isinstance(info, dict) and info.get("float32_agreement")):
        return Precision(precision_label(dtype or "float32", weights), kind)
    cos, common, k = (info["float32_agreement"][x] for x in ("cosine", "common", "k"))
    far = not (cos >= AGREES[0] and common >= AGREES[1] * k)
    return Precision(f"{'far from float32' if far else 'approximate'} ({weights} weights; against float32: cosine "
                     f"{cos:.3f}, {common}/{k} top heads in common)", kind, far)
