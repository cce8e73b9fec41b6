"""A method's command line, generated from its contract: input flag, ``--limit``, its ``Options`` and ``--out``.

Every option of a method's ``Options`` dataclass becomes one flag (``--name-with-dashes`` unless the option
names its own): booleans are switches, numbers are checked against the option's bounds, choices are
offered as such, tuple options take several values. Values are checked by the same
:meth:`~biascore.contract.options.Options.build` as the Python API's keyword arguments, so the CLI and the API
accept and refuse exactly the same values (the CLI says so in one line, exit code 2).
"""
from __future__ import annotations

import argparse

from biascore.models.args import add_common_args, add_model_args, float_between, int_at_least
from biascore.contract.method import Method
from biascore.contract.options import OptionSpec, bounds_text

#: argparse ``dest`` prefix of the generated option flags (keeps them apart from the shell's own flags)
DEST = "opt__"


def _type(spec: OptionSpec):
    if spec.parse is not None:
        return spec.parse
    if spec.base is int:
        return int_at_least(int(spec.minimum)) if spec.minimum is not None and not spec.exclusive else int
    if spec.base is float:
        if spec.exclusive and spec.minimum is not None and spec.maximum is not None:
            return float_between(spec.minimum, spec.maximum)
        return float
    return str


#: the value's name in ``--help`` by type, when the option names none (never argparse's ``OPT__NAME``)
METAVARS = {int: "N", float: "X", str: "TEXT"}


def describe(spec: OptionSpec) -> str:
    """The option's ``--help`` text from its spec: its meaning, then its default and its bounds or choices,
    e.g. ``bootstrap draws of each interval (default 2000; at least 100)``."""
    facts = []
    if spec.base is bool and not spec.is_tuple:
        facts.append("default on" if spec.default else "default off")
    elif spec.default not in (None, ()):
        shown = " ".join(map(str, spec.default)) if isinstance(spec.default, tuple) else spec.default
        facts.append(f"default {shown}")
    elif "default" not in spec.help.lower():
        facts.append("default: not set")
    bounds = bounds_text(spec.minimum, spec.maximum, spec.exclusive)
    if bounds:
        facts.append(bounds)
    if spec.is_tuple:
        facts.append("several values" if spec.repeat else "repeatable")
    if not spec.key:
        facts.append("shapes the summary only, not the cached result")
    return f"{spec.help} ({'; '.join(facts)})" if facts else spec.help


def add_option_flags(p: argparse.ArgumentParser, method: Method) -> None:
    """One flag per option of ``method.Options``: help, default and bounds from its spec (:func:`describe`)."""
    group = p.add_argument_group(f"options of {method.name}",
                                 "the same names, defaults and bounds as biascore.run(…, name=value) and a "
                                 "sweep's --options " + method.name + ".name=value")
    for spec in method.Options.specs():
        kwargs: dict = {"dest": DEST + spec.name, "default": argparse.SUPPRESS, "help": describe(spec)}
        if spec.base is bool and not spec.is_tuple:
            kwargs["action"] = "store_true"
        else:
            kwargs["type"] = _type(spec)
            if spec.choices is not None:
                kwargs["choices"] = list(spec.choices)
            kwargs["metavar"] = spec.metavar or (None if spec.choices is not None else METAVARS.get(spec.base, "VALUE"))
            if spec.is_tuple:
                kwargs["nargs"] = "+" if spec.repeat else None
                if not spec.repeat:
                    kwargs["action"] = "append"
        group.add_argument(spec.flag, **kwargs)


def add_method_args(p: argparse.ArgumentParser, method: Method) -> None:
    """Everything ``biascore run <method>`` (and the method's own command) takes."""
    kind = method.input_kind
    add_model_args(p)
    add_common_args(p)
    if kind.name != "none":
        p.add_argument(method.input_flag or kind.flag, dest="input", default=kind.default, choices=kind.choices,
                       metavar=None if kind.choices else "NAME",
                       help=f"{kind.help}" + ("" if kind.choices else "; several, comma-separated, run one after "
                                              "the other") + f" (default {kind.default})")
    if kind.first is not None:
        p.add_argument("--limit", type=int_at_least(1), default=None, metavar="N",
                       help="use only the first N rows (default: all; at least 1)")
    if kind.name == "pairs":
        p.add_argument("--columns", nargs="+", default=None, metavar="TARGET=COLUMN",
                       help="your benchmark's column names, e.g. sent_more=stereo sent_less=anti bias_type=category "
                            "(default: the usual names)")
        p.add_argument("--split", default=None, metavar="NAME",
                       help="the split of a datasets folder or cached dataset with several (default: the only one)")
    add_option_flags(p, method)
    if method.compare_flag:
        p.add_argument(method.compare_flag, dest="compare", action="append", default=[], metavar="MODEL",
                       help="another model, run the same way and shown side by side (repeatable)")
    p.add_argument("--out", default=None, metavar="FILE",
                   help="write the result table to this file (.csv, or .parquet; default: print only)")


def option_values(args: argparse.Namespace) -> dict:
    """The option values given on the command line (the rest take the Options defaults)."""
    return {k[len(DEST):]: (tuple(v) if isinstance(v, list) else v) for k, v in vars(args).items()
            if k.startswith(DEST)}


def column_mapping(items: list[str] | None) -> dict[str, str]:
    """``["sent_more=stereo", …]`` as ``{"sent_more": "stereo", …}``; a malformed item is one-line ValueError."""
    out: dict[str, str] = {}
    for item in items or []:
        target, sep, column = item.partition("=")
        if not sep or not target.strip() or not column.strip():
            raise ValueError(f"--columns: expected TARGET=COLUMN (e.g. sent_more=stereo), got {item!r}")
        out[target.strip()] = column.strip()
    return out
