"""Command-line declarations shared by every command line (the `biascore` CLI and the review, snapshot and sweep
subcommands): one-line parser errors, bounded number types, the model and directory options. A leaf below all
of them (it imports nothing of the CLI or the methods), so that no module outside `biascore/cli/` imports the CLI.

``--data-dir`` overrides BIASCORE_DATA_DIR and ``--cache-dir`` BIASCORE_CACHE_DIR for one command; the model
options are those of :func:`biascore.models.loading.load_model`.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable

from biascore.settings import DEFAULT_MODEL
from biascore.models.quantize import QUANTIZE_CHOICES


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``prog: error: message``, exit code 2), without the usage
    block; ``--help`` still shows the usage."""

    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _bounded(convert, noun: str, ok, refusal: str, name: str) -> Callable[[str], float]:
    """An argparse type: ``convert(text)`` (else "expected {noun}") for which ``ok`` holds (else ``refusal``)."""
    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {noun}, got {text!r}") from None
        if not ok(value):
            raise argparse.ArgumentTypeError(refusal.format(value))
        return value
    parse.__name__ = name
    return parse


def int_at_least(low: int) -> Callable[[str], int]:
    """An argparse type: an integer ≥ ``low`` (e.g. ``--limit 0`` and ``--limit -5`` are refused)."""
    return _bounded(int, "a whole number", lambda v: v >= low, f"must be at least {low}, got {{}}", f"integer ≥ {low}")


def float_between(low: float, high: float) -> Callable[[str], float]:
    """An argparse type: a number strictly between ``low`` and ``high``."""
    return _bounded(float, "a number", lambda v: low < v < high,
                    f"must be between {low:g} and {high:g} (exclusive), got {{:g}}", f"number in ({low:g}, {high:g})")


def add_model_args(p: argparse.ArgumentParser) -> None:
    """The model options every model-based subcommand shares."""
    p.add_argument("--model", default=DEFAULT_MODEL, metavar="MODEL",
                   help="hub id, local folder, .gguf file or embedded alias (smollm2-135m, all-minilm-l6-v2, "
                        f"gemma3-270m); default {DEFAULT_MODEL}")
    p.add_argument("--gguf-file", default=None, metavar="FILE",
                   help="GGUF file name inside --model's folder (default: the first .gguf file of a folder "
                        "without config.json)")
    add_running_args(p)


def add_running_args(p: argparse.ArgumentParser, scope: str = "", quantize: bool = True) -> None:
    """How the named model(s) run: device, dtype, remote code, the reach options (:func:`add_reach_args`, with
    ``scope`` and ``quantize``) and a served model's requests."""
    p.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda", "mps"],
                   help="where the model runs: auto = a CUDA GPU when there is one, else Apple's MPS, else the CPU "
                        "(default auto)" + scope)
    p.add_argument("--dtype", default="auto", metavar="DTYPE",
                   help="auto = fp32 on every device (exact; TF32 off); bf16 / fp16 = fast mode, numbers approximate; "
                        "fp64 = reference numerics for cross-checks (slow) (default auto)" + scope)
    p.add_argument("--trust-remote-code", action="store_true",
                   help="allow the model's own Python code to run (default off)" + scope)
    add_reach_args(p, scope, quantize)
    # a served model's requests (they override its description's ``timeout=`` / ``retries=``)
    p.add_argument("--timeout", type=float_between(0, float("inf")), default=None, metavar="SECONDS",
                   help="served models: seconds one request may take before it is tried again (default 120)")
    p.add_argument("--retries", type=int_at_least(0), default=None, metavar="N",
                   help="served models: tries after the first for a request that times out, cannot connect or "
                        "gets a 5xx/429; the first request that still fails ends the run at once (default 4)")


def add_reach_args(p: argparse.ArgumentParser, scope: str = "", quantize: bool = True) -> None:
    """How a model too large for one device, or with quantized weights, is loaded: ``--device-map``, ``--max-memory``,
    ``--offload-folder`` and ``--quantize`` (models loaded in this process; a served model refuses them). ``scope`` ends
    each help text (e.g. which models they apply to); ``quantize=False`` leaves ``--quantize`` to the caller."""
    p.add_argument("--device-map", default=None, metavar="MAP",
                   help="split the model over devices with accelerate: auto, balanced, sequential, or a JSON "
                        "{module: device} (object or file); numbers equal the one-device run" + scope)
    p.add_argument("--max-memory", default=None, metavar="DEV=SIZE,...",
                   help="per-device budget for --device-map, e.g. cpu=300MiB or 0=20GiB,cpu=60GiB; what does not "
                        "fit goes to disk (implies --device-map auto)" + scope)
    p.add_argument("--offload-folder", default=None, metavar="DIR",
                   help="where disk-offloaded weights go (default: a fresh folder under <cache>/offload/)" + scope)
    if quantize:
        p.add_argument("--quantize", default=None, choices=list(QUANTIZE_CHOICES),
                       help="quantized weights (see docs/performance.md): numbers approximate, labelled "
                            "'approximate (int8 weights)'" + scope)


def spec_from_args(args: argparse.Namespace, name: str | None = None, **given):
    """The model description (:class:`~biascore.models.spec.ModelSpec`) the command's model options give for the
    model ``name`` (default ``--model``; ``given`` replaces some of them, e.g. one model's ``quantize``), parsed
    and checked by :meth:`ModelSpec.parse` as everywhere; a bad value raises a ``ValueError`` that the CLI shows
    in one line (exit 2) before anything loads."""
    from biascore.models.spec import ModelSpec
    options = {k: getattr(args, k, default) for k, default in _SPEC_OPTIONS.items()}
    return ModelSpec.parse(name or args.model, **{**options, **given})


#: the model options a command may have (its parser's attribute names) and their values when it has not
_SPEC_OPTIONS = {"gguf_file": None, "device": "auto", "dtype": "auto", "trust_remote_code": False, "device_map": None,
                 "max_memory": None, "offload_folder": None, "quantize": None, "timeout": None, "retries": None}


def add_common_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", default=None, metavar="DIR",
                   help="benchmark data directory (overrides BIASCORE_DATA_DIR)")
    p.add_argument("--cache-dir", default=None, metavar="DIR",
                   help="result cache directory (overrides BIASCORE_CACHE_DIR)")

