"""The Python API: what a researcher scripts from a notebook (docs/api.md has every call).

The dashboard's pages import this module and the runner's door (:mod:`biascore.runs.runner`), nothing deeper; the
imports below are what a shell draws with (each group's reason: docs/api.md, "The public surface"). Every call goes
through the one runner, so a result here is the one the CLI prints and the dashboard shows (same cache, same keys).
"""
from __future__ import annotations

import contextlib
import json
import warnings
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

# the contract a method and a page share: the method, its options, its presentation, the typed views
from biascore.contract.method import Method, NotApplicable  # noqa: F401
from biascore.contract.options import OptionError, Options, parse_text  # noqa: F401
from biascore.contract.presentation import Headline, Widget, option_widgets, widget_value  # noqa: F401
from biascore.contract.views import (Chart, Estimates, HeadGrid, Level, PairedComparison, PairTable,  # noqa: F401
                                     RankedUnits, Table, TokenSalience, TypedView)
from biascore.contract.result import RECORD_FORMAT, RECORD_KEY, Result, ResultFileError
from biascore.errors import one_line
# the inputs: benchmarks, SEAT tests, `biascore data download`
from biascore.inputs import datasets, download  # noqa: F401
from biascore.inputs.datasets import aligned_sets, available_benchmarks  # noqa: F401 - aligned_sets: the API's
from biascore.inputs.seat_tests import WORD_TEMPLATES, list_seat_tests, load_seat_test  # noqa: F401
from biascore.methods import discover, get, table
# models: a handle, how a model is named and shown, its precision, a served model
from biascore.models.handle import ModelHandle, as_handle
from biascore.models.loading import LanguageModel, list_embedded  # noqa: F401
from biascore.models.names import display_name, is_local_path, is_served, redact_paths  # noqa: F401
from biascore.models.precision import precision_of  # noqa: F401
from biascore.models.served import ServedName  # noqa: F401
from biascore.models.served.client import ServedUnavailable  # noqa: F401
from biascore.models.served.last_seen import recall as recall_served  # noqa: F401 - what a server last said it serves
from biascore.models.spec import ModelSpec, variant_label  # noqa: F401
from biascore.progress import Bar, ProgressFn
from biascore.runs import timing_log  # noqa: F401 - the load test's timing lines (off unless BIASCORE_TIMING_LOG)
from biascore.runs.runner import Stored, UnreadableResult, live_result, open_stored, run as run_method
from biascore.store.cache import CorruptCacheFile, ResultCache
from biascore.version import ENGINE_VERSION


def methods() -> pd.DataFrame:
    """The registered methods: name, CLI command, input, model kinds, paper, one-line summary."""
    return table()


def method(name: str) -> Method:
    """The registered method called ``name`` (registry name or CLI command)."""
    return get(name)


def benchmarks(data_dir: str | Path | None = None) -> pd.DataFrame:
    """The registered pair benchmarks: name, whether present in the data directory, language, description, licence,
    citation."""
    rows = available_benchmarks(data_dir)
    return pd.DataFrame(rows)[["name", "available", "language", "expected_rows", "description", "licence", "citation"]]


def load_model(name_or_path: str, *, device: str = "auto", dtype: str = "auto", gguf_file: str | None = None,
               trust_remote_code: bool = False, device_map: str | dict | None = None,
               max_memory: str | dict | None = None, offload_folder: str | None = None, quantize: str | None = None,
               timeout: float | None = None, retries: int | None = None, load: bool = False) -> ModelHandle:
    """A model by hub name, local folder, ``.gguf`` file, embedded alias or ``served:URL``, as a :class:`ModelHandle`;
    nothing is loaded until a computation needs the weights (``load=True`` loads now). ``dtype`` ``auto`` is float32
    everywhere (exact), ``bf16``/``fp16`` and ``quantize="int8"``/``"int4"`` are approximate (labelled so in every
    result); ``device_map``, ``max_memory`` and ``offload_folder`` split a large model over devices
    (:mod:`biascore.models.placement`); ``timeout`` and ``retries`` apply to a served model (docs/cli.md). Bad values
    raise a one-line ``ValueError`` before anything is loaded (every argument: docs/api.md)."""
    handle = ModelHandle(ModelSpec.parse(name_or_path, gguf_file=gguf_file, device=device, dtype=dtype,
                                         trust_remote_code=trust_remote_code, device_map=device_map,
                                         max_memory=max_memory, offload_folder=offload_folder, quantize=quantize,
                                         timeout=timeout, retries=retries))
    if load:
        handle.load()
    return handle


def load_benchmark(name_or_path: str | Path, *, columns: dict[str, str] | None = None, split: str | None = None,
                   data_dir: str | Path | None = None):
    """A pair benchmark: a registered name, a CSV or parquet file, a ``datasets`` folder (``save_to_disk``) or
    a dataset name in the local HuggingFace cache; ``columns`` maps ``sent_more``/``sent_less``/``bias_type``
    to your column names, ``split`` picks a split. Pass it as the ``input`` of :func:`run`.
    ``benchmark.duplicates`` lists the pair ids that repeat an earlier pair."""
    return datasets.load_benchmark(name_or_path, data_dir, columns=columns, split=split)


def run(method_name: str | Method, model: "ModelHandle | LanguageModel | str", input: Any = None, *,
        limit: int | None = None, progress: ProgressFn | bool | None = True, cache_dir: str | Path | None = None,
        data_dir: str | Path | None = None, only_cached: bool = False, columns: dict[str, str] | None = None,
        split: str | None = None, **options: Any) -> Result | None:
    """Run a registered method (cached, resumable) and return its :class:`~biascore.contract.result.Result`. ``input``:
    a benchmark / SEAT test / language name or path (None: the method's default; ``columns`` and ``split`` as in
    :func:`load_benchmark`); ``options``: the method's options as keyword arguments (``Options.specs()`` lists them).
    ``progress=True`` draws a bar, False none, or a ``progress(done, total)``; ``only_cached=True`` returns None instead
    of computing. Duplicated pairs warn (:class:`DuplicatePairsWarning`)."""
    m = get(method_name) if isinstance(method_name, str) else method_name
    if columns or split:
        input = load_benchmark(input, columns=columns, split=split, data_dir=data_dir)
    handle = as_handle(model)
    cache = ResultCache(cache_dir) if cache_dir is not None else None
    bar = Bar(f"{m.name}: {handle.label}", unit="item") if progress is True else None
    with bar or contextlib.nullcontext():
        result = run_method(m, handle, input, limit=limit, cache=cache, data_dir=data_dir,
                            progress=bar or progress or None, waiting=bar and bar.waiting, only_cached=only_cached,
                            **options)
    note = getattr(getattr(result, "input", None), "duplicates_note", lambda: "")()
    if note:
        warnings.warn(note, DuplicatePairsWarning, stacklevel=2)
    return result


class DuplicatePairsWarning(UserWarning):
    """A pair benchmark repeats pairs: each copy is scored as its own pair (``benchmark.duplicates``)."""


def score_pair(model: "ModelHandle | LanguageModel | str", more: str, less: str, *, jsd: str = "reference",
               bias_type: str = "unspecified"):
    """Score one typed pair live (not cached): a one-pair attribution result. ``result.pair(0)`` is the pair (tokens,
    b(u), words, S_JSD, verdict; a red/blue heatmap in Jupyter). Bad text (empty, identical, not a minimal pair) comes
    back with ``skipped_reason`` set; a sentence that is not a string (None) raises one TypeError."""
    from biascore.methods.attribution.scorer import check_pair_texts, score_pair as score_one
    check_pair_texts([(more, less)])  # None or a number: one TypeError before any model is loaded
    handle = as_handle(model)
    m = get("attribution")
    opts = m.Options.build(jsd=jsd)
    row = score_one(handle.load(), more, less, jsd=jsd, bias_type=bias_type)
    return live_result(m, handle, pd.DataFrame([row]), opts, input_name="typed pair")


def compare(result_a: Result, result_b: Result, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95):
    """Model B against model A, paired over the pairs both attribution results scored: a
    :class:`~biascore.methods.attribution.compare.Comparison` whose ``summary()`` has per bias type and ``all`` the
    delta (B − A) with its paired bootstrap interval (``n_boot`` ≥ 100, ``seed``, ``level``) and McNemar's exact
    test on the discordant verdicts (Holm-adjusted), for B, PLL and lm-eval (docs/scores.md)."""
    from biascore.methods.attribution.compare import compare_results
    return compare_results(result_a, result_b, n_boot=n_boot, seed=seed, level=level)


def across_languages(aligned_set: str, model: "ModelHandle | LanguageModel | str | dict",
                     languages: list[str] | None = None, *, progress: ProgressFn | bool | None = True,
                     cache_dir: str | Path | None = None, data_dir: str | Path | None = None, **options: Any):
    """An aligned set (:func:`aligned_sets`: the same source pairs in several languages) scored in ``languages``
    (default all) by ``model`` — one for every language, or {language: model} — each language the attribution
    result of :func:`run` (same cache); one progress bar for every pair. Returns a
    :class:`~biascore.methods.attribution.languages.Languages`: ``pair(source_id)`` (that pair in every language),
    ``summary()`` (B per language with its interval) and ``compare(a, b)`` (two languages paired over their common
    source pairs, as :func:`compare` pairs two models: McNemar, paired bootstrap, ``discordant`` pairs)."""
    from biascore.methods.attribution.languages import across_languages as across
    models = {k: as_handle(v) for k, v in model.items()} if isinstance(model, dict) else as_handle(model)
    cache, m = (ResultCache(cache_dir) if cache_dir is not None else None), get("attribution")

    def one(benchmark, handle, **kwargs):
        return run_method(m, handle, benchmark, cache=cache, **kwargs)

    return across(aligned_set, models, languages, run=one, data_dir=data_dir, progress=progress, **options)


#: the footer key of a cache file's stored key (biascore.store.cache)
_CACHE_KEY = b"biascore"


def load_result(path: str | Path, *, data_dir: str | Path | None = None) -> Result:
    """The :class:`Result` a result file (:meth:`Result.to_parquet`; its input reloaded when its content hash
    still matches) or a cache file (opened through :func:`biascore.runs.runner.open_stored`, so verified) holds.
    No model is loaded and nothing is recomputed. Refused in one line (:class:`ResultFileError`): anything else, a
    file of another engine or method version, a result file missing a schema column, several results stacked."""
    path = Path(path)
    if not path.is_file():
        raise ResultFileError(f"no result file at {path}")
    try:
        footer = pq.read_schema(path).metadata or {}
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a non-parquet file
        raise ResultFileError(f"{path} is not a parquet file ({type(exc).__name__})") from None
    if RECORD_KEY in footer:
        return _result_file(path, footer, data_dir)
    cache_meta = _json(footer.get(_CACHE_KEY))
    if isinstance(cache_meta, dict) and "scorer" in cache_meta and "digest" in cache_meta:
        return _cache_file(path, data_dir)
    raise ResultFileError(f"{path} holds a table but no biascore result (write one with Result.to_parquet or "
                          "`--out FILE.parquet` of one model on one input, or load a file of the result cache)")


def _json(raw: bytes | None) -> Any:
    try:
        return json.loads(raw) if raw is not None else None
    except ValueError:
        return None


def _check_versions(path: Path, method: Method, meta: dict) -> None:
    engine = str(meta.get("engine_version", "unknown"))
    if engine != ENGINE_VERSION:
        raise ResultFileError(f"{path} was computed by biascore engine {engine}, not this engine ({ENGINE_VERSION}): "
                              f"its numbers are not this engine's; run {method.name} on this model and input again")
    version = meta.get("method_version")
    if version is not None and int(version) != method.version:
        raise ResultFileError(f"{path} was computed by version {version} of {method.name}, not this one "
                              f"({method.version}): run it again")


def _result_file(path: Path, footer: dict, data_dir: str | Path | None) -> Result:
    record = _json(footer[RECORD_KEY])
    if not isinstance(record, dict) or "method" not in record:
        raise ResultFileError(f"{path}: its result record cannot be read")
    if int(record.get("format", 0)) > RECORD_FORMAT:
        raise ResultFileError(f"{path} was written by a newer biascore (record format {record['format']})")
    try:
        method = get(str(record["method"]))
    except (KeyError, ValueError) as exc:
        raise ResultFileError(f"{path} holds a result of method {str(record['method'])!r}, which this biascore does "
                              f"not have ({one_line(exc)})") from None
    if record.get("stacked"):
        raise ResultFileError(f"{path} holds {record['stacked']} {method.name} results stacked (--out of several "
                              "models or inputs): write one model on one input to a file to load it as a result")
    try:
        options = method.Options.from_values(record["options"])
        meta = dict(record["meta"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ResultFileError(f"{path}: its result record cannot be read ({one_line(exc)})") from None
    _check_versions(path, method, meta)
    frame = pq.read_table(path).to_pandas()
    missing = [c.name for c in method.schema if c.name not in frame.columns]  # the cache's rule: every column
    if missing:                                                                 # of the schema (more may follow)
        raise ResultFileError(f"{path}: its columns are not the {method.name} result schema (missing "
                              f"{', '.join(missing)}; `biascore methods --schema {method.name}` lists them)")
    result = (method.result_type or Result)(method=method, frame=frame, meta=meta, options=options,
                                            input=_reload_input(method, meta, data_dir))
    # the record is the one source of the engine version and the rest; the description beside it repeats them
    if _json(footer.get(_CACHE_KEY)) != json.loads(json.dumps(result.describe(), default=str)):
        raise ResultFileError(f"{path}: its footer's description (key 'biascore') does not match its result record "
                              "(the file was edited): write it again")
    return result


def _cache_file(path: Path, data_dir: str | Path | None) -> Result:
    meta = ResultCache.entry_meta(path)
    scorer = str(meta["scorer"])
    if scorer.endswith(".derived"):  # a derived frame: the result is the stored file it was derived from
        source = path.parent.parent / scorer[:-len(".derived")] / f"{meta.get('run', '')}.parquet"
        if not source.is_file():
            raise ResultFileError(f"{path} is a derived frame of the cache whose stored result {source} is gone")
        return _cache_file(source, data_dir)
    method = next((m for m in discover() if m.cache_folder == scorer), None)
    if method is None:
        raise ResultFileError(f"{path} is a cache file of {scorer!r}, a method this biascore does not have")
    _check_versions(path, method, meta)
    if path.parent.name != scorer:
        raise ResultFileError(f"{path} is a {method.name} cache file outside its cache (load it from "
                              f"<cache>/{scorer}/, where it is verified against its key)")
    try:
        return open_stored(method, Stored(method.name, str(meta["digest"]), meta, path, path.stat().st_mtime_ns),
                           cache=ResultCache(path.parent.parent), data_dir=data_dir)
    except (UnreadableResult, CorruptCacheFile, OSError, ValueError, KeyError) as exc:
        raise ResultFileError(f"{path}: {one_line(exc)}") from None


def _reload_input(method: Method, meta: dict, data_dir: str | Path | None) -> Any:
    try:
        loaded = method.input_kind.load(str(meta.get("input", "")), Path(data_dir) if data_dir else None)
    except Exception:  # noqa: BLE001 - an input that is gone or changed is simply not attached
        return None
    return loaded if getattr(loaded, "content_hash", None) == meta.get("input_hash") else None
