"""The Python API: what a researcher scripts from a notebook (``import biascore``).

    import biascore
    biascore.methods()                                   # the registered methods (a table)
    biascore.benchmarks()                                # the pair benchmarks and whether they are present
    lm = biascore.load_model("smollm2-135m")             # a model handle; weights load on first use
    result = biascore.run("attribution", lm, "demo")     # cached: the same key as the CLI and the dashboard
    result.summary()                                     # B per bias type with 95 % Wilson intervals
    result.pair(3)                                       # one pair: tokens, b(u), words; a heatmap in Jupyter
    biascore.score_pair(lm, "Women can't drive.", "Men can't drive.")
    bench = biascore.load_benchmark("pairs.parquet", columns={"sent_more": "stereo", "sent_less": "anti"})

Every call goes through the one runner (:func:`biascore.runs.runner.run`), so a result computed here is the
one the CLI prints and the dashboard shows (same cache, same keys), and a cached result is answered without
loading the model when the model's identity can be read from its files.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pandas as pd

from biascore.models.handle import ModelHandle, as_handle, reach_options
from biascore.contract.method import Method
from biascore.models.loading import LanguageModel
from biascore.progress import ProgressFn
from biascore.contract.result import Result
from biascore.contract.result_files import load_result  # noqa: F401 - load_result is part of the API

Model = "ModelHandle | LanguageModel | str"


def methods() -> pd.DataFrame:
    """The registered methods: name, CLI command, input, model kinds, paper, one-line summary."""
    from biascore.methods import table

    return table()


def method(name: str) -> Method:
    """The registered method called ``name`` (registry name or CLI command)."""
    from biascore.methods import get

    return get(name)


def benchmarks(data_dir: str | Path | None = None) -> pd.DataFrame:
    """The registered pair benchmarks: name, whether present in the data directory, language, description."""
    from biascore.inputs.datasets import available_benchmarks

    rows = available_benchmarks(data_dir)
    return pd.DataFrame(rows)[["name", "available", "language", "expected_rows", "description"]]


def load_model(name_or_path: str, *, device: str = "auto", dtype: str = "auto", gguf_file: str | None = None,
               trust_remote_code: bool = False, device_map: str | dict | None = None,
               max_memory: str | dict | None = None, offload_folder: str | None = None,
               quantize: str | None = None, timeout: float | None = None, retries: int | None = None,
               load: bool = False) -> ModelHandle:
    """A model by hub name, local folder, ``.gguf`` file or embedded alias, as a :class:`ModelHandle`.

    Nothing is loaded until a computation needs the weights (``load=True`` loads now); ``device`` is
    ``auto``/``cpu``/``cuda``/``mps``; ``dtype`` ``auto`` is float32 everywhere (exact), ``bf16``/``fp16`` are
    fast approximate modes (labelled so in every result). ``trust_remote_code`` stays off unless turned on.

    A model too large for one device is split by accelerate: ``device_map="auto"`` (or a dict {module: device}),
    ``max_memory={"cpu": "300MiB", 0: "10GiB"}`` (or ``"cpu=300MiB,0=10GiB"``) caps each device and what does not
    fit goes to disk under ``<cache>/offload/`` unless ``offload_folder`` names another folder; the numbers equal
    the one-device run within the reproducibility contract. ``quantize="int8"`` / ``"int4"`` loads quantized
    weights (:mod:`biascore.models.quantize`): approximate numbers, labelled ``approximate (int8 weights)`` in every
    result. Bad values raise a one-line ``ValueError`` before anything is loaded.

    A served model (``served:http://HOST:PORT/v1[#NAME][?OPTIONS]``, see docs/cli.md) takes ``timeout`` (seconds
    per request) and ``retries`` (tries after the first; a request that still fails ends the run at once); they
    override the description's own ``timeout=`` / ``retries=``. Its API key comes from the environment variable
    the description names (``?api_key_env=VARIABLE``), never from an argument.
    """
    reach = reach_options(name_or_path, dtype=dtype, quantize=quantize, device_map=device_map, max_memory=max_memory,
                          offload_folder=offload_folder, timeout=timeout, retries=retries)
    handle = ModelHandle(name_or_path, gguf_file=gguf_file, device=device, dtype=dtype,
                         trust_remote_code=trust_remote_code, **reach)
    if load:
        handle.load()
    return handle


def load_benchmark(name_or_path: str | Path, *, columns: dict[str, str] | None = None, split: str | None = None,
                   data_dir: str | Path | None = None):
    """A pair benchmark: a registered name, a CSV or parquet file, a ``datasets`` folder (``save_to_disk``) or
    a dataset name in the local HuggingFace cache; ``columns`` maps ``sent_more``/``sent_less``/``bias_type``
    to your column names, ``split`` picks a split. Pass it as the ``input`` of :func:`run`.
    ``benchmark.duplicates`` lists the pair ids that repeat an earlier pair."""
    from biascore.inputs.datasets import load_benchmark as load

    return load(name_or_path, data_dir, columns=columns, split=split)


def run(method_name: str | Method, model: "ModelHandle | LanguageModel | str", input: Any = None, *,
        limit: int | None = None, progress: ProgressFn | bool | None = True, cache_dir: str | Path | None = None,
        data_dir: str | Path | None = None, only_cached: bool = False, columns: dict[str, str] | None = None,
        split: str | None = None, **options: Any) -> Result | None:
    """Run a registered method (cached, resumable) and return its :class:`~biascore.contract.result.Result`.

    ``input``: a benchmark / SEAT test / language name or path (None: the method's default); for a pair
    benchmark of your own, ``columns`` and ``split`` as in :func:`load_benchmark` (a benchmark with duplicated
    pairs gives a :class:`DuplicatePairsWarning`). ``options``:
    the method's options as keyword arguments (``biascore.method(name).Options.specs()`` lists them; bad
    values raise :class:`~biascore.contract.options.OptionError`). ``progress=True`` draws a bar (``tqdm.auto``:
    a widget in Jupyter), False none, or pass your own ``progress(done, total)``. ``only_cached=True``
    returns None instead of computing.
    """
    from biascore.store.cache import ResultCache
    from biascore.runs.runner import run as run_method
    from biascore.methods import get

    m = get(method_name) if isinstance(method_name, str) else method_name
    if columns or split:
        input = load_benchmark(input, columns=columns, split=split, data_dir=data_dir)
    handle = as_handle(model)
    cache = ResultCache(cache_dir) if cache_dir is not None else None
    if progress is True:
        from biascore.progress import Bar

        with Bar(f"{m.name}: {handle.label}", unit="item") as bar:
            result = run_method(m, handle, input, limit=limit, cache=cache, data_dir=data_dir, progress=bar,
                                waiting=bar.waiting, only_cached=only_cached, **options)
    else:
        result = run_method(m, handle, input, limit=limit, cache=cache, data_dir=data_dir,
                            progress=progress or None, only_cached=only_cached, **options)
    note = getattr(getattr(result, "input", None), "duplicates_note", lambda: "")()
    if note:
        warnings.warn(note, DuplicatePairsWarning, stacklevel=2)
    return result


class DuplicatePairsWarning(UserWarning):
    """A pair benchmark repeats pairs: each copy is scored as its own pair (``benchmark.duplicates``)."""


def score_pair(model: "ModelHandle | LanguageModel | str", more: str, less: str, *, jsd: str = "reference",
               bias_type: str = "unspecified"):
    """Score one typed pair live (not cached): a one-pair attribution result. ``result.pair(0)`` is the pair
    (tokens, b(u), words, S_JSD, verdict; a red/blue heatmap in Jupyter). Bad text (empty, identical,
    not a minimal pair) comes back with ``skipped_reason`` set; a sentence that is not a string (None) raises
    one TypeError."""
    from biascore.runs.runner import live_result
    from biascore.methods import get
    from biascore.methods.attribution.scorer import check_pair_texts, score_pair as score_one

    check_pair_texts([(more, less)])  # None or a number: one TypeError before any model is loaded
    handle = as_handle(model)
    m = get("attribution")
    opts = m.Options.build(jsd=jsd)
    row = score_one(handle.load(), more, less, jsd=jsd, bias_type=bias_type)
    return live_result(m, handle, pd.DataFrame([row]), opts, input_name="typed pair")


def compare(result_a: Result, result_b: Result, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95):
    """Model B against model A, paired over the pairs both attribution results scored: a
    :class:`~biascore.methods.attribution.compare.Comparison` whose ``summary()`` has one row per bias type plus
    ``all`` — ``n``, ``score_a``, ``score_b``, ``delta`` (B − A) with its paired bootstrap interval
    (``ci_low``, ``ci_high``), McNemar's exact test on the discordant verdicts (``n_discordant``, ``mcnemar_p``,
    Holm-adjusted across bias types in ``mcnemar_p_holm``), the mean paired S_JSD difference, and the same for
    the PLL score (``pll_…``) and, when both use lm-eval's prefix token, the lm-eval score (``lmeval_…``).
    ``n_boot`` bootstrap resamples (≥ 100), ``seed``, ``level``: the interval's confidence level."""
    from biascore.methods.attribution.compare import compare_results

    return compare_results(result_a, result_b, n_boot=n_boot, seed=seed, level=level)
