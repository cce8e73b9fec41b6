"""A method's options: the :func:`option` fields of its frozen ``Options`` dataclass, their specs
(:class:`OptionSpec`: type, default, help, choices and bounds, whether the option changes the cached result)
and their one validation (:meth:`Options.build`, one-line :class:`OptionError`), from which the CLI's flags,
the Python API's keyword arguments and the dashboard's controls are all made."""
from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Sequence


class OptionError(ValueError):
    """An option value that cannot be used; the message is one line naming the option (its CLI flag)."""


def option(default: Any = dataclasses.MISSING, *, help: str, choices: Sequence | None = None,
           minimum: float | None = None, maximum: float | None = None, exclusive: bool = False, key: bool = True,
           convention: bool = False, flag: str | None = None, parse: Callable[[str], Any] | None = None,
           repeat: bool = False, metavar: str | None = None, default_factory: Callable[[], Any] | None = None):
    """A field of a method's ``Options`` dataclass. ``key`` — the option changes the cached frame (part of the cache
    key); False for options that only shape the summary or the printout; ``convention`` — shown with every result as a
    convention that changes the numbers (e.g. the JSD variant). ``minimum``/``maximum`` bound a number (``exclusive``
    for strict bounds); ``choices`` lists the allowed values. CLI only: ``flag`` replaces ``--<name-with-dashes>``,
    ``parse`` reads one command-line word, ``repeat`` makes a tuple option take several words (``--x a b``), ``metavar``
    names the value in ``--help``."""
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
        """The value type without ``None`` and without the tuple around a repeated option (a ``Literal``'s: the
        type of its values)."""
        t = _item_type(self.type)
        if typing.get_origin(t) is typing.Literal:
            kinds = {type(v) for v in typing.get_args(t)}
            return kinds.pop() if len(kinds) == 1 else str
        return t if isinstance(t, type) else str

    @property
    def is_tuple(self) -> bool:
        return typing.get_origin(_without_none(self.type)) is tuple

    @property
    def optional(self) -> bool:
        t = self.type
        return typing.get_origin(t) in (typing.Union, types.UnionType) and type(None) in typing.get_args(t)


def _item_type(t: Any) -> Any:
    """The annotation of one value: without ``None`` and without the tuple around a repeated option."""
    t = _without_none(t)
    return _without_none(typing.get_args(t)[0]) if typing.get_origin(t) is tuple else t


def _without_none(t: Any) -> Any:
    if typing.get_origin(t) in (typing.Union, types.UnionType):
        rest = [a for a in typing.get_args(t) if a is not type(None)]
        return rest[0] if len(rest) == 1 else t
    return t


@dataclass(frozen=True)
class Options:
    """Base class of every method's options (subclasses are ``@dataclass(frozen=True)``)."""

    @classmethod
    def specs(cls) -> list[OptionSpec]:
        hints = typing.get_type_hints(cls)
        out = []
        for f in dataclasses.fields(cls):
            m = f.metadata
            default = f.default if f.default is not dataclasses.MISSING else (
                f.default_factory() if f.default_factory is not dataclasses.MISSING else None)
            item = _item_type(hints[f.name])  # a Literal's values are its choices (also inside | None or a tuple)
            choices = m.get("choices")
            if choices is None and typing.get_origin(item) is typing.Literal:
                choices = tuple(typing.get_args(item))
            out.append(OptionSpec(f.name, hints[f.name], default, m.get("help", ""), choices, m.get("minimum"),
                                  m.get("maximum"), bool(m.get("exclusive")), m.get("key", True),
                                  bool(m.get("convention")), m.get("flag") or "--" + f.name.replace("_", "-"),
                                  m.get("parse"), bool(m.get("repeat")), m.get("metavar")))
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
    def from_values(cls, values: dict) -> "Options":
        """Options from :meth:`as_dict`'s values read back from JSON (lists back to tuples), validated;
        names this class does not have are refused (:class:`OptionError`)."""
        specs = {s.name: s for s in cls.specs()}
        unknown = sorted(set(values) - set(specs))
        if unknown:
            raise OptionError(f"unknown option(s) {', '.join(unknown)}")
        return cls(**{name: _from_json(specs[name], v) for name, v in values.items()}).validate()

    @classmethod
    def from_meta(cls, meta: dict) -> "Options":
        """The options of a stored result, rebuilt from its key metadata (options outside the key: defaults)."""
        return cls(**{s.name: _from_json(s, meta[s.name]) for s in cls.specs() if s.key and s.name in meta})


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
            below = low is not None and (item <= low if s.exclusive else item < low)
            above = high is not None and (item >= high if s.exclusive else item > high)
            if below or above:
                raise OptionError(f"{where}: must be {bounds_text(low, high, s.exclusive)}, got {item:g}")
        elif s.base is str and not isinstance(item, str):
            raise OptionError(f"{where}: expected text, got {item!r}")
        if s.choices is not None and item not in s.choices:
            raise OptionError(f"{where}: {item!r} is not one of {', '.join(map(str, s.choices))}")


def parse_text(spec: OptionSpec, text: str) -> Any:
    """One option value from text (``--options`` of a sweep, a dashboard link), read by the option's spec: its own
    ``parse``, else true/false (yes/no, 1/0, on/off) for a switch, a whole number or a number, ``none`` for an
    optional option, comma-separated values for a list option. ``Options.build`` then checks the value (bounds,
    choices); text that is no value of the option's type raises :class:`OptionError` (one line)."""
    if spec.is_tuple:
        return tuple(_parse_one(spec, part.strip()) for part in text.split(",") if part.strip())
    return _parse_one(spec, text.strip())


def _parse_one(spec: OptionSpec, text: str) -> Any:
    if spec.optional and text.lower() in ("none", "null"):
        return None
    if spec.parse is not None:
        try:
            return spec.parse(text)
        except (ValueError, TypeError) as exc:
            raise OptionError(f"{spec.flag}: {exc}") from None
    if spec.base is bool:
        truth = {"true": True, "yes": True, "1": True, "on": True, "false": False, "no": False, "0": False,
                 "off": False}
        if text.lower() not in truth:
            raise OptionError(f"{spec.flag}: expected true or false, got {text!r}")
        return truth[text.lower()]
    if spec.base in (int, float):
        try:
            return spec.base(text)
        except ValueError:
            kind = "a whole number" if spec.base is int else "a number"
            raise OptionError(f"{spec.flag}: expected {kind}, got {text!r}") from None
    return text


def bounds_text(low: float | None, high: float | None, exclusive: bool) -> str:
    """A number's allowed range in words, whichever bounds it has: ``between 0 and 1, exclusive``, ``from 0 to 1``,
    ``above 0``, ``at least 0``, ``below 1``, ``at most 1`` (empty without bounds). The one wording of the range
    for the refusal and the CLI's ``--help``."""
    if low is not None and high is not None:
        return f"between {low:g} and {high:g}, exclusive" if exclusive else f"from {low:g} to {high:g}"
    if low is not None:
        return f"{'above' if exclusive else 'at least'} {low:g}"
    if high is not None:
        return f"{'below' if exclusive else 'at most'} {high:g}"
    return ""
