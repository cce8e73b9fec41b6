"""The lm-eval-compatible metric in sweeps: computed with lm-eval's prefix for a causal model (equal to the single
command), a one-line note for a masked model (the rest of the sweep goes on)."""
from __future__ import annotations

import contextlib
import io

from biascore.cli.main import main
from biascore.store.cache import ResultCache
from biascore.models.loading import load_model, resolve_source
from biascore.methods.attribution.scorer import summarize
from biascore.runs import runner
from biascore.methods import get
from tests.tiny_models import save_random_llama


def test_sweep_lmeval_metric(smollm, tmp_path, hermetic_models):
    masked = str(hermetic_models / "random-mlm")
    llama = save_random_llama(tmp_path / "llama", resolve_source("smollm2-135m").converted_folder)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = main(["sweep", "--models", masked, llama, "--benchmarks", "demo", "--metrics", "pll", "lmeval",
                   "--cache-dir", str(tmp_path / "cache")])
    text = out.getvalue()
    assert rc == 0, text
    single = summarize(runner.run(get("attribution"), load_model(llama), "demo", prefix="lmeval",
                                  cache=ResultCache(tmp_path / "single")).frame, "lmeval")
    row = next(line for line in text.splitlines() if "lm-eval pct_stereotype" in line and llama in line)
    assert f"{single.pct_stereotype.iloc[0]:.2f}" in row.split()
    assert f"note: {masked} × demo: lmeval: this model is a masked LM: lm-evaluation-harness has no CrowS-Pairs" in text
    # published (B, PLL) and lm-eval prefixes differ for SmolLM2's tokenizer: two cached runs
    entries = ResultCache(tmp_path / "cache").entries("attribution")
    assert sorted(e.get("prefix_token", "") for e in entries) == ["", "<|im_end|>", "<|im_start|>"]

