"""Which models a page may show, and their handles: one handle per model and server process (the weights load
once, on first use), or in an offline snapshot (``BIASCORE_SNAPSHOT``) a stand-in that never loads. A served model
listed as ``LABEL=served:URL`` in ``BIASCORE_MODELS`` is named ``LABEL`` everywhere (docs/operating.md)."""
from __future__ import annotations

import functools
import os
import time
from contextlib import nullcontext

import streamlit as st

from biascore import api, settings, snapshot
from biascore.display import code_span, markdown_literal
from biascore.errors import ModelLoadError, one_line
from biascore.runs import runner
from biascore.snapshot import active as active_snapshot  # the snapshot in use (OpenedSnapshot), or None
from views.kit.common import error_text
from views.kit.links import link_choice, link_value, refuse

#: Models offered in selectors before the user types their own (embedded ones first).
SUGGESTED_MODELS = ["smollm2-135m", "all-minilm-l6-v2", "gemma3-270m", "bert-base-uncased", "gpt2", "xlm-roberta-base"]


def open_snapshot() -> bool:
    """Serve the snapshot named by ``BIASCORE_SNAPSHOT`` (verified and unpacked once per process), or the normal
    cache when it is unset. False after showing why a snapshot is refused (one line)."""
    path = settings.snapshot_file()
    if path is None:
        snapshot.deactivate()
        return True
    try:
        opened = snapshot.activate(path)
    except snapshot.SnapshotError as exc:
        snapshot.deactivate()
        st.error(f"Snapshot refused: {one_line(exc)}")
        return False
    st.sidebar.caption(f"📦 Read-only snapshot {opened.describe()}")
    return True


def read_only_notice(what: str) -> bool:
    """In a snapshot: say that ``what`` needs a model or a computation and is off; True then (skip it)."""
    snap = active_snapshot()
    if snap is None:
        return False
    st.info(f"{what} — off in this read-only snapshot ({code_span(snap.label)}): it shows cached results only.")
    return True


def get_handle(name: str):
    """The one model handle per model name and server process (st.cache_resource: shared by every session; it
    loads once, on first use). In a snapshot: a stand-in that never loads (but the embedded default model)."""
    snap = active_snapshot()
    return _handle(name, api.ModelSpec.configured(name).name, str(snap.root) if snap is not None else None)


@st.cache_resource(show_spinner=False)
def _handle(name: str, target: str, snapshot_root: str | None):
    """Keyed by the snapshot too (a live handle is never reused in a snapshot) and by ``target``, what ``name``
    loads (a served label pointed elsewhere is a new handle); the handle is labelled ``name``."""
    if snapshot_root is not None and name != settings.DEFAULT_MODEL:
        return snapshot.standin_handle(name, active_snapshot().model_facts(name) or {})
    return api.ModelHandle(api.ModelSpec(target, label=name))


def start_default_load() -> None:
    """The default model's load starts with the server's first page when it must be converted first (once per
    machine), outside a snapshot: a "Score now" meanwhile waits for that same load."""
    if settings.snapshot_file() is None and model_allowed(settings.DEFAULT_MODEL):
        if (handle := get_handle(settings.DEFAULT_MODEL)).converts:
            handle.start_loading()


def default_model_status() -> None:
    """While the default model's first load (:func:`start_default_load`) runs, every page says so, every second."""
    if active_snapshot() is not None or not model_allowed(settings.DEFAULT_MODEL) or \
            (handle := get_handle(settings.DEFAULT_MODEL)).loading_since is None:
        return

    @st.fragment(run_every=1.0)
    def status() -> None:
        since = handle.loading_since
        if since is None:
            st.rerun()  # loaded: the page again, without the line
        st.caption(f"⏳ {handle.load_line()}: {time.time() - since:.0f} s so far. \"Score now\" waits for it.")

    status()


def served(name: str) -> bool:
    """True when the dashboard's model ``name`` is served (a served label of the settings, or a typed
    ``served:`` name outside public mode)."""
    return api.ModelSpec.configured(name).served


def served_refusal(name: str, method) -> bool:
    """When ``name`` is a served model and ``method`` (a registered :class:`Method`) needs the model's weights: say
    so in one line on the page and return True (the page stops drawing that part)."""
    if not served(name) or active_snapshot() is not None or not method.needs_model or method.runs_served:
        return False
    st.info(f"{code_span(model_label(name))} is a served model: it gives prompt log-probabilities only, and "
            f"{method.name} needs the model's weights in this process (masked-LM scoring, hidden states or gradients). "
            "Pick a model loaded here, or use the attribution pages with the served model.")
    return True


def served_error_line(name: str, exc: BaseException) -> str | None:
    """A served label's loading error as a line naming the model by its label, never its URL, else None; a
    server that does not answer is said to be down (its stored runs stay browsable)."""
    target = api.ModelSpec.configured(name).name
    if target == name or not api.is_served(target):
        return None
    try:
        parsed = api.ServedName.parse(target)
        urls = sorted({target, target[len("served:"):], parsed.base, parsed.root, parsed.describe()}, key=len,
                      reverse=True)
    except ModelLoadError:
        urls = [target, target[len("served:"):]]

    def named(line: str) -> str:
        for url in urls:
            line = line.replace(url, name)
        return one_line(RuntimeError(line))

    if isinstance(exc, api.ServedUnavailable):
        return (f"The server of {name} is down: it {named(exc.cause)}. Its stored runs can still be browsed; "
                "scoring needs the server back.")
    return f"The served model {name} cannot be used now: {named(one_line(exc, public=False))}"


def stored_notice(name: str) -> None:
    """Over a stored run of a served model whose server is down (after a connection that failed for that reason):
    say the run is stored and the server down."""
    if not served(name) or active_snapshot() is not None:
        return
    error = get_handle(name).load_error
    if isinstance(error, api.ServedUnavailable):
        st.info(f"Showing the stored run of {code_span(model_label(name))}. {served_error_line(name, error)}")


def served_last_seen(name: str) -> tuple[str, str] | None:
    """The model name and fingerprint ``name``'s server last said it serves
    (:mod:`biascore.models.served.last_seen`), or None."""
    return api.recall_served(settings.cache_dir(), api.ModelSpec.configured(name).name)


def served_labels() -> dict[str, str]:
    """Stored model name -> the settings' label of each served model (connected, else the name it last served);
    which runs are shown is decided by the fingerprint measured now (:func:`views.kit.attribution.best_run`)."""
    out = {}
    for label in settings.served_models():
        handle = get_handle(label)
        seen = handle.identity().name if handle.loaded else (served_last_seen(label) or (None,))[0]
        if seen is not None:
            out.setdefault(seen, label)
    return out


def model_or_error(name: str, live: bool = False):
    """The model's handle, loaded (or, in a snapshot unless ``live``, a stand-in whose cache keys find the snapshot's
    results for ``name``: nothing is loaded); None after showing the loader's message inline (never a traceback)."""
    snap = active_snapshot()
    if snap is not None and not live:
        if snap.model_facts(name) is None:
            st.info(f"{code_span(name)} has no results in this snapshot ({code_span(snap.label)}).")
            return None
        return get_handle(name)
    handle = get_handle(name)
    try:
        with st.spinner("Loading model (once per process)…") if not handle.loaded else nullcontext():
            handle.load()
        return handle
    except (ModelLoadError, settings.ReadOnlySnapshotError) as exc:
        line = served_error_line(name, exc)  # a served model: named by its label, never by its URL
        st.error(error_text(exc) if line is None else markdown_literal(line), icon="⚠️")
        return None


def model_for_cache(name: str):
    """``name``'s handle for reading its cached results without loading it (the runner loads only to compute); a
    served model connected first; in a snapshot its stand-in, or None after a line when it has no results."""
    if active_snapshot() is not None or served(name):  # a served model: connected (identity measured) first
        return model_or_error(name)
    return get_handle(name)


#: How a model is named on every page: the one display name under the settings' public mode.
model_label = functools.partial(api.display_name, public=None)


def model_visible(name: str) -> bool:
    """Whether a cached model's results may be listed: not a path, or allowed (:func:`model_allowed`)."""
    return not api.is_local_path(name) or model_allowed(name)


def model_allowed(name: str) -> bool:
    """Whether a model may be chosen in a picker: any outside public mode; in public mode only the allow-list's
    (a folder also under another path to it)."""
    if not settings.public_mode():
        return True
    allowed = settings.allowed_models()
    return name in allowed or (api.is_local_path(name) and os.path.realpath(name) in
                               {os.path.realpath(a) for a in allowed if api.is_local_path(a)})


def offered_models() -> list[str]:
    """The models the dashboard offers: the server's allow-list in public mode, else the suggested models and
    the settings' served models (by label)."""
    if settings.public_mode():
        return list(settings.allowed_models())
    return list(SUGGESTED_MODELS) + [m for m in settings.served_models() if m not in SUGGESTED_MODELS]


def _trusted_link_models() -> set[str]:
    """Models a link (``?model=``) may name: the allow-list, and outside public mode the suggested and cached
    models; never an arbitrary path (a URL must not make the server hash folders of its choosing)."""
    trusted = set(settings.allowed_models())
    if not settings.public_mode():
        trusted |= set(SUGGESTED_MODELS) | {entry.model for m in api.discover() for entry in runner.stored(m)}
    return trusted


def model_selector(label: str = "Model", key: str = "model", default: str = settings.DEFAULT_MODEL,
                   options: list[str] | None = None, scorer: str | tuple[str, ...] | None = None) -> str:
    """A select box of models, synced with the URL parameter ``key``: in public mode the allow-list only, else
    :func:`offered_models` and an "other…" field; a link's ``?model=`` only when :func:`_trusted_link_models` lists
    it; in a snapshot its models (with results of ``scorer`` when given)."""
    snap = active_snapshot()
    if snap is not None:
        names = list(options or snap.model_names(scorer)) or [default]
        wanted = link_choice(key, names, default if default in names else names[0], noun="models of this snapshot")
        return st.selectbox(label, names, index=names.index(wanted), key=f"{key}_select")
    allowed = settings.allowed_models()
    if settings.public_mode():
        options = [m for m in (options or allowed) if m in allowed] or list(allowed)
        free = False
    else:
        options, free = list(options or offered_models()), True
    if default not in options:
        if free:
            options.insert(0, default)
        else:
            default = options[0]
    qp = link_value(key)
    if qp and qp not in options:
        labelled = [m for m in options if model_label(m) == qp]  # a link written in public mode: display names
        if labelled:
            qp = labelled[0]
        elif qp in _trusted_link_models():
            options.append(qp)
        else:
            refuse(key, None, f"this server does not offer that model; showing {model_label(default)}",
                   replacement=model_label(default))
            qp = None
    choice = st.selectbox(label, options + (["other…"] if free else []), format_func=model_label,
                          index=options.index(qp) if qp in options else options.index(default), key=f"{key}_select")
    if choice == "other…":
        choice = st.text_input("Hub id, local folder, .gguf path or served:URL", key=f"{key}_custom").strip() or default
    return choice


def data_dir_notice() -> None:
    """Tell the user where benchmark data is read from and how to get it (no server path in public mode)."""
    snap = active_snapshot()
    if snap is not None:
        st.caption(f"Read-only snapshot {code_span(snap.label)} (engine {snap.manifest['engine_version']}, made "
                   f"{snap.manifest.get('created_at', '?')}): results and benchmark rows come from it; "
                   "nothing is scored here.")
    elif not settings.public_mode():
        st.caption(f"Benchmark data directory: {code_span(settings.data_dir())} — download the public benchmarks "
                   "with `python -m biascore data download` (or set `BIASCORE_DATA_DIR`).")
