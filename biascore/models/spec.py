"""The one model description: what the user named and how it runs, parsed and checked once at a shell's edge.

The CLI's model flags (:func:`biascore.models.args.spec_from_args`), the Python API's keywords
(:func:`biascore.load_model`), a sweep spec's model entry and ``biascore compare`` each make one
:class:`ModelSpec` with :meth:`ModelSpec.parse` — a bad device map or memory budget, an unknown or unavailable
quantization, a malformed served name is refused there, in one line, before anything loads — and the
:class:`~biascore.models.handle.ModelHandle` holds it: no later layer re-parses a string or re-checks an option
(as vLLM's ``EngineArgs`` become one frozen ``ModelConfig``).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from biascore import settings
from biascore.errors import ModelLoadError
from biascore.models.loading import ALIASES, ModelKind
from biascore.models.placement import Placement
from biascore.models.quantize import check_quantize
from biascore.models.served import ServedName, is_served


@dataclass(frozen=True)
class ModelSpec:
    """A model by name and how it runs."""

    #: what loads: an embedded alias, a hub id, a local folder, a ``.gguf`` file or ``served:http://HOST:PORT/v1[#NAME]``
    name: str = settings.DEFAULT_MODEL
    #: how every shell names it (a served model: the operator's label); "" names it by its name
    label: str = ""
    #: the GGUF file inside ``name``'s folder
    gguf_file: str | None = None
    device: str = "auto"
    dtype: str = "auto"
    kind: ModelKind | Literal["auto"] = "auto"
    trust_remote_code: bool = False
    attn_implementation: str | None = None
    #: a split over devices (:mod:`biascore.models.placement`) and quantized weights (:mod:`biascore.models.quantize`)
    placement: Placement | None = None
    quantize: str | None = None
    #: a served model's request timeout (seconds) and retries (None: its description's, else the defaults)
    timeout: float | None = None
    retries: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "label", self.label or self.name)
        object.__setattr__(self, "quantize", self.quantize or None)

    @classmethod
    def parse(cls, target: str, *, label: str | None = None, gguf_file: str | None = None, device: str = "auto",
              dtype: str = "auto", trust_remote_code: bool = False, device_map: str | dict | None = None,
              max_memory: str | dict | None = None, offload_folder: str | None = None,
              quantize: str | None = None, timeout: float | None = None, retries: int | None = None) -> "ModelSpec":
        """``target`` with these options, checked before anything loads (a one-line ``ValueError`` /
        :class:`~biascore.errors.ModelLoadError`): a bad device map or memory budget, an unknown or unavailable
        ``quantize``, ``quantize`` with a split or a bf16/fp16 dtype, a malformed served name or option, a served
        model given a split or ``quantize``, or a model loaded in this process given ``timeout`` / ``retries`` (a
        served model's requests: seconds per request, tries after the first)."""
        spec = cls(target, label or "", gguf_file, device, dtype, trust_remote_code=trust_remote_code,
                   placement=Placement.make(device_map, max_memory, offload_folder), quantize=quantize,
                   timeout=timeout, retries=retries)
        if spec.served:
            ServedName.parse(target).with_options(timeout_s=timeout, retries=retries)
            spec.check_served()
        elif timeout is not None or retries is not None:
            raise ValueError(f"{target!r} is loaded in this process: --timeout and --retries apply to served models "
                             "(served:http://HOST:PORT/v1)")
        else:
            check_quantize(quantize, dtype, spec.placement)
        return spec

    @classmethod
    def configured(cls, name: str) -> "ModelSpec":
        """The model the dashboard names ``name``: a served entry of ``BIASCORE_MODELS`` (``LABEL=served:URL``,
        :func:`biascore.settings.served_models`) loads its ``served:URL`` and is labelled ``LABEL``; any other name
        loads itself."""
        return cls(settings.served_models().get(name, name), label=name)

    @property
    def run_name(self) -> str:
        """The model as announced runs compare it (:mod:`biascore.runs.announce`): an embedded alias by the model
        it names, a local path resolved; anything else as given."""
        name = ALIASES.get(self.name, self.name)
        path = Path(name).expanduser()
        return str(path.resolve()) if path.exists() else name

    @property
    def served(self) -> bool:
        """A model behind an OpenAI-compatible completions server (``served:URL``)."""
        return is_served(self.name)

    def check_served(self) -> None:
        """A split or quantized weights apply to models loaded in this process, never to a server's."""
        if self.served and (self.placement is not None or self.quantize):
            raise ModelLoadError(f"{self.name!r} is a served model: --device-map, --max-memory and --quantize "
                                 "apply to models loaded in this process, not to a server's")

    def variant(self, *, kind: ModelKind | Literal["auto"] | None = None,
                attn_implementation: str | None = None) -> "ModelSpec":
        """The same model loaded another way (as a plain encoder, with eager attention)."""
        return replace(self, kind=kind or self.kind,
                       attn_implementation=attn_implementation or self.attn_implementation)


def variant_label(model: str, quantize: str | None = None, dtype: str | None = None,
                  placement: Placement | None = None) -> str:
    """A model as a sweep's report and the dashboard name it: with the load options that make it a model of its own
    (``smollm2-135m (int8 weights)``, ``… (bf16)``, ``… (split auto)``)."""
    parts = [f"{quantize} weights"] if quantize else []
    parts += [dtype] if dtype else []
    if placement is not None:
        parts.append("split " + (placement.device_map if isinstance(placement.device_map, str) else "explicit map"))
    return model + (f" ({', '.join(parts)})" if parts else "")
