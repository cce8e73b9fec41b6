"""The sweep spec: which models, which inputs, which methods, how to load; from CLI arguments or a file.

A spec file (YAML, or TOML by the ``.toml`` extension) holds the same keys as the command-line options::

    models: [bert-base-uncased, gpt2, ./my-checkpoint]
    metrics: [attribution, pll, lmeval, fields, seat]   # registered methods (`biascore methods`); pll = the PLL
                                              # score, lmeval = the lm-eval-compatible CrowS score (causal LMs)
    benchmarks: [crows-en, crows-en-gso]      # inputs of the methods that read pair benchmarks
    seat_tests: [sent-weat6]                  # inputs of the methods that read SEAT tests (seat, heads, ceat)
    labdet_langs: [en]                        # inputs of labdet
    inputs: {logprob-test: [en-gender-career]}  # inputs of any other input kind, by kind name
    device: auto
    dtype: auto
    limit: null                               # score only the first N pairs of each benchmark
    retries: 2                                # Ray: times a task is retried after its worker died

Command-line options given explicitly override the file's values.

A task is one model × one input: it carries every requested method that reads that kind of input
(``attribution`` and ``pll`` come from the same forward passes, ``fields`` and ``words`` reuse them).
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

#: the spec fields that list inputs of one input kind: field → input kind
INPUT_FIELDS = {"benchmarks": "pairs", "seat_tests": "seat", "labdet_langs": "labdet"}
#: metric names that are summaries of another method (the same result): name → method
ALIASES = {"pll": "attribution", "lmeval": "attribution"}


def known_metrics() -> dict[str, str]:
    """Every metric a sweep can run → the input kind it reads (the registered methods, plus ``pll`` and
    ``lmeval``, two more summaries of the attribution method)."""
    from biascore.methods import discover

    kinds = {m.name: m.input_kind.name for m in discover()}
    return {**kinds, **{alias: kinds[target] for alias, target in ALIASES.items()}}


class SpecError(ValueError):
    """The sweep spec is unusable; the message says which key and why."""


@dataclass(frozen=True)
class Task:
    """One unit of work: one model on one input with the metrics that input carries."""

    model: str
    kind: str                 # the input kind: "pairs" (a pair benchmark), "seat" (a SEAT test), "labdet" …
    input: str                # benchmark name, SEAT test name or LABDet language code
    metrics: tuple[str, ...]

    @property
    def name(self) -> str:
        """How the task is reported: ``model × input`` (``seat:`` / ``labdet:`` prefixed for those inputs)."""
        where = self.input if self.kind == "pairs" else f"{self.kind}:{self.input}"
        return f"{self.model} × {where}"


@dataclass
class SweepSpec:
    models: list[str] = field(default_factory=list)
    benchmarks: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=lambda: ["attribution", "pll"])
    seat_tests: list[str] = field(default_factory=list)
    labdet_langs: list[str] = field(default_factory=list)
    inputs: dict[str, list[str]] = field(default_factory=dict)
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    limit: int | None = None
    retries: int = 2

    def validate(self) -> "SweepSpec":
        for name, kinds, what in _SCALARS:
            value = getattr(self, name)
            if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
                raise SpecError(f"'{name}' must be {what}, not {value!r}")
        if not self.models:
            raise SpecError("no models: give --models or 'models:' in the spec file")
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
                where = next((f"--{f.replace('_', '-')} (or '{f}:' in the spec file)" for f, k in INPUT_FIELDS.items()
                              if k == kind), f"'inputs: {{{kind}: [...]}}' in the spec file")
                raise SpecError(f"metric {metric} needs its inputs: {where}")
        if self.limit is not None and self.limit < 1:
            raise SpecError(f"limit must be a positive number of pairs, not {self.limit}")
        if self.retries < 0:
            raise SpecError(f"retries must be 0 or more, not {self.retries}")
        return self

    def input_lists(self) -> dict[str, list[str]]:
        """Input kind → the names to run (the dedicated fields and ``inputs`` together, each once)."""
        out: dict[str, list[str]] = {kind: list(names) for kind, names in self.inputs.items()}
        for fname, kind in INPUT_FIELDS.items():
            out[kind] = list(dict.fromkeys(out.get(kind, []) + getattr(self, fname)))
        return out

    def tasks(self) -> list[Task]:
        """Every task, grouped by model (so a local run loads each model once)."""
        metrics = known_metrics()
        inputs = self.input_lists()
        by_kind: dict[str, tuple[str, ...]] = {}
        for m in self.metrics:
            by_kind[metrics[m]] = by_kind.get(metrics[m], ()) + (m,)
        out = []
        for model in dict.fromkeys(self.models):
            for kind, names in by_kind.items():
                out += [Task(model, kind, x, names) for x in dict.fromkeys(inputs.get(kind, []))]
        return out

    def method_options(self) -> dict[str, dict]:
        """Option values per method implied by the spec: none today (every spec option is a load option), so each
        method runs with its defaults; the plumbing to the tasks stays for method options a spec may carry."""
        return {}

    def load_options(self) -> dict:
        """Keyword arguments of :func:`biascore.core.models.load_model` shared by every task."""
        return {"device": self.device, "dtype": self.dtype, "trust_remote_code": self.trust_remote_code}


_FIELDS = {f.name: f for f in dataclasses.fields(SweepSpec)}
#: the spec's single values: (field, accepted types, how the error names them)
_SCALARS = [("limit", (int, type(None)), "a number of pairs or null"), ("retries", (int,), "a whole number"),
            ("device", (str,), "auto, cpu, cuda or mps"), ("dtype", (str,), "a dtype name"),
            ("trust_remote_code", (bool,), "true or false")]
_LISTS = {n for n, f in _FIELDS.items() if f.default_factory is not dataclasses.MISSING and n != "inputs"}


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
        raise SpecError(f"cannot parse {p}: {type(exc).__name__}: {exc}".splitlines()[0]) from exc
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
        if not isinstance(raw[key], list) or not all(isinstance(x, (str, int, float)) for x in raw[key]):
            raise SpecError(f"{p}: '{key}' must be a list of names")
        raw[key] = [str(x) for x in raw[key]]
    return raw


def build_spec(file: str | Path | None = None, **overrides) -> SweepSpec:
    """The spec from a file (optional) with explicit values (those not None) on top, validated."""
    values = read_spec_file(file) if file else {}
    values.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SweepSpec(**values).validate()
    except TypeError as exc:  # a wrongly typed value that the dataclass refused
        raise SpecError(str(exc)) from exc
