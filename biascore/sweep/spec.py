"""The sweep spec: which models, which inputs, which methods, how to load; from CLI arguments or a file.

A spec file (YAML, or TOML by the ``.toml`` extension; docs/sweeps.md) holds the command-line options' keys;
options given explicitly override the file's (``--options`` adds to its ``options``). Each model (a name or an
entry with its own load options, :data:`MODEL_OPTIONS`) is one :class:`~biascore.models.spec.ModelSpec`, checked
before any task runs; a model loaded another way is a model of its own (:func:`variant_label`). A task is one
model × one input with every requested method that reads that kind of input.
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biascore.errors import one_line
from biascore.inputs.datasets import aligned_sets
from biascore.contract.method import Method
from biascore.contract.options import OptionError, parse_text
from biascore.methods import discover, get
from biascore.models.precision import resolve_dtype
from biascore.models.spec import ModelSpec, variant_label
from biascore.models.loading import ModelLoadError

#: the spec fields that list inputs of one input kind: field → input kind
INPUT_FIELDS = {"benchmarks": "pairs", "seat_tests": "seat", "labdet_langs": "labdet"}
#: metric names that are summaries of another method (the same result): name → method
ALIASES = {"pll": "attribution", "lmeval": "attribution"}
#: the load options of models loaded in this process that a sweep sets for every model (CLI, spec file)
REACH_OPTIONS = ("quantize", "device_map", "max_memory", "offload_folder")
#: the keys of a spec file's model entry besides ``name``: the load options that may differ per model
MODEL_OPTIONS = REACH_OPTIONS + ("dtype",)


def known_metrics() -> dict[str, str]:
    """Every metric a sweep can run → the input kind it reads (the registered methods, plus ``pll`` and
    ``lmeval``, two more summaries of the attribution method)."""
    kinds = {m.name: m.input_kind.name for m in discover()}
    return {**kinds, **{alias: kinds[target] for alias, target in ALIASES.items()}}


def resolve_metric(metric: str) -> tuple[Method, dict]:
    """The method a sweep metric runs and the options it implies (``pll`` = attribution's PLL score, ``lmeval``
    its lm-eval-compatible score with lm-eval's prefix)."""
    if metric in ("attribution", "pll"):
        return get("attribution"), {"metric": metric}
    if metric == "lmeval":
        return get("attribution"), {"metric": "lmeval", "prefix": "lmeval"}
    return get(metric), {}


def input_kinds() -> dict:
    """Every input kind a registered method reads: name → :class:`~biascore.contract.method.InputKind`."""
    return {m.input_kind.name: m.input_kind for m in discover()}


def input_field(kind: str) -> str:
    """The spec field / CLI option listing inputs of ``kind``: the dedicated fields (``benchmarks``,
    ``seat_tests``, ``labdet_langs``), else ``<kind>_inputs`` (``--logprob-test-inputs``)."""
    named = {k: f for f, k in INPUT_FIELDS.items()}
    return named.get(kind, kind.replace("-", "_") + "_inputs")


def parse_option_args(words: list[str]) -> dict[str, dict[str, Any]]:
    """``METHOD.NAME=VALUE`` words of ``--options`` → ``{method: {name: value}}``, each value read by its spec."""
    out: dict[str, dict[str, Any]] = {}
    for word in words:
        target, eq, text = word.partition("=")
        method_name, dot, name = target.partition(".")
        if not (eq and dot and method_name and name):
            raise SpecError(f"--options takes METHOD.OPTION=VALUE (e.g. labdet.n_boot=500), not {word!r}")
        method = _method_of(method_name)
        specs = {s.name: s for s in get(method).Options.specs()}
        name = name.replace("-", "_")
        if name not in specs:
            raise SpecError(f"--options {word}: {method} has no option {name!r}; it takes: "
                            + (", ".join(specs) or "no options"))
        try:
            out.setdefault(method, {})[name] = parse_text(specs[name], text)
        except OptionError as exc:
            raise SpecError(f"--options {word}: {exc}") from None
    return out


def _method_of(name: str) -> str:
    """The registered method a metric or method name runs (``pll`` and ``lmeval`` are attribution's)."""
    metrics = known_metrics()
    if name not in metrics:
        raise SpecError(f"unknown method {name!r} in options; choose from {', '.join(metrics)}")
    return ALIASES.get(name, name)


class SpecError(ValueError):
    """The sweep spec is unusable; the message says which key and why."""


@dataclass(frozen=True)
class Task:
    """One unit of work: one model on one input with the metrics that input carries."""

    #: the model, parsed and checked once when the sweep spec was (:meth:`SweepSpec.model_specs`); its label
    #: names it in the report (:func:`variant_label`)
    spec: ModelSpec
    kind: str                 # the input kind: "pairs" (a pair benchmark), "seat" (a SEAT test), "labdet" …
    input: str                # benchmark name, SEAT test name or LABDet language code
    metrics: tuple[str, ...]

    @property
    def name(self) -> str:
        """How the task is reported: ``model × input`` (``seat:`` / ``labdet:`` prefixed for those inputs)."""
        where = self.input if self.kind == "pairs" else f"{self.kind}:{self.input}"
        return f"{self.spec.label} × {where}"


@dataclass
class SweepSpec:
    #: model names, or entries ``{name: …, quantize: …, device_map: …, max_memory: …, offload_folder: …, dtype: …}``
    models: list = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=lambda: ["attribution", "pll"])
    seat_tests: list[str] = field(default_factory=list)
    labdet_langs: list[str] = field(default_factory=list)
    inputs: dict[str, list[str]] = field(default_factory=dict)
    #: method name → its option values (validated by the method's ``Options``); attribution's hold for pll/lmeval
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    quantize: str | None = None
    device_map: str | dict | None = None
    max_memory: str | dict | None = None
    offload_folder: str | None = None
    limit: int | None = None
    retries: int = 2
    _specs: list[ModelSpec] | None = field(default=None, init=False, repr=False, compare=False)

    def validate(self) -> "SweepSpec":
        for name, (kinds, what) in _SCALARS.items():
            value = getattr(self, name)
            if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
                raise SpecError(f"'{name}' must be {what}, not {value!r}")
        if not self.models:
            raise SpecError("no models: give --models or 'models:' in the spec file")
        _check_dtype(self.dtype, "dtype")
        self.model_specs()  # every model parsed and checked, before any task runs
        metrics = known_metrics()
        unknown = [m for m in self.metrics if m not in metrics]
        if unknown:
            raise SpecError(f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(metrics)}")
        if not self.metrics:
            raise SpecError("no metrics: give --metrics or 'metrics:' in the spec file")
        if not isinstance(self.inputs, dict) or not all(
                isinstance(v, list) and all(isinstance(x, str) for x in v) for v in self.inputs.values()):
            raise SpecError("'inputs' must map an input kind to a list of names")
        given = self.input_lists()
        for metric in self.metrics:
            kind = metrics[metric]
            if not given.get(kind):
                f = input_field(kind)
                where = f"'{f}:'" if f in INPUT_FIELDS else f"'inputs: {{{kind}: [...]}}'"
                raise SpecError(f"metric {metric} needs its inputs: --{f.replace('_', '-')} (or {where} in the spec "
                                "file)")
        if self.limit is not None and self.limit < 1:
            raise SpecError(f"limit must be a positive number of pairs, not {self.limit}")
        self._validate_options()
        if self.retries < 0:
            raise SpecError(f"retries must be 0 or more, not {self.retries}")
        return self

    def _validate_options(self) -> None:
        """Every method's options through its own ``Options.build`` (with the values a metric implies, e.g.
        ``metric=pll``): unknown names and bad values are refused here, before any task starts."""
        if not isinstance(self.options, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) for k, v in self.options.items()):
            raise SpecError("'options' must map a method name to its option values, e.g. {labdet: {n_boot: 500}}")
        wanted = {ALIASES.get(m, m) for m in self.metrics}
        for name in self.options:
            method = _method_of(name)
            if method not in wanted:
                raise SpecError(f"options given for {name}, which is not among the metrics ({', '.join(self.metrics)})")
        for metric in self.metrics:
            method, implied = resolve_metric(metric)
            try:
                method.Options.build(**{**self.method_options().get(method.name, {}), **implied})
            except OptionError as exc:
                raise SpecError(f"options of {metric}: {exc}") from None

    def input_lists(self) -> dict[str, list[str]]:
        """Input kind → the names to run (the dedicated fields and ``inputs`` together, each once; an aligned set
        named among the benchmarks runs each of its languages' benchmarks)."""
        out: dict[str, list[str]] = {kind: list(names) for kind, names in self.inputs.items()}
        for fname, kind in INPUT_FIELDS.items():
            out[kind] = list(dict.fromkeys(out.get(kind, []) + getattr(self, fname)))
        sets = aligned_sets()  # an aligned set's name stands for its languages' benchmarks
        out["pairs"] = list(dict.fromkeys(b for n in out.get("pairs", []) for b in sets.get(n, {n: n}).values()))
        for kind in input_kinds().values():  # a method's own fixed data (nothing to choose): its one input
            if not kind.selectable and not out.get(kind.name) and kind.default:
                out[kind.name] = [kind.default]
        return out

    def model_specs(self) -> list[ModelSpec]:
        """Every model's description, parsed and checked once (one-line :class:`SpecError`; the first call, from
        :meth:`validate`, parses, later calls answer the same specs): its name with the sweep's load options and a
        spec-file entry's on top, labelled with its own (:func:`variant_label`); each model × options once."""
        if self._specs is None:
            self._specs = list(dict.fromkeys(self._parse(raw) for raw in self.models))
        return self._specs

    def _parse(self, raw) -> ModelSpec:
        if isinstance(raw, str):
            name, own = raw, {}
        elif isinstance(raw, dict) and isinstance(raw.get("name"), str) and raw["name"].strip():
            name, own = raw["name"], {k.replace("-", "_"): v for k, v in raw.items() if k != "name"}
            unknown = sorted(set(own) - set(MODEL_OPTIONS))
            if unknown:
                raise SpecError(f"model {name}: unknown key(s) {', '.join(unknown)}; a model entry takes name, "
                                + ", ".join(MODEL_OPTIONS))
            for key, value in own.items():  # each as the sweep's own value of that key (e.g. quantize: int8)
                types, said = _SCALARS[key]
                if not isinstance(value, types):
                    raise SpecError(f"model {name}: {key} must be {said}, not {value!r}")
        else:
            raise SpecError(f"a model must be a name or an entry {{name: ..., quantize: ...}}, not {raw!r}")
        options = {k: getattr(self, k) for k in REACH_OPTIONS if getattr(self, k) not in (None, "")}
        options.update({k: v for k, v in own.items() if v not in (None, "")})
        dtype = options.pop("dtype", None)
        try:
            spec = ModelSpec.parse(name, device=self.device, dtype=dtype or self.dtype,
                                   trust_remote_code=self.trust_remote_code, **options)
        except (ValueError, ModelLoadError) as exc:  # PlacementError, ServedError too
            raise SpecError(f"model {name}: {one_line(exc, public=False)}") from None
        if dtype is not None:
            if spec.served:
                raise SpecError(f"model {name}: a served model computes in its server's precision; drop its dtype")
            _check_dtype(dtype, f"model {name}: dtype")
        return dataclasses.replace(spec, label=variant_label(spec.label, spec.quantize, dtype, spec.placement))

    def tasks(self) -> list[Task]:
        """Every task, grouped by model (so a local run loads each model once)."""
        metrics = known_metrics()
        inputs = self.input_lists()
        by_kind: dict[str, tuple[str, ...]] = {}
        for m in self.metrics:
            by_kind[metrics[m]] = by_kind.get(metrics[m], ()) + (m,)
        out = []
        for spec in self.model_specs():
            for kind, names in by_kind.items():
                out += [Task(spec, kind, x, names) for x in dict.fromkeys(inputs.get(kind, []))]
        return out

    def method_options(self) -> dict[str, dict]:
        """Option values per registered method (``options`` keyed by ``pll``/``lmeval`` are attribution's)."""
        out: dict[str, dict] = {}
        for name, values in self.options.items():
            out.setdefault(ALIASES.get(name, name), {}).update(values)
        return out


def _check_dtype(dtype: str, what: str) -> None:
    try:
        resolve_dtype(dtype)
    except ValueError as exc:
        raise SpecError(f"{what}: {exc}") from None


_FIELDS = {f.name: f for f in dataclasses.fields(SweepSpec) if f.init}
#: the spec's single values: field -> (accepted types, how the error names them)
_SCALARS = {"limit": ((int, type(None)), "a number of pairs or null"), "retries": ((int,), "a whole number"),
            "device": ((str,), "auto, cpu, cuda or mps"), "dtype": ((str,), "a dtype name"),
            "trust_remote_code": ((bool,), "true or false"), "quantize": ((str, type(None)), "int8, int4 or null"),
            "device_map": ((str, dict, type(None)), "a strategy name, a {module: device} mapping or null"),
            "max_memory": ((str, dict, type(None)), "DEVICE=SIZE pairs (e.g. cpu=300MiB), a mapping or null"),
            "offload_folder": ((str, type(None)), "a folder or null")}
_LISTS = {n for n, f in _FIELDS.items() if f.default_factory is not dataclasses.MISSING
          and n not in ("inputs", "options")}


def read_spec_file(path: str | Path) -> dict:
    """The keys of a YAML or TOML spec file, checked against :class:`SweepSpec`'s fields."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise SpecError(f"spec file not found: {p}")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() == ".toml":
            raw = tomllib.loads(text)
        else:
            import yaml
            raw = yaml.safe_load(text)
    except Exception as exc:  # noqa: BLE001 - any parse error becomes one line naming the file
        raise SpecError(f"cannot parse {p}: {one_line(exc, with_type=True, public=False)}") from exc
    raw = raw or {}
    if not isinstance(raw, dict):
        raise SpecError(f"{p}: expected a mapping of keys (models, benchmarks, metrics, ...)")
    raw = {k.replace("-", "_"): v for k, v in raw.items()}
    if "fast_exact" in raw:
        raise SpecError(f"{p}: fast_exact was removed (slower than float32 on a GPU and a CPU; "
                        "docs/performance.md); drop the key")
    unknown = sorted(set(raw) - set(_FIELDS))
    if unknown:
        raise SpecError(f"{p}: unknown key(s) {', '.join(unknown)}; known: {', '.join(_FIELDS)}")
    for key in _LISTS & set(raw):
        if isinstance(raw[key], str):
            raw[key] = [raw[key]]
        entries = (dict,) if key == "models" else ()  # a model may be an entry with its own load options
        if not isinstance(raw[key], list) or not all(isinstance(x, (str, int, float) + entries) for x in raw[key]):
            raise SpecError(f"{p}: '{key}' must be a list of names" + (" or model entries" if entries else ""))
        raw[key] = [x if isinstance(x, dict) else str(x) for x in raw[key]]
    return raw


def build_spec(file: str | Path | None = None, **overrides) -> SweepSpec:
    """The spec from a file (optional) with explicit values (those not None) on top, validated."""
    values = read_spec_file(file) if file else {}
    for key in ("inputs", "options"):  # mappings: the command line's entries go on top of the file's
        given = overrides.pop(key, None)
        if given and isinstance(values.get(key), dict):
            merged = dict(values[key])
            for k, v in given.items():
                merged[k] = ({**merged[k], **v} if isinstance(merged.get(k), dict) and isinstance(v, dict) else v)
            given = merged
        if given:
            values[key] = given
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SweepSpec(**values).validate()
    except TypeError as exc:  # a wrongly typed value that the dataclass refused
        raise SpecError(str(exc)) from exc
