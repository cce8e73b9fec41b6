"""One model handle: a model's name and load options, its cache identity, and the model loaded on first use.

Every shell passes models around as a :class:`ModelHandle` — the CLI, the Python API, sweeps, the dashboard
(one handle per model per server process, shared by every session) and snapshots (a stand-in that has an
identity but refuses to load). The runner asks for :meth:`ModelHandle.identity` to build a cache key, and
calls :meth:`ModelHandle.load` only on a cache miss, so a cached result is answered without loading weights
whenever the identity can be read from the model's files (local folders, GGUF files, embedded aliases, hub
models already in the local HuggingFace cache).

A handle is safe to share between threads: the load happens once, under a lock; the loaded model is never
mutated by the engine (see :mod:`biascore.models.lm_scoring` and :mod:`biascore.methods.heads.masks`).
"""
from __future__ import annotations

import gc
import threading
import time
from typing import Literal

from biascore.models.loading import (DEFAULT_MODEL, LanguageModel, ModelIdentity, ModelKind, ModelLoadError,
                                  load_model, model_identity, needs_conversion)
from biascore.models.placement import Placement
from biascore.models.served import is_served, load_served
from biascore.settings import ReadOnlySnapshotError


def _refuse_served(name: str, placement: Placement | None, quantize: str | None) -> None:
    if is_served(name) and (placement is not None or quantize):
        raise ModelLoadError(f"{name!r} is a served model: --device-map, --max-memory and --quantize apply to "
                             "models loaded in this process, not to a server's")


def reach_options(name: str, *, dtype: str = "auto", quantize: str | None = None,
                  device_map: str | dict | None = None, max_memory: str | dict | None = None,
                  offload_folder: str | None = None, timeout: float | None = None,
                  retries: int | None = None) -> dict:
    """The :class:`ModelHandle` keyword arguments for model ``name`` — ``placement`` and ``quantize`` (a model
    loaded in this process), ``timeout`` and ``retries`` (a served model's requests: seconds per request, tries
    after the first) — checked before anything loads (a one-line ``ValueError`` /
    :class:`~biascore.models.loading.ModelLoadError`): a bad device map or memory budget, an unknown or unavailable
    ``quantize``, ``quantize`` with a split or a bf16/fp16 dtype, a malformed served name or option, a served
    model given a split or ``quantize``, or another model given ``timeout`` / ``retries``."""
    from biascore.models.quantize import check_quantize
    from biascore.models.served.client import ServedName

    placement = Placement.make(device_map, max_memory, offload_folder)
    if is_served(name):
        ServedName.parse(name).with_options(timeout_s=timeout, retries=retries)
        _refuse_served(name, placement, quantize)
        return {"timeout": timeout, "retries": retries}
    if timeout is not None or retries is not None:
        raise ValueError(f"{name!r} is loaded in this process: --timeout and --retries apply to served models "
                         "(served:http://HOST:PORT/v1)")
    check_quantize(quantize, dtype, placement)
    return {"placement": placement, "quantize": quantize or None}


def open_model(name: str, **options) -> LanguageModel:
    """The model ``name`` names, loaded: a ``served:http://…`` name connects to its completions server
    (:func:`biascore.models.served.load_served`; only ``timeout`` / ``retries`` apply), anything else loads in this
    process (:func:`biascore.models.loading.load_model` with ``options``)."""
    timeout, retries = options.pop("timeout", None), options.pop("retries", None)
    if is_served(name):
        _refuse_served(name, options.get("placement"), options.get("quantize"))
        return load_served(name, timeout_s=timeout, retries=retries)
    return load_model(name, **options)


#: seconds after which a served model that failed to connect is tried again (a server started later, or back
#: after a restart); a model loaded in this process that failed to load fails again at once
SERVED_RETRY_S = 15.0


class ModelHandle:
    """A model by name (alias, hub id, folder, GGUF file or ``served:URL``) with its load options; loaded lazily,
    once."""

    def __init__(self, name: str = DEFAULT_MODEL, *, gguf_file: str | None = None, device: str = "auto",
                 dtype: str = "auto", kind: ModelKind | Literal["auto"] = "auto", trust_remote_code: bool = False,
                 attn_implementation: str | None = None, label: str | None = None,
                 placement: Placement | None = None, quantize: str | None = None, timeout: float | None = None,
                 retries: int | None = None):
        self.name, self.gguf_file, self.device, self.dtype = name, gguf_file, device, dtype
        #: a served model's request timeout (seconds) and retries (None: its description's, else the defaults)
        self.timeout, self.retries = timeout, retries
        #: a split over devices (:mod:`biascore.models.placement`) and quantized weights (:mod:`biascore.models.quantize`)
        self.placement, self.quantize = placement, quantize or None
        self.kind, self.trust_remote_code, self.attn_implementation = kind, trust_remote_code, attn_implementation
        self.label = label or name
        self._lm: LanguageModel | None = None
        self._error: Exception | None = None
        self._error_at = 0.0
        self._identity: ModelIdentity | None = None
        self._identity_read = False
        self._lock = threading.Lock()
        self._refuse: str | None = None  # a stand-in: why it cannot load
        self.loads = 0

    # ------------------------------------------------------------------ other ways to make one
    @classmethod
    def of(cls, lm: LanguageModel) -> "ModelHandle":
        """A handle around a model that is already loaded."""
        handle = cls(lm.name, kind=lm.kind, label=lm.name)
        handle._lm = lm
        return handle

    @classmethod
    def standin(cls, name: str, identity: ModelIdentity, why: str) -> "ModelHandle":
        """A handle with a known identity that never loads (an offline snapshot's model): :meth:`load` raises
        :class:`~biascore.settings.ReadOnlySnapshotError` with ``why``."""
        handle = cls(name, label=name)
        handle._identity, handle._identity_read, handle._refuse = identity, True, why
        return handle

    def variant(self, *, kind: ModelKind | Literal["auto"] | None = None,
                attn_implementation: str | None = None) -> "ModelHandle":
        """The same model loaded another way (as a plain encoder, with eager attention): a handle of its own."""
        if (kind in (None, self.kind)) and (attn_implementation in (None, self.attn_implementation)):
            return self
        if self._refuse is not None or (self._lm is not None and self._lm.extra.get("dtype") == "served"):
            return self  # a stand-in, or a served model: no other way to load it (methods refuse it in one line)
        return ModelHandle(self.name, gguf_file=self.gguf_file, device=self.device, dtype=self.dtype,
                           kind=kind or self.kind, trust_remote_code=self.trust_remote_code,
                           attn_implementation=attn_implementation or self.attn_implementation, label=self.label,
                           placement=self.placement, quantize=self.quantize, timeout=self.timeout,
                           retries=self.retries)

    # ------------------------------------------------------------------ identity and load
    @property
    def loaded(self) -> bool:
        return self._lm is not None

    @property
    def load_error(self) -> Exception | None:
        """Why the last load failed (None when it has not failed, or the model is loaded)."""
        return None if self._lm is not None else self._error

    @property
    def converts(self) -> bool:
        """True when the next :meth:`load` converts a GGUF file first (slow, once per machine)."""
        return self._lm is None and self._refuse is None and needs_conversion(self.name, self.gguf_file)

    def known_identity(self) -> ModelIdentity | None:
        """The cache identity without loading anything: the loaded model's, else read from the model's files
        (memoised), else None (a hub id that is not in the local HuggingFace cache)."""
        if self._lm is not None:
            return self._lm.identity()
        if not self._identity_read:
            with self._lock:
                if not self._identity_read:
                    self._identity = model_identity(self.name, gguf_file=self.gguf_file, kind=self.kind,
                                                    device=self.device, dtype=self.dtype,
                                                    placement=self.placement, quantize=self.quantize)
                    self._identity_read = True
        return self._identity

    def identity(self) -> ModelIdentity:
        """The cache identity: :meth:`known_identity`, or the loaded model's when only a load can tell."""
        return self.known_identity() or self.load().identity()

    def load(self) -> LanguageModel:
        """The loaded model (loaded on the first call, by one thread; a model that failed to load fails again
        at once, without a second attempt — a served model's server is asked again once :data:`SERVED_RETRY_S`
        have passed)."""
        if self._lm is not None:
            return self._lm
        if self._refuse is not None:
            raise ReadOnlySnapshotError(self._refuse)
        with self._lock:
            if self._lm is None:
                if self._error is not None and is_served(self.name) \
                        and time.monotonic() - self._error_at >= SERVED_RETRY_S:
                    self._error = None
                if self._error is not None:
                    raise self._error
                try:
                    self._lm = open_model(self.name, gguf_file=self.gguf_file, kind=self.kind, device=self.device,
                                          dtype=self.dtype, trust_remote_code=self.trust_remote_code,
                                          attn_implementation=self.attn_implementation,
                                          placement=self.placement, quantize=self.quantize,
                                          timeout=self.timeout, retries=self.retries)
                except Exception as exc:
                    self._error, self._error_at = exc, time.monotonic()
                    raise
                self.loads += 1
                if is_served(self.name):
                    _remember_served(self.name, self._lm)
        return self._lm

    def release(self) -> None:
        """Drop the loaded model (and the GPU memory it held); the next :meth:`load` loads it again."""
        with self._lock:
            if self._lm is None:
                return
            self._lm = None
        gc.collect()
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "stand-in" if self._refuse else "not loaded"
        return f"ModelHandle({self.label!r}, {state})"


def _remember_served(name: str, lm: LanguageModel) -> None:
    """Record what the server said it serves (:mod:`biascore.models.served.last_seen`), in a writable cache."""
    from biascore.store.cache import ResultCache
    from biascore.models.served.last_seen import remember

    cache = ResultCache()
    if not cache.read_only:
        try:
            remember(cache.root, name, lm.name, lm.fingerprint)
        except OSError:  # a hint for reading while the server is down; never a reason to fail a load
            pass


def as_handle(model: "ModelHandle | LanguageModel | str", **load_options) -> ModelHandle:
    """A handle for whatever a caller passed: a handle, a loaded model, or a name (with load options)."""
    if isinstance(model, ModelHandle):
        return model
    if isinstance(model, LanguageModel):
        return ModelHandle.of(model)
    if isinstance(model, str):
        return ModelHandle(model, **load_options)
    raise TypeError(f"expected a model name, a LanguageModel or a ModelHandle, not {type(model).__name__}")
