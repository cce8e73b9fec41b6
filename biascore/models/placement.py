"""Split models: a model's layers over several devices (GPUs, CPU, disk) through accelerate's dispatch.

``device_map="auto"`` with ``max_memory`` (CLI ``--device-map``, ``--max-memory``; docs/api.md) hands the placement
to transformers' ``from_pretrained``: accelerate fills GPUs, then the CPU, then disk, and its hooks move each
module's inputs, so every in-process method runs unchanged (gradients included) and a float32 split matches the
one-device run within the reproducibility contract (tests/models/test_placement.py). The placement is recorded in
``info["placement"]`` (:func:`describe`), not keyed (the key's ``device`` is :meth:`Placement.compute_device_type`);
the offload folder is fresh per load under ``<cache>/offload/`` unless ``offload_folder`` names one.
"""
from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import torch

from biascore import settings

#: The named strategies of accelerate's ``infer_auto_device_map`` that transformers accepts as ``device_map``.
STRATEGIES = ("auto", "balanced", "balanced_low_0", "sequential")


class PlacementError(ValueError):
    """A device map or memory budget that cannot be used (the message is one line)."""


def _device_key(name: str | int) -> str | int:
    """``0`` / ``"0"`` / ``"cuda:0"`` → 0 (a GPU index), ``cpu`` / ``disk`` / ``mps`` as they are."""
    if isinstance(name, int):
        return name
    text = str(name).strip()
    if text.isdigit():
        return int(text)
    if text.startswith("cuda:") and text[5:].isdigit():
        return int(text[5:])
    if text in ("cpu", "disk", "mps"):
        return text
    raise PlacementError(f"unknown device {text!r} in a memory budget or device map (use cpu, disk, mps, "
                         "a GPU index such as 0, or cuda:0)")


def parse_max_memory(spec: str | dict | None) -> dict | None:
    """``"cpu=300MiB,0=10GiB"`` (or a dict) → ``{"cpu": "300MiB", 0: "10GiB"}``, every size checked."""
    if spec is None or spec == "" or spec == {}:
        return None
    if isinstance(spec, str):
        items = {}
        for part in spec.replace(";", ",").split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise PlacementError(f"--max-memory expects DEVICE=SIZE pairs such as cpu=300MiB, got {part!r}")
            dev, size = part.split("=", 1)
            items[dev.strip()] = size.strip()
        spec = items
    from accelerate.utils import convert_file_size_to_int
    out: dict = {}
    for dev, size in spec.items():
        try:
            convert_file_size_to_int(size)
        except (ValueError, TypeError):
            raise PlacementError(f"--max-memory: {size!r} is not a size (e.g. 300MiB, 2GB, 10GiB)") from None
        out[_device_key(dev)] = size
    return out


def parse_device_map(spec: str | dict | None) -> str | dict | None:
    """``auto`` / ``balanced`` / ``balanced_low_0`` / ``sequential``, a dict {module: device}, a JSON object or the
    path of a JSON file holding one; None for a model on one device."""
    if spec is None or spec == "":
        return None
    if isinstance(spec, dict):
        return {str(k): _device_key(v) for k, v in spec.items()}
    text = str(spec).strip()
    if text in STRATEGIES:
        return text
    if text.startswith("{"):
        raw = text
    elif Path(text).expanduser().is_file():
        raw = Path(text).expanduser().read_text()
    else:
        raise PlacementError(f"--device-map must be one of {', '.join(STRATEGIES)}, a JSON object or a JSON file; "
                             f"got {text!r}")
    try:
        mapping = json.loads(raw)
    except ValueError as exc:
        raise PlacementError(f"--device-map: not valid JSON ({exc})") from None
    if not isinstance(mapping, dict) or not mapping:
        raise PlacementError("--device-map: the JSON must be a non-empty object {module name: device}")
    return parse_device_map(mapping)


@dataclass(frozen=True)
class Placement:
    """How a split model's modules are placed: a device map, per-device memory budgets, an offload folder."""

    device_map: str | tuple  # a strategy name, or the (module, device) pairs of an explicit map
    max_memory: tuple = ()  # (device, size) pairs
    offload_folder: str | None = None

    @classmethod
    def make(cls, device_map: str | dict | None = None, max_memory: str | dict | None = None,
             offload_folder: str | None = None) -> "Placement | None":
        """A placement from the user's options (checked; one-line :class:`PlacementError`), or None when none
        was asked for. A memory budget or offload folder alone implies ``device_map="auto"``."""
        dmap, mem = parse_device_map(device_map), parse_max_memory(max_memory)
        if dmap is None and mem is None and not offload_folder:
            return None
        dmap = dmap if dmap is not None else "auto"
        frozen = dmap if isinstance(dmap, str) else tuple(sorted(dmap.items(), key=lambda kv: kv[0]))
        return cls(frozen, tuple(sorted((mem or {}).items(), key=lambda kv: str(kv[0]))),
                   str(Path(offload_folder).expanduser().resolve()) if offload_folder else None)

    def compute_device_type(self) -> str:
        """The type of the devices that compute: ``cuda`` when the map uses a GPU (CPU- and disk-offloaded layers
        are moved to it to compute), else ``mps`` or ``cpu`` — what the cache key's ``device`` says."""
        if isinstance(self.device_map, str):
            return auto_device_type()
        return devices_compute_type(dict(self.device_map).values())

    def load_kwargs(self, cache_id: str) -> dict:
        """The ``from_pretrained`` arguments: ``device_map``, ``max_memory`` and ``offload_folder`` (a fresh folder
        under ``<cache>/offload/`` unless one was given)."""
        kwargs: dict = {"device_map": self.device_map if isinstance(self.device_map, str) else dict(self.device_map)}
        if self.max_memory:
            kwargs["max_memory"] = dict(self.max_memory)
        kwargs["offload_folder"] = self.offload_folder or fresh_offload_folder(cache_id)
        return kwargs


def auto_device_type() -> str:
    """What ``--device auto`` picks: ``cuda``, then ``mps``, then ``cpu``."""
    if torch.cuda.is_available():
        return "cuda"
    return "mps" if torch.backends.mps.is_available() else "cpu"


def devices_compute_type(devices) -> str:
    """``cuda`` if any device is a GPU index or ``cuda…``; ``mps`` if any is ``mps``; else ``cpu``."""
    devices = [d for d in devices]
    if any(isinstance(d, int) or str(d).startswith("cuda") for d in devices):
        return "cuda"
    if any(str(d) == "mps" for d in devices):
        return "mps"
    return "cpu"


def device_map_of(model: torch.nn.Module) -> dict:
    """The module → device map accelerate applied; a model that fitted on one device has none (transformers sets
    ``hf_device_map`` only for a real split), so it is read from the model's first parameter."""
    found = getattr(model, "hf_device_map", None)
    if found:
        return dict(found)
    device = next(model.parameters()).device
    return {"": device.index if device.type == "cuda" else device.type}


def main_device(model: torch.nn.Module) -> torch.device:
    """Where a split model's inputs go: its first GPU (the device the CPU/disk-offloaded layers compute on), else
    the CPU. The hooks move every module's inputs to its own device, so this only saves a copy."""
    devices = list(device_map_of(model).values())
    for d in devices:
        if isinstance(d, int) or str(d).startswith("cuda"):
            return torch.device(f"cuda:{d}" if isinstance(d, int) else str(d))
    if any(str(d) == "mps" for d in devices):
        return torch.device("mps")
    return torch.device("cpu")


def fresh_offload_folder(cache_id: str) -> str:
    """A new folder ``<cache>/offload/<cache_id>-XXXX`` for one load's disk-offloaded weights."""
    root = settings.writable_cache_dir() / "offload"
    root.mkdir(parents=True, exist_ok=True)
    return tempfile.mkdtemp(prefix=f"{cache_id}-", dir=root)


def describe(model: torch.nn.Module, placement: Placement, offload_folder: str) -> dict:
    """What a result records about a split model: modules per device, the device map asked for, the memory
    budgets and the offload folder (when anything went to disk)."""
    hf_map = device_map_of(model)
    counts = dict(Counter(str(d) for d in hf_map.values()))
    out = {"modules_per_device": counts,
           "device_map": placement.device_map if isinstance(placement.device_map, str) else "explicit",
           "max_memory": {str(k): v for k, v in placement.max_memory}}
    if "disk" in counts:
        out["offload_folder"] = offload_folder
    return out
