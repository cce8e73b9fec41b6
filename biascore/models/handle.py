"""One model handle: a model's description (:class:`~biascore.models.spec.ModelSpec`), its cache identity, and the
model loaded on first use.

Every shell passes models around as a :class:`ModelHandle`. The runner asks for :meth:`ModelHandle.identity` to
build a cache key and calls :meth:`ModelHandle.load` only on a miss, so a cached result needs no weights whenever
the identity can be read from the model's files. Thread-safe: the load happens once, under a lock.
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time
from typing import Literal

import torch

from biascore.models.loading import (LanguageModel, ModelIdentity, ModelKind, load_model, model_identity,
                                    needs_conversion)
from biascore.models.served import is_served, load_served
from biascore.models.served.last_seen import remember
from biascore.models.spec import ModelSpec
from biascore.settings import DEFAULT_MODEL, ReadOnlySnapshotError
from biascore.store.cache import ResultCache


def open_model(spec: "ModelSpec | str", **options) -> LanguageModel:
    """The model ``spec`` describes (or the model ``spec`` names, with ``options``), loaded: a served model
    connects to its completions server (:func:`biascore.models.served.load_served`; only ``timeout`` / ``retries``
    apply), anything else loads in this process (:func:`biascore.models.loading.load_model`)."""
    spec = spec if isinstance(spec, ModelSpec) else ModelSpec(spec, **options)
    if spec.served:
        spec.check_served()
        return load_served(spec.name, timeout_s=spec.timeout, retries=spec.retries)
    return load_model(spec.name, gguf_file=spec.gguf_file, kind=spec.kind, device=spec.device, dtype=spec.dtype,
                      trust_remote_code=spec.trust_remote_code, attn_implementation=spec.attn_implementation,
                      placement=spec.placement, quantize=spec.quantize)


#: seconds after which a served model that failed to connect is tried again (a server started later, or back
#: after a restart); a model loaded in this process that failed to load fails again at once
SERVED_RETRY_S = 15.0


class ModelHandle:
    """A model described by one :class:`~biascore.models.spec.ModelSpec` (or by a name and its fields); loaded
    lazily, once."""

    def __init__(self, spec: ModelSpec | str = DEFAULT_MODEL, **fields):
        #: what the user named and how it runs (frozen; parsed and checked at the shell's edge)
        self.spec = spec if isinstance(spec, ModelSpec) else ModelSpec(spec, **fields)
        self._lm: LanguageModel | None = None
        self._error: Exception | None = None
        self._error_at = 0.0
        self._identity: ModelIdentity | None = None
        self._identity_read = False
        self._lock = threading.Lock()
        self._refuse: str | None = None  # a stand-in: why it cannot load
        self.loads = 0
        self.loading_since: float | None = None  # when the load in progress began (time.time())

    @classmethod
    def of(cls, lm: LanguageModel) -> "ModelHandle":
        """A handle around a model that is already loaded."""
        handle = cls(ModelSpec(lm.name, kind=lm.kind))
        handle._lm = lm
        return handle

    @classmethod
    def standin(cls, name: str, identity: ModelIdentity, why: str) -> "ModelHandle":
        """A handle with a known identity that never loads (an offline snapshot's model): :meth:`load` raises
        :class:`~biascore.settings.ReadOnlySnapshotError` with ``why``."""
        handle = cls(ModelSpec(name))
        handle._identity, handle._identity_read, handle._refuse = identity, True, why
        return handle

    def variant(self, *, kind: ModelKind | Literal["auto"] | None = None,
                attn_implementation: str | None = None) -> "ModelHandle":
        """The same model loaded another way (as a plain encoder, with eager attention): a handle of its own."""
        if (kind in (None, self.spec.kind)) and (attn_implementation in (None, self.spec.attn_implementation)):
            return self
        if self._refuse is not None or self.served_label is not None:
            return self  # a stand-in, or a served model: no other way to load it (methods refuse it in one line)
        return ModelHandle(self.spec.variant(kind=kind, attn_implementation=attn_implementation))

    @property
    def name(self) -> str:
        """The model as the user named it (the description's ``name``)."""
        return self.spec.name

    @property
    def label(self) -> str:
        """How every shell names it (the description's ``label``)."""
        return self.spec.label

    @property
    def loaded(self) -> bool:
        return self._lm is not None

    @property
    def served_label(self) -> str | None:
        """How a served model is named where it is refused (a ``served:`` description by its label, which names no
        URL; a served model already connected by its name), else None: a model loaded in this process."""
        if self.spec.served:
            return self.label
        return self._lm.name if self._lm is not None and is_served(self._lm) else None

    @property
    def converts(self) -> bool:
        """True when the next :meth:`load` converts a GGUF file first (slow, once per machine)."""
        return self._lm is None and self._refuse is None and needs_conversion(self.name, self.spec.gguf_file)

    def load_line(self, label: str = "") -> str:
        """What loading this model does, naming it ``label`` (default :attr:`label`): the CLI's and the pages' words."""
        label = label or self.label
        if self.converts:
            return f"Converting {label} from its GGUF file (first use on this machine only, a few seconds)"
        return f"Loading {label}"

    def start_loading(self) -> None:
        """Start :meth:`load` in a thread of its own (unless loaded, loading or failed): a :meth:`load` meanwhile
        waits for that same load."""
        def load() -> None:
            with contextlib.suppress(Exception):  # kept in the handle: the next load() raises it
                self.load()

        if self._lm is None and self._refuse is None and self._error is None and self.loading_since is None:
            self.loading_since = time.time()
            threading.Thread(target=load, daemon=True, name=f"load {self.label}").start()

    @property
    def load_error(self) -> Exception | None:
        """Why the last load failed (None when it has not failed, or the model is loaded)."""
        return None if self._lm is not None else self._error

    def known_identity(self) -> ModelIdentity | None:
        """The cache identity without loading anything: the loaded model's, else read from the model's files
        (memoised), else None (a hub id that is not in the local HuggingFace cache). A call that waited for a load
        in progress (its lock) takes the loaded model's: no second read of the files (0.35 s of a first "Score now")."""
        if self._lm is None and not self._identity_read:
            with self._lock:
                if self._lm is None and not self._identity_read:
                    spec = self.spec
                    self._identity = model_identity(spec.name, gguf_file=spec.gguf_file, kind=spec.kind,
                                                    device=spec.device, dtype=spec.dtype, placement=spec.placement,
                                                    quantize=spec.quantize)
                    self._identity_read = True
        lm = self._lm
        return lm.identity() if lm is not None else self._identity

    def identity(self) -> ModelIdentity:
        """The cache identity: :meth:`known_identity`, or the loaded model's when only a load can tell."""
        return self.known_identity() or self.load().identity()

    def load(self) -> LanguageModel:
        """The loaded model (loaded on the first call, by one thread; a model that failed to load fails again at once,
        without a second attempt — a served model's server is asked again once :data:`SERVED_RETRY_S` have passed)."""
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
                self.loading_since = self.loading_since or time.time()
                try:
                    self._lm = open_model(self.spec)
                except Exception as exc:
                    self._error, self._error_at = exc, time.monotonic()
                    raise
                finally:
                    self.loading_since = None
                self.loads += 1
                if self.spec.served:
                    _remember_served(self.name, self._lm)
        return self._lm

    def release(self) -> None:
        """Drop the loaded model (and the GPU memory it held); the next :meth:`load` loads it again."""
        with self._lock:
            if self._lm is None:
                return
            self._lm = None
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def __repr__(self) -> str:
        state = "loaded" if self.loaded else "stand-in" if self._refuse else "not loaded"
        return f"ModelHandle({self.label!r}, {state})"


def _remember_served(name: str, lm: LanguageModel) -> None:
    """Record what the server said it serves (:mod:`biascore.models.served.last_seen`), in a writable cache."""
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
