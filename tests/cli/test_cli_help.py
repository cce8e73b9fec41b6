"""`--help` generated from the specs: every option of every method shows its meaning, default and bounds with a
proper value name (never argparse's ``OPT__NAME`` placeholder), and every flag of every command has help."""
from __future__ import annotations

import argparse
import contextlib
import io
import re

import pytest

from biascore.cli.main import build_parser, main
from biascore.cli.options import describe
from biascore.methods import discover


def _walk(parser: argparse.ArgumentParser, path: list[str]):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, path + [name])
        elif not isinstance(action, argparse._HelpAction):
            yield " ".join(path), action


def help_text(*argv: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*argv, "--help"])
    assert done.value.code == 0
    return " ".join(out.getvalue().split())  # argparse wraps lines: compare with single spaces


def test_every_flag_of_every_command_has_help_and_a_value_name():
    for where, action in _walk(build_parser(), ["biascore"]):
        assert action.help, f"{where} {action.option_strings or action.dest} has no help"
        takes_value = action.option_strings and action.nargs != 0
        if takes_value and not action.choices:
            assert action.metavar and "__" not in action.metavar, f"{where} {action.option_strings}: {action.metavar}"


@pytest.mark.parametrize("method", [m.name for m in discover()])
def test_run_help_shows_every_option_with_its_meaning_default_and_bounds(method):
    text = help_text("run", method)
    assert "OPT__" not in text and "--device {auto,cpu,cuda,mps} where the model runs" in text
    for spec in discover()[[m.name for m in discover()].index(method)].Options.specs():
        assert spec.flag in text
        described = "".join(describe(spec).replace("%%", "%").split())
        assert described in "".join(text.split()), (spec.flag, described)  # argparse may wrap inside a word


def test_the_bounds_and_defaults_read_as_words():
    text = help_text("run", "labdet")
    assert re.search(r"--n-boot N bootstrap draws of each interval \(default 2000; at least 100;", text)
    assert "--alpha X significance level of the Wilcoxon test (default 0.05; between 0 and 1, exclusive;" in text
    assert "--nationalities CODE [CODE ...] only these nationality codes (default: not set; several values)" in text
    assert "--trust-remote-code allow the model's own Python code to run (default off)" in text
    score = help_text("score")
    assert "--fast-exact" not in score or "(default off)" in score
    assert "--jsd {reference,paper}" in score and "(default reference;" in score
