"""Per-head mask variables m_ij for any transformers model, via forward pre-hooks read per call.

Attention-head bias paper (Yang et al., after Michel et al. 2019, eq. 2)::

    MultiHead_i(X) = Concat_j (m_ij · head_ij) W^O

transformers 5 has no ``head_mask``, so the mask scales the input of each attention block's output projection
(``attention.output.dense``, GPT-2's ``c_proj``, ``o_proj``, ``out_proj``/``out_lin``), where head j of layer i is
the feature slice ``[j·d, (j+1)·d)`` (per query head under grouped-query attention). The pre-hooks are installed
once per shared model and read the mask from a :class:`contextvars.ContextVar` that :class:`HeadMask` sets for
the current context only; without a mask a hook leaves the input untouched.
"""
from __future__ import annotations

import contextvars
import threading
import weakref
from dataclasses import dataclass

import torch

#: Attribute paths (relative to an attention block) of the output projection, tried in this order.
_PROJECTION_PATHS = ("o_proj", "c_proj", "out_proj", "out_lin", "output.dense", "dense")


class HeadMaskError(RuntimeError):
    """The model's attention blocks or their output projections could not be found."""


@dataclass(frozen=True)
class HeadLayout:
    """Where the heads are: one output projection per layer, and the head count and size."""

    projections: tuple[torch.nn.Module, ...]
    num_heads: int
    head_dim: int

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.projections), self.num_heads


def _config_heads(config) -> tuple[int, int]:
    """Number of query heads and head dimension from a transformers config."""
    cfg = getattr(config, "text_config", None) or config
    heads = getattr(cfg, "num_attention_heads", None) or getattr(cfg, "n_head", None)
    if not heads:
        raise HeadMaskError(f"config of type {type(config).__name__} names no num_attention_heads")
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // heads
    return int(heads), int(head_dim)


def _in_features(module: torch.nn.Module) -> int | None:
    if isinstance(module, torch.nn.Linear):
        return module.in_features
    weight = getattr(module, "weight", None)
    if type(module).__name__ == "Conv1D" and weight is not None:  # GPT-2: weight is (in, out)
        return int(weight.shape[0])
    return None


def _get(module: torch.nn.Module, path: str) -> torch.nn.Module | None:
    for part in path.split("."):
        module = getattr(module, part, None)
        if module is None:
            return None
    return module


def head_layout(model: torch.nn.Module) -> HeadLayout:
    """Find every self-attention block's output projection, in layer order. An attention block is a module whose class
    name contains ``Attention`` and that owns one of the known projection attributes with ``num_heads · head_dim`` input
    features. Cross-attention blocks of encoder–decoder models would be picked up too; the scorer is meant for encoders
    and decoders."""
    heads, head_dim = _config_heads(model.config)
    width = heads * head_dim
    found: list[tuple[str, torch.nn.Module]] = []
    claimed: set[int] = set()
    for name, module in model.named_modules():
        if "Attention" not in type(module).__name__:
            continue
        for path in _PROJECTION_PATHS:
            proj = _get(module, path)
            if proj is not None and _in_features(proj) == width and id(proj) not in claimed:
                found.append((f"{name}.{path}", proj))
                claimed.add(id(proj))
                break
    if not found:
        raise HeadMaskError(f"no attention output projection with {width} input features found in "
                            f"{type(model).__name__} (looked for {', '.join(_PROJECTION_PATHS)})")
    cfg = getattr(model.config, "text_config", None) or model.config
    layers = getattr(cfg, "num_hidden_layers", None) or getattr(cfg, "n_layer", None)
    if layers is not None and len(found) != layers:
        raise HeadMaskError(f"found {len(found)} attention blocks but the config has {layers} layers: "
                            + ", ".join(n for n, _ in found))
    return HeadLayout(tuple(p for _, p in found), heads, head_dim)


#: The masks active in the current context: id of the model's HeadLayout record → (layers, heads) mask.
_ACTIVE: contextvars.ContextVar[dict[int, torch.Tensor]] = contextvars.ContextVar("biascore_head_masks", default={})
_INSTALL_LOCK = threading.Lock()
_INSTALLED: "weakref.WeakKeyDictionary[torch.nn.Module, tuple[HeadLayout, int]]" = weakref.WeakKeyDictionary()
_next_token = iter(range(1, 1 << 62))


def _mask_hook(token: int, layer: int, heads: int, head_dim: int):
    def pre_hook(_module, args):
        mask = _ACTIVE.get().get(token)
        if mask is None:
            return None  # no mask in this context: the input passes unchanged
        x = args[0]
        # .to(x.device): a split model's layers compute on several devices (biascore.models.placement)
        scaled = x.unflatten(-1, (heads, head_dim)) * mask[layer].to(device=x.device, dtype=x.dtype).unsqueeze(-1)
        return (scaled.flatten(-2), *args[1:])
    return pre_hook


def installed_layout(model: torch.nn.Module) -> tuple[HeadLayout, int]:
    """The model's head layout and its hook token, installing the context-reading pre-hooks on first use.

    Idempotent and thread-safe: the hooks are added once per model, whoever asks first."""
    with _INSTALL_LOCK:
        found = _INSTALLED.get(model)
        if found is None:
            layout, token = head_layout(model), next(_next_token)
            for i, proj in enumerate(layout.projections):
                proj.register_forward_pre_hook(_mask_hook(token, i, layout.num_heads, layout.head_dim))
            found = _INSTALLED[model] = (layout, token)
        return found


class HeadMask:
    """Context manager that multiplies head j of layer i by ``mask[i, j]`` inside ``model``, for the calls made in the
    current thread (context) only. ``mask`` starts as ones (the unmodified model) in the model's dtype and device; set
    entries to 0 to remove heads, or make it require grad to differentiate with respect to it. The mask stops applying
    on exit, also after an exception; other threads using the same model never see it."""

    def __init__(self, model: torch.nn.Module, mask: torch.Tensor | None = None):
        self.model = model
        self.layout, self._token = installed_layout(model)
        if mask is None:
            mask = torch.ones(self.layout.shape, **mask_home(model))
        if tuple(mask.shape) != self.layout.shape:
            raise ValueError(f"mask shape {tuple(mask.shape)} != model heads {self.layout.shape}")
        self.mask = mask
        self._reset: contextvars.Token | None = None

    def __enter__(self) -> "HeadMask":
        self._reset = _ACTIVE.set({**_ACTIVE.get(), self._token: self.mask})
        return self

    def __exit__(self, *exc) -> None:
        if self._reset is not None:
            _ACTIVE.reset(self._reset)
            self._reset = None


def mask_home(model: torch.nn.Module) -> dict:
    """``dtype`` and ``device`` for a head mask: the model's floating-point dtype (not a quantized weight's int8)
    on the device of its first parameter that holds data (a split model's disk-offloaded ones sit on ``meta``)."""
    params = [p for p in model.parameters() if p.is_floating_point()]
    device = next((p.device for p in params if p.device.type != "meta"), torch.device("cpu"))
    return {"dtype": params[0].dtype if params else torch.float32, "device": device}


def mask_from_heads(shape: tuple[int, int], heads: list[tuple[int, int]], *, dtype=torch.float32,
                    device=None) -> torch.Tensor:
    """A ones mask with the given 0-based ``(layer, head)`` entries set to 0."""
    mask = torch.ones(shape, dtype=dtype, device=device)
    for layer, head in heads:
        mask[layer, head] = 0
    return mask
