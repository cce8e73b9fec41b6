"""Quantized weights: ``--quantize int8`` / ``int4`` (``load_model(..., quantize="int8")``), through transformers'
quantizer integrations — approximate numbers, labelled ``approximate (int8 weights)`` everywhere.

Linear weights are rounded on load, activations stay float32 (:func:`keep_float32_compute`): ``int8`` is
optimum-quanto's int8 weights, ``int4`` bitsandbytes' NF4, picked by measurement (docs/performance.md;
``bench/quantization_agreement.py``). A quantized model is never split and takes no ``--dtype`` but ``auto``/``fp32``;
its cache key carries ``weights=int8`` and ``approximate=True`` (:func:`biascore.store.keys.model_parts`).
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import torch

from biascore.errors import ModelLoadError


@dataclass(frozen=True)
class Scheme:
    """One ``--quantize`` option: the library that serves it."""

    library: str  # the PyPI package
    module: str  # its import name
    #: what the cache key says of how the scheme computes, when that changed since its first release ("": none)
    key: str = ""


SCHEMES: dict[str, Scheme] = {
    "int8": Scheme("optimum-quanto", "optimum.quanto"),
    "int4": Scheme("bitsandbytes", "bitsandbytes", key="nf4 dequantized to float32 (no CPU bf16 repack)"),
}
QUANTIZE_CHOICES = tuple(SCHEMES)


def check_quantize(quantize: str | None, dtype: str = "auto", placement=None) -> None:
    """Refuse, in one line (``ValueError``) and before anything is loaded, an unknown option, a reduced-precision
    dtype with quantized weights, a quantized split model, or a library that is not installed."""
    if not quantize:
        return
    if quantize not in SCHEMES:
        raise ValueError(f"--quantize must be one of {', '.join(QUANTIZE_CHOICES)}, not {quantize!r}")
    if dtype not in ("auto", "fp32", "float32"):
        raise ValueError(f"--quantize {quantize} computes in float32: drop --dtype {dtype}")
    if placement is not None:
        raise ValueError(f"--quantize {quantize} cannot be combined with --device-map / --max-memory / "
                         "--offload-folder: a quantized model is loaded on one device")
    scheme = SCHEMES[quantize]
    try:
        missing = importlib.util.find_spec(scheme.module) is None
    except ModuleNotFoundError:  # the parent package (optimum) is absent
        missing = True
    if missing:
        raise ValueError(f"--quantize {quantize} needs the package {scheme.library} (pip install -r "
                         "requirements.txt)")


def load_kwargs(quantize: str, device: torch.device) -> dict:
    """``from_pretrained`` arguments that load the model quantized (the option's transformers
    ``quantization_config``, see the module docstring for the choice), on ``device``."""
    if quantize == "int8":
        from transformers import QuantoConfig

        config = QuantoConfig(weights="int8")
    else:
        from transformers import BitsAndBytesConfig

        config = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.float32)
    where = device.index if device.type == "cuda" and device.index is not None else device.type
    return {"quantization_config": config, "device_map": {"": where}}


def keep_float32_compute(model: torch.nn.Module) -> None:
    """Make every bitsandbytes 4-bit layer of ``model`` compute in float32 on every path.

    bitsandbytes 0.50.2 on an AVX512-BF16 CPU repacks NF4 weights into a bfloat16 kernel at the first no-grad
    forward (docs/performance.md, "What int4 computes in on a CPU"): the repack is switched off
    (``support_avx512bf16_for_cpu``) and a repacked layer unpacked with bitsandbytes' own inverse."""
    for module in model.modules():
        if type(module).__module__.startswith("bitsandbytes") and hasattr(module, "weight") \
                and hasattr(module.weight, "quant_state"):
            module.support_avx512bf16_for_cpu = False
            state = getattr(module.weight, "quant_state", None)
            if state is not None and getattr(state, "packing_format_for_cpu", False):
                from bitsandbytes.functional import _convert_weight_packed_for_cpu_inverse

                module.weight.data, module.weight.quant_state = _convert_weight_packed_for_cpu_inverse(
                    module.weight.data, state)


def check_quantized(model: torch.nn.Module, quantize: str, name: str) -> None:
    """Refuse a model the library left unquantized (none of its modules is of the library's own classes; e.g.
    GPT-2's Conv1D projections are not ``nn.Linear``, which optimum-quanto quantizes): its numbers would be the
    float32 ones under an "approximate" label (:class:`~biascore.errors.ModelLoadError`)."""
    if not any(type(m).__module__.startswith(("optimum.quanto", "bitsandbytes")) for m in model.modules()):
        raise ModelLoadError(f"--quantize {quantize}: {SCHEMES[quantize].library} quantized no layer of "
                             f"{name!r} ({type(model).__name__} has no layers it supports); run it without --quantize")
