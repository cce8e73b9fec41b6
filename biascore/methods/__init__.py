"""Scorer registry: one module per scorer, each with one obvious entry point.

Each scorer module defines ``NAME`` (its CLI subcommand), ``SUMMARY`` (one line for help and the
dashboard) and ``register_cli(subparsers)``, which adds its subcommand and sets ``func`` to a function
taking the parsed ``argparse.Namespace`` and returning an exit code. The CLI and the dashboard build
their menus from :data:`SCORER_MODULES`, so adding a scorer means adding one module and one line here.
"""
from __future__ import annotations

import importlib
from types import ModuleType

SCORER_MODULES = [
    "biascore.methods.attribution.scorer",   # b(u), S_JSD, B and the CrowS PLL score
    "biascore.methods.attribution.words",    # per word type: count, mean b, 95% interval, share b<0
    "biascore.methods.fields.scorer",        # USAS semantic fields of bias-inducing words
    "biascore.methods.heads.scorer",         # attention-head bias (gradient of |SEAT|)
    "biascore.methods.labdet.scorer",        # LABDet nationality bias
    "biascore.methods.association.scorer",   # WEAT / SEAT / CEAT and log-probability bias
]


def available() -> list[ModuleType]:
    """The scorer modules present in this checkout (a scorer still being written is simply absent)."""
    mods = []
    for name in SCORER_MODULES:
        try:
            mods.append(importlib.import_module(name))
        except ModuleNotFoundError as exc:
            if exc.name != name:  # the module exists but one of its imports is missing: say so
                raise
    return mods
