"""The method contract: what a bias method declares so that every shell can run, cache and show it.

A method (one folder ``biascore/methods/<name>/`` with a ``method.py``) is a subclass of :class:`Method`:

* who it is — ``name`` (registry name), ``command`` (its CLI subcommand), ``summary`` (one line), ``paper``
  (citation and section) and ``formula`` (one line);
* what it reads — ``input_kind`` (:class:`InputKind`: a pair benchmark, a SEAT test, a LABDet language …) and
  the model kinds it accepts;
* how it is configured — ``Options``, a frozen dataclass of :func:`option` fields (default, help text,
  choices and bounds, whether the option changes the cached result). The CLI flags, the Python API's keyword
  arguments and their validation (one-line :class:`OptionError`) all come from it;
* what it computes — :meth:`Method.compute` ``(ctx, input, options) -> frame``: the frame that is cached, with
  the columns of ``stored_schema``; :meth:`Method.derive` turns it into the result frame (``schema``);
* what it reports — :meth:`Method.summary` (the table the CLI prints and the Overview shows, with intervals),
  :meth:`Method.report` (the CLI's lines) and :meth:`Method.output` (what ``--out`` writes);
* what a snapshot needs — :meth:`Method.data_files` besides its input's own files.

The generic runner (:mod:`biascore.core.runner`) does everything else for every method: model identity →
cache key → per-key lock → load the model only on a cache miss → resumable shards → verify → store. Nothing
here imports a method, the CLI or the dashboard.
"""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Sequence

import pandas as pd


class OptionError(ValueError):
    """An option value that cannot be used; the message is one line naming the option (its CLI flag)."""


class NotApplicable(ValueError):
    """The method does not apply to this model or input (a model kind it cannot read, a language without the
    resources it needs); one line. A sweep records it as a note rather than a failure."""


# --------------------------------------------------------------------------------------------- options
def option(default: Any = dataclasses.MISSING, *, help: str, choices: Sequence | None = None,
           minimum: float | None = None, maximum: float | None = None, exclusive: bool = False,
           key: bool = True, convention: bool = False, flag: str | None = None,
           parse: Callable[[str], Any] | None = None, repeat: bool = False, metavar: str | None = None,
           default_factory: Callable[[], Any] | None = None):
    """A field of a method's ``Options`` dataclass.

    ``key`` — the option changes the cached frame (part of the cache key); False for options that only shape
    the summary or the printout; ``convention`` — shown with every result as a convention that changes the
    numbers (e.g. the JSD variant). ``minimum``/``maximum`` bound a number (``exclusive`` for strict bounds);
    ``choices`` lists the allowed values. CLI only: ``flag`` replaces ``--<name-with-dashes>``, ``parse`` reads
    one command-line word, ``repeat`` makes a tuple option take several words (``--x a b``), ``metavar`` names
    the value in ``--help``.
    """
    meta = {"help": help, "choices": tuple(choices) if choices is not None else None, "minimum": minimum,
            "maximum": maximum, "exclusive": exclusive, "key": key, "convention": convention, "flag": flag, "parse": parse, "repeat": repeat,
            "metavar": metavar}
    if default_factory is not None:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(frozen=True)
class OptionSpec:
    """One option as the shells see it: name, type, default and the :func:`option` metadata."""

    name: str
    type: Any  # the annotation, e.g. int, str | None, tuple[str, ...]
    default: Any
    help: str
    choices: tuple | None
    minimum: float | None
    maximum: float | None
    exclusive: bool
    key: bool
    convention: bool
    flag: str
    parse: Callable[[str], Any] | None
    repeat: bool
    metavar: str | None

    @property
    def base(self) -> type:
        """The value type without ``None`` and without the tuple around a repeated option."""
        t = _without_none(self.type)
        if typing.get_origin(t) is tuple:
            t = _without_none(typing.get_args(t)[0])
        return t if isinstance(t, type) else str

    @property
    def is_tuple(self) -> bool:
        return typing.get_origin(_without_none(self.type)) is tuple

    @property
    def optional(self) -> bool:
        return _allows_none(self.type)


def _allows_none(t: Any) -> bool:
    return typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in typing.get_args(t)


def _without_none(t: Any) -> Any:
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(t) if a is not type(None)]
        return rest[0] if len(rest) == 1 else t
    return t


@dataclass(frozen=True)
class Options:
    """Base class of every method's options (subclasses are ``@dataclass(frozen=True)``).

    :meth:`build` makes a validated instance from keyword arguments (the Python API and the CLI both go
    through it); :meth:`key_parts` is what enters the cache key.
    """

    @classmethod
    def specs(cls) -> list[OptionSpec]:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            m = f.metadata
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            out.append(OptionSpec(f.name, hints[f.name], default, m.get("help", ""), m.get("choices"),
                                  m.get("minimum"), m.get("maximum"), bool(m.get("exclusive")), m.get("key", True),
                                  bool(m.get("convention")),
                                  m.get("flag") or "--" + f.name.replace("_", "-"), m.get("parse"),
                                  bool(m.get("repeat")), m.get("metavar")))
        return out

    @classmethod
    def build(cls, **given: Any) -> "Options":
        """Options from keyword arguments (missing ones take their defaults), validated. Unknown names and bad
        values raise :class:`OptionError` with one line."""
        specs = {s.name: s for s in cls.specs()}
        unknown = sorted(set(given) - set(specs))
        if unknown:
            raise OptionError(f"unknown option(s) {', '.join(unknown)}; this method takes: "
                              + (", ".join(specs) or "no options"))
        values = {name: _coerce(specs[name], value) for name, value in given.items()}
        return cls(**values).validate()

    def validate(self) -> "Options":
        for s in self.specs():
            _check(s, getattr(self, s.name))
        return self

    def key_parts(self) -> dict[str, Any]:
        """The options that change the cached frame, by name (what :meth:`Method.key` puts in the key)."""
        return {s.name: getattr(self, s.name) for s in self.specs() if s.key}

    def conventions(self) -> dict[str, Any]:
        """The options that are conventions shown with every result (see :func:`option`)."""
        return {s.name: getattr(self, s.name) for s in self.specs() if s.convention}

    def as_dict(self) -> dict[str, Any]:
        return {s.name: getattr(self, s.name) for s in self.specs()}

    @classmethod
    def from_meta(cls, meta: dict) -> "Options":
        """The options of a stored result, rebuilt from its key metadata (options outside the key: defaults)."""
        values = {}
        for s in cls.specs():
            if s.key and s.name in meta:
                values[s.name] = _from_json(s, meta[s.name])
        return cls(**values)


def _coerce(spec: OptionSpec, value: Any) -> Any:
    if spec.is_tuple and isinstance(value, (list, tuple)):
        return tuple(value)
    if spec.is_tuple and isinstance(value, str):
        return (value,)
    return value


def _from_json(spec: OptionSpec, value: Any) -> Any:
    if spec.is_tuple and isinstance(value, (list, tuple)):
        return tuple(value)
    return value


def _check(s: OptionSpec, value: Any) -> None:
    where = s.flag
    if value is None:
        if s.optional or s.default is None:
            return
        raise OptionError(f"{where}: a value is required")
    items = value if s.is_tuple else (value,)
    if s.is_tuple and not isinstance(value, tuple):
        raise OptionError(f"{where}: expected a list of values, got {value!r}")
    for item in items:
        if item is None and (s.is_tuple or s.optional):
            continue
        if s.base is bool:
            if not isinstance(item, bool):
                raise OptionError(f"{where}: expected true or false, got {item!r}")
            continue
        if s.base in (int, float):
            if isinstance(item, bool) or not isinstance(item, (int, float)) or (s.base is int and isinstance(item, float)):
                raise OptionError(f"{where}: expected a {'whole number' if s.base is int else 'number'}, got {item!r}")
            low, high = s.minimum, s.maximum
            if s.exclusive and ((low is not None and not item > low) or (high is not None and not item < high)):
                raise OptionError(f"{where}: must be between {low:g} and {high:g} (exclusive), got {item:g}")
            if not s.exclusive and low is not None and item < low:
                raise OptionError(f"{where}: must be at least {low:g}, got {item:g}")
            if not s.exclusive and high is not None and item > high:
                raise OptionError(f"{where}: must be at most {high:g}, got {item:g}")
        elif s.base is str and not isinstance(item, str):
            raise OptionError(f"{where}: expected text, got {item!r}")
        if s.choices is not None and item not in s.choices:
            raise OptionError(f"{where}: {item!r} is not one of {', '.join(map(str, s.choices))}")


# --------------------------------------------------------------------------------------------- schema
@dataclass(frozen=True)
class Column:
    """One column of a result frame: its name, dtype (as pandas names it) and meaning."""

    name: str
    dtype: str
    meaning: str


def columns(rows: Sequence[Column | tuple[str, str, str]]) -> tuple[Column, ...]:
    """A schema from ``(name, dtype, meaning)`` rows (Columns are kept as they are)."""
    return tuple(r if isinstance(r, Column) else Column(*r) for r in rows)


def schema_table(columns: Sequence[Column]) -> pd.DataFrame:
    """A schema as a small frame (``column, dtype, meaning``) for listings and docs."""
    return pd.DataFrame([(c.name, c.dtype, c.meaning) for c in columns], columns=["column", "dtype", "meaning"])


# --------------------------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class InputKind:
    """A kind of input a method reads (a pair benchmark, a SEAT test, a LABDet language…).

    ``load(name, data_dir)`` returns the loaded input, which has ``.name`` and ``.content_hash``;
    ``names(data_dir)`` lists what is available; ``files(loaded, data_dir)`` the data files a snapshot must
    carry. Inputs with rows (pair benchmarks) also give ``ids`` (row ids: shards and checks), ``subset(loaded,
    a, b)`` (rows a..b) and ``first(loaded, n)`` (``--limit``).
    """

    name: str
    flag: str  # the CLI flag naming the input, e.g. "--benchmark"
    noun: str  # "benchmark", "SEAT test", "language"
    help: str
    default: str | None
    load: Callable[[str, Path | None], Any]
    names: Callable[[Path | None], list[str]]
    files: Callable[[Any, Path | None], list[Path]]
    ids: Callable[[Any], list] | None = None
    subset: Callable[[Any, int, int], Any] | None = None
    first: Callable[[Any, int], Any] | None = None
    extra_key: Callable[[Any], dict] | None = None  # more key parts (e.g. the pair count of a --limit run)
    unit: str = "item"  # what progress counts ("pair")
    choices: tuple[str, ...] | None = None  # the only names there can be (the CLI offers them as choices)
    selectable: bool = True  # False: fixed data of its method (a snapshot's --benchmarks does not filter it)

    def key_parts(self, loaded: Any) -> dict[str, Any]:
        parts = {"input_kind": self.name, "input": loaded.name, "input_hash": loaded.content_hash}
        if self.extra_key is not None:
            parts.update(self.extra_key(loaded))
        return parts


class NoInputData:
    """The input of a method that reads nothing but the model and its own fixed data (e.g. the counter-
    stereotype attention test)."""

    def __init__(self, name: str = "model", content_hash: str = "-"):
        self.name, self.content_hash = name, content_hash


# --------------------------------------------------------------------------------------------- the method
class Method:
    """Base class of every method. Subclasses set the class attributes and implement :meth:`compute`."""

    #: registry name (the folder's method; ``biascore run <name>``, ``biascore.run(name, …)``)
    name: ClassVar[str]
    #: the CLI subcommand (kept for scripts; ``biascore <command> …``); default: ``name``
    command: ClassVar[str | None] = None
    summary_line: ClassVar[str]
    paper: ClassVar[str]
    formula: ClassVar[str] = ""
    input_kind: ClassVar[InputKind]
    Options: ClassVar[type[Options]]
    #: columns of the result frame (``Result.frame``)
    schema: ClassVar[tuple[Column, ...]]
    #: columns of the cached frame when it differs from the result frame (default: ``schema``)
    stored_schema: ClassVar[tuple[Column, ...] | None] = None
    #: model kinds the method accepts ("masked", "causal", "encoder")
    model_kinds: ClassVar[tuple[str, ...]] = ("masked", "causal", "encoder")
    #: how the model is loaded for this method (a forced kind, e.g. "encoder"); "auto" reads the config
    load_kind: ClassVar[str] = "auto"
    #: attention implementation the method needs (e.g. "eager" for attention weights); None: the default
    attn_implementation: ClassVar[str | None] = None
    #: False when a cache miss can be answered from other methods' cached results (no model load up front)
    needs_model: ClassVar[bool] = True
    #: True when the method needs nothing but causal prompt log-probabilities, so it runs on a served model
    #: (:mod:`biascore.core.served`); methods with ``needs_model = False`` read other results and run too
    runs_served: ClassVar[bool] = False
    #: input rows per resumable shard (None: computed in one piece); GPU runs may use larger shards
    shard_size: ClassVar[int | None] = None
    gpu_shard_size: ClassVar[int | None] = None
    #: True when the cached frame has exactly one row per input row id (checked on every read)
    one_row_per_input_row: ClassVar[bool] = False
    #: bumped when a change alters the method's cached results (part of the key)
    version: ClassVar[int] = 1
    #: the CLI flag naming the input when it is not the input kind's (e.g. ``--test``)
    input_flag: ClassVar[str | None] = None
    #: the :class:`~biascore.core.result.Result` subclass results come as (None: the plain Result)
    result_type: ClassVar[type | None] = None
    #: the folder cache entries are stored in (default: ``name``)
    cache_name: ClassVar[str | None] = None

    # ------------------------------------------------------------------ identity
    @property
    def cli_command(self) -> str:
        return self.command or self.name

    @property
    def cache_folder(self) -> str:
        return self.cache_name or self.name

    def describe(self) -> dict[str, str]:
        """One row of ``biascore methods``."""
        return {"method": self.name, "command": self.cli_command, "input": self.input_kind.noun,
                "models": "/".join(self.model_kinds), "paper": self.paper, "summary": self.summary_line}

    # ------------------------------------------------------------------ what the runner calls
    def check(self, model_kind: str, loaded: Any, options: Options) -> None:
        """Refuse, before anything is loaded or computed, a model kind or option this method cannot use
        (:class:`OptionError`, one line)."""
        if model_kind not in self.model_kinds and self.load_kind == "auto":
            raise NotApplicable(f"{self.name} needs a {' or '.join(self.model_kinds)} model; this one is {model_kind}")

    def check_served(self, identity: Any) -> None:
        """Refuse a served model (dtype ``served``) unless the method needs only its prompt log-probabilities."""
        if identity.dtype == "served" and self.needs_model and not self.runs_served:
            raise NotApplicable(
                f"{self.name} needs the model's weights in this process (masked-LM scoring, hidden states or "
                f"gradients); {identity.name} is served and gives only prompt log-probabilities — load the model "
                "by its name or folder instead")

    def load_variant(self, options: Options) -> dict[str, Any]:
        """How the model must be loaded for these options: ``kind`` (None = as the model's config says) and
        ``attn_implementation`` (None = the default); the runner asks the model handle for that variant."""
        return {"kind": None if self.load_kind == "auto" else self.load_kind,
                "attn_implementation": self.attn_implementation}

    def key_parts(self, loaded: Any, options: Options, data_dir: Path | None = None) -> dict[str, Any]:
        """Everything besides the model that determines the cached frame: the input and the key options (and
        the content of any other data the method reads from ``data_dir``)."""
        return {**self.input_kind.key_parts(loaded), **options.key_parts(), "method_version": self.version}

    def model_key_parts(self, identity: Any, options: Options) -> dict[str, Any]:
        """Key parts that depend on the model as well as the options (e.g. the prefix token a causal model gets
        under the chosen convention, read from its identity's tokenizer facts); default none."""
        return {}

    def compute(self, ctx: "Context", loaded: Any, options: Options) -> pd.DataFrame:
        """The frame to cache (columns ``stored_schema``) for ``loaded`` (for a sharded method: any slice of
        the input's rows). Reports progress through ``ctx.progress(done, total)``."""
        raise NotImplementedError

    def conventions(self, ctx: "Context", loaded: Any, options: Options) -> dict[str, Any]:
        """Conventions that change numbers (prefix token, JSD variant, filler…), stored with the result and
        shown with it. Called once per computation, after :meth:`compute`."""
        return {}

    def derive(self, ctx: "Context", stored: pd.DataFrame, loaded: Any, options: Options) -> pd.DataFrame:
        """The result frame from the cached frame (default: the same frame)."""
        return stored

    #: True when :meth:`derive` is expensive enough to cache its frame too (keyed by the stored result)
    cache_derived: ClassVar[bool] = False

    def derive_key_parts(self, options: Options) -> dict[str, Any]:
        """The options :meth:`derive` depends on (part of the derived frame's key)."""
        return {}

    # ------------------------------------------------------------------ what the shells show
    def summary(self, result: "Result") -> pd.DataFrame:
        """The summary table (the CLI prints it, the Overview and sweeps show it, ``Result.summary()``)."""
        return result.frame

    def report(self, result: "Result") -> list[str]:
        """The CLI's lines for one result (default: a header and the summary table)."""
        with pd.option_context("display.width", 160, "display.max_columns", 30, "display.max_rows", 200):
            table = self.summary(result)
            return [result.headline(), table.to_string(index=False, float_format=lambda v: f"{v:.4g}")]

    def output(self, result: "Result") -> pd.DataFrame:
        """What ``--out`` writes (default: the result frame)."""
        return result.frame

    #: a CLI flag for more models run the same way and shown side by side (e.g. ``--also``), or None
    compare_flag: ClassVar[str | None] = None

    def followups(self, result: "Result") -> dict[str, tuple["Method", dict[str, Any]]]:
        """More results the CLI computes after this one, on the same model and input (name → (method,
        option values)), e.g. the head-masking table after the head scores; they arrive in
        ``result.extras`` before :meth:`report_all` and :meth:`outputs` are called."""
        return {}

    def report_all(self, results: list["Result"]) -> list[str]:
        """The CLI's lines for one or more results (several inputs, or models side by side)."""
        lines: list[str] = []
        for r in results:
            lines += self.report(r)
            for extra in r.extras.values():
                lines += ["", *extra.method.report(extra)]
        return lines

    def outputs(self, results: list["Result"]) -> dict[str, pd.DataFrame]:
        """What ``--out`` writes: file-name suffix → table (``""`` is the file named by ``--out``; a suffix such
        as ``"_masking"`` goes beside it). Several results are stacked with their model and input."""
        frames = [self.output(r) for r in results]
        if len(results) == 1:
            return {"": frames[0]}
        return {"": pd.concat([f.assign(model=r.model, input=r.input_name) for f, r in zip(frames, results)],
                              ignore_index=True)}

    def data_files(self, loaded: Any, options: Options, data_dir: Path) -> list[Path]:
        """Data files a snapshot needs besides the input's own (e.g. a corpus, word lists)."""
        return []

    def validate_input(self, loaded: Any, options: Options) -> None:
        """Input checks that need the options (e.g. an unknown nationality code); :class:`OptionError`."""
