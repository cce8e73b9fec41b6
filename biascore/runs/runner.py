"""The one runner: every method's result goes through :func:`run` — computed once, cached, verified, resumable.

The same function answers the CLI, the Python API, sweeps, snapshots (read-only: nothing is computed) and
the dashboard, so a result computed in one of them is what the others show. This module is the one door to
results — every question a shell asks is answered here, and nothing else reads the cache or rebuilds a key.
It is three modules by concern, answered here as one: the computing path (:mod:`biascore.runs.compute`:
:func:`run`, :func:`live_result`), the stored results (:mod:`biascore.runs.stored`: :func:`stored`,
:func:`stored_version`, :func:`listed`, :func:`open_stored`, :func:`drawn`, :func:`run_on_stored`) and, below,
what a page watches without loading or reading anything (:func:`is_cached`, :func:`selection`, :func:`watch`,
:func:`computing`). Every read is remembered by the version of what it read (:mod:`biascore.runs.memo`): shells
keep no memo of their own.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from biascore.runs.announce import (CONVERTING, FAILED, SCORING, Announcement, Selection, furthest,  # noqa: F401
                                    run_tag)
from biascore.store.cache import ResultCache
from biascore.runs.compute import Context, build_options, live_result, model_key, resolve_input, run  # noqa: F401
from biascore.models.handle import ModelHandle, as_handle
from biascore.contract.method import Method
from biascore.models.loading import LanguageModel
from biascore.runs.stored import (DamagedResult, StaleResult, Stored, UnreadableResult,  # noqa: F401
                                          drawn, key_of, listed, open_stored, run_on_stored, standin,
                                          stored, stored_version, verify_file)


def is_cached(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              cache: ResultCache | None = None, data_dir: str | Path | None = None, limit: int | None = None,
              **option_values: Any) -> bool:
    """Whether ``method``'s result for this model, input and options is stored (its file exists; it is verified
    when it is read). Never loads or computes; False when the model's identity needs a load to be known."""
    return selection(method, model, input, data_dir=data_dir, limit=limit, **option_values).stored(cache)


def selection(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              data_dir: str | Path | None = None, limit: int | None = None, **option_values: Any) -> Selection:
    """``method``'s result for ``model`` on ``input`` as a page watches it
    (:class:`~biascore.runs.announce.Selection`: the runs announced for it, whether it is stored), without
    loading anything; its key is None when the model's identity needs a load to be known."""
    opts = build_options(method, None, option_values)
    data_dir = Path(data_dir) if data_dir is not None else None
    loaded = resolve_input(method, input, data_dir, limit)
    run_handle = as_handle(model).variant(**method.load_variant(opts))
    identity = run_handle.known_identity()
    key = model_key(method, identity, loaded, opts, data_dir) if identity is not None else None
    return Selection(run_tag(method, run_handle.name, input, limit, opts), key)


def watch(method: Method, model: str, input: Any = None, *, limit: int | None = None,
          **option_values: Any) -> Selection:
    """``method``'s result for the model named ``model`` on ``input`` as a page watches it on every render: the
    runs announced for it, matched by names alone (its tag) — no input read, no model identity, no key, so its
    ``stored()`` is always False; a page sees a result stored through :func:`stored_version`."""
    return Selection(run_tag(method, model, input, limit, build_options(method, None, option_values)), None)


def computing(method: Method, model: ModelHandle | LanguageModel | str, input: Any = None, *,
              cache: ResultCache | None = None, data_dir: str | Path | None = None, limit: int | None = None,
              **option_values: Any) -> Announcement | None:
    """Whether ``method``'s result for this model, input and options is being computed right now (by anyone) and
    how far it has got: the furthest of the runs announced for it (:mod:`biascore.runs.announce`), found even when
    the model's identity needs a load to be known; None when none is. Nothing is loaded here."""
    cache = cache or ResultCache()
    if cache.read_only:
        return None
    return furthest(selection(method, model, input, data_dir=data_dir, limit=limit, **option_values).runs(cache))
