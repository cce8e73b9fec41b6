"""The sweep spec: which models, which inputs, which metrics, how to load; from CLI arguments or a file.

A spec file (YAML, or TOML by the ``.toml`` extension) holds the same keys as the command-line options::

    models: [bert-base-uncased, gpt2, ./my-checkpoint]
    benchmarks: [crows-en, crows-en-gso]      # pair benchmarks: attribution, pll, lmeval, fields
    metrics: [attribution, pll]               # lmeval: lm-eval-compatible CrowS score (causal models only)
    seat_tests: [sent-weat6]                  # inputs of the seat metric
    labdet_langs: [en]                        # inputs of the labdet metric
    device: auto
    dtype: auto
    fast_exact: false                         # attribution/pll: half-precision pass + float32 re-checks
    limit: null                               # score only the first N pairs of each benchmark
    retries: 2                                # Ray: times a task is retried after its worker died

Command-line options given explicitly override the file's values.

A task is one model × one input: a pair benchmark carries every requested pair metric (``attribution`` and
``pll`` come from the same forward passes, ``fields`` reuses them), a SEAT test the ``seat`` metric, a LABDet
language the ``labdet`` metric.
"""
from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

#: metrics scored on a pair benchmark (one task per model × benchmark carries all of them)
PAIR_METRICS = ("attribution", "pll", "lmeval", "fields")
#: metrics with their own inputs: metric → the spec field that lists those inputs
INPUT_METRICS = {"seat": "seat_tests", "labdet": "labdet_langs"}
METRICS = PAIR_METRICS + tuple(INPUT_METRICS)


class SpecError(ValueError):
    """The sweep spec is unusable; the message says which key and why."""


@dataclass(frozen=True)
class Task:
    """One unit of work: one model on one input with the metrics that input carries."""

    model: str
    kind: str                 # "pairs" (a pair benchmark), "seat" (a SEAT test) or "labdet" (a language)
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
    device: str = "auto"
    dtype: str = "auto"
    trust_remote_code: bool = False
    fast_exact: bool = False
    limit: int | None = None
    retries: int = 2

    def validate(self) -> "SweepSpec":
        for name, kinds, what in _SCALARS:
            value = getattr(self, name)
            if not isinstance(value, kinds) or (bool not in kinds and isinstance(value, bool)):
                raise SpecError(f"'{name}' must be {what}, not {value!r}")
        if not self.models:
            raise SpecError("no models: give --models or 'models:' in the spec file")
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown:
            raise SpecError(f"unknown metric(s) {', '.join(unknown)}; choose from {', '.join(METRICS)}")
        if not self.metrics:
            raise SpecError("no metrics: give --metrics or 'metrics:' in the spec file")
        if any(m in PAIR_METRICS for m in self.metrics) and not self.benchmarks:
            raise SpecError(f"metric(s) {', '.join(m for m in self.metrics if m in PAIR_METRICS)} need "
                            "--benchmarks (or 'benchmarks:' in the spec file)")
        for metric, key in INPUT_METRICS.items():
            if metric in self.metrics and not getattr(self, key):
                raise SpecError(f"metric {metric} needs its inputs: '{key}:' in the spec file or "
                                f"--{key.replace('_', '-')}")
        if self.limit is not None and self.limit < 1:
            raise SpecError(f"limit must be a positive number of pairs, not {self.limit}")
        if "lmeval" in self.metrics and self.fast_exact:
            raise SpecError("metric lmeval needs exact numerics (fast-exact re-checks b(u) and PLL verdicts only); "
                            "drop fast_exact or the lmeval metric")
        if self.retries < 0:
            raise SpecError(f"retries must be 0 or more, not {self.retries}")
        return self

    def tasks(self) -> list[Task]:
        """Every task, grouped by model (so a local run loads each model once)."""
        pair_metrics = tuple(m for m in self.metrics if m in PAIR_METRICS)
        out = []
        for model in dict.fromkeys(self.models):
            if pair_metrics:
                out += [Task(model, "pairs", b, pair_metrics) for b in dict.fromkeys(self.benchmarks)]
            for metric, key in INPUT_METRICS.items():
                if metric in self.metrics:
                    out += [Task(model, metric, x, (metric,)) for x in dict.fromkeys(getattr(self, key))]
        return out

    @property
    def numerics(self) -> str:
        """How attribution/pll log-probabilities are computed (``score_benchmark``'s ``numerics``)."""
        return "fast-exact" if self.fast_exact else "exact"

    def load_options(self) -> dict:
        """Keyword arguments of :func:`biascore.core.models.load_model` shared by every task."""
        return {"device": self.device, "dtype": self.dtype, "trust_remote_code": self.trust_remote_code}


_FIELDS = {f.name: f for f in dataclasses.fields(SweepSpec)}
#: the spec's single values: (field, accepted types, how the error names them)
_SCALARS = [("limit", (int, type(None)), "a number of pairs or null"), ("retries", (int,), "a whole number"),
            ("device", (str,), "auto, cpu, cuda or mps"), ("dtype", (str,), "a dtype name"),
            ("trust_remote_code", (bool,), "true or false"), ("fast_exact", (bool,), "true or false")]
_LISTS = {n for n, f in _FIELDS.items() if f.default_factory is not dataclasses.MISSING}


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
