"""The method contract: what a bias method declares so that every shell can run, cache and show it.

A method (one folder ``biascore/methods/<name>/`` with a ``method.py``) is a subclass of :class:`Method` that
says who it is, what it reads (``input_kind``), how it is configured (``Options``: the CLI flags, the Python API's
keyword arguments, the dashboard's controls and their validation all come from it), what its result looks like
(``schema``, :meth:`Method.headline`, ``views``), what it computes (:meth:`Method.compute`, the cached frame, and
:meth:`Method.derive`, the result frame) and reports (:meth:`Method.summary`, :meth:`Method.report`,
:meth:`Method.output`), and what a snapshot needs (:meth:`Method.data_files`).

The generic runner (:mod:`biascore.runs.runner`; its computing path: :mod:`biascore.runs.compute`) does
everything else for every method. Nothing here imports a method, the CLI or the dashboard.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from biascore.contract.input_kind import InputKind
from biascore.contract.options import Options
from biascore.contract.presentation import Drawing, Headline, View
from biascore.contract.schema import Column
from biascore.contract.views import TypedView

class NotApplicable(ValueError):
    """The method does not apply to this model or input (a model kind it cannot read, a language without the
    resources it needs); one line. A sweep records it as a note rather than a failure."""


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
    #: (:mod:`biascore.models.served`); methods with ``needs_model = False`` read other results and run too
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
    #: the :class:`~biascore.contract.result.Result` subclass results come as (None: the plain Result)
    result_type: ClassVar[type | None] = None
    #: where the method sits in listings and menus (lower first; then by name)
    order: ClassVar[int] = 100
    #: the default views of a result (a generated page draws them); default: the summary table
    views: ClassVar[tuple[View, ...]] = (View("table"),)
    #: what a bespoke page draws with besides the typed views (cached runs, tie labels, tables): none by default
    drawing: ClassVar[type[Drawing]] = Drawing
    #: option values that make a small, quick run on a small input (tests run every registered method with
    #: them, through the API and the contract test); never used for real results
    quick_options: ClassVar[dict[str, Any]] = {}

    # ------------------------------------------------------------------ identity
    @property
    def cli_command(self) -> str:
        return self.command or self.name

    @property
    def cache_folder(self) -> str:
        """The folder its cache entries are stored in."""
        return self.name

    def describe(self) -> dict[str, str]:
        """One row of ``biascore methods``."""
        return {"method": self.name, "command": self.cli_command, "input": self.input_kind.noun,
                "models": "/".join(self.model_kinds), "paper": self.paper, "summary": self.summary_line}

    # ------------------------------------------------------------------ what the runner calls
    def check(self, model_kind: str, loaded: Any, options: Options) -> None:
        """Refuse, before anything is loaded or computed, a model kind or option this method cannot use
        (:class:`~biascore.contract.options.OptionError`, one line)."""
        if model_kind not in self.model_kinds and self.load_kind == "auto":
            raise NotApplicable(f"{self.name} needs a {' or '.join(self.model_kinds)} model; this one is {model_kind}")

    def refuse_served(self, name: str) -> None:
        """The one-line refusal of the served model ``name`` when this method needs the model's weights."""
        if self.needs_model and not self.runs_served:
            raise NotApplicable(
                f"{self.name} needs the model's weights in this process (masked-LM scoring, hidden states or "
                f"gradients); {name} is served and gives only prompt log-probabilities — load the model "
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

    def drawn(self, result: Any) -> list[TypedView]:
        """The typed views a page draws ``result`` as (:mod:`biascore.contract.views`; the dashboard's kit draws
        each, with its exports): by default the declared ``views`` of the summary table or the frame. A method with
        richer results returns more (e.g. a :class:`~biascore.contract.views.PairTable` whose rows open each pair's
        :class:`~biascore.contract.views.TokenSalience`), and its generated page draws them."""
        summary = self.summary(result) if any(v.frame == "summary" for v in self.views) else None
        return [v.typed(summary if v.frame == "summary" else result.frame,
                        f"{self.name}_{result.input_name}_{i}".replace("/", "_")) for i, v in enumerate(self.views)]

    def headline(self, options: Options) -> Headline | None:
        """The :class:`~biascore.contract.presentation.Headline` a result with these ``options`` is read by, or None.
        A page shows it as a metric; one taken from the ``all`` row of a summary per ``bias_type``
        (``where=(("bias_type", "all"),)``) is also the score of tables that put several models side by side (a
        sweep's Overview: one row per model × input × name, one column per bias type; the summary must also have
        ``n``). Methods without one show their summary table as it is."""
        return None

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
        """Input checks that need the options (e.g. an unknown nationality code); :class:`~biascore.contract.options.OptionError`."""
