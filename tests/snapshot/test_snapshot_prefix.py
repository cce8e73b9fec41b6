"""A snapshot carries a causal model's results for both prefix tokens (with their whole-sentence log-likelihoods),
and its identity-only model — which has no tokenizer — finds them: the tokenizer's BOS/EOS facts travel in the
result keys and the manifest."""
from __future__ import annotations

from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.inputs.datasets import load_benchmark
from biascore.methods import get
from biascore.snapshot.export import export_snapshot
from biascore.snapshot.standin import standin_handle


def test_snapshot_standin_finds_both_prefix_runs(smollm, data_dir, tmp_path):
    cache = ResultCache(tmp_path / "cache")
    attribution = get("attribution")
    frames = {p: runner.run(attribution, smollm, "demo", prefix=p, cache=cache).frame for p in ("published", "lmeval")}
    manifest = export_snapshot(tmp_path / "s.zip", cache=cache, data_dir=data_dir)
    exported = {e["key"]["digest"] for e in manifest["entries"] if e["scorer"] == "attribution"}
    standin = standin_handle("smollm2-135m", manifest["models"]["smollm2-135m"])
    bm = load_benchmark("demo", data_dir)
    for prefix, frame in frames.items():
        key = runner.selection(attribution, standin, bm, prefix=prefix).key
        assert key == runner.selection(attribution, smollm, bm, prefix=prefix).key
        assert key.digest in exported and frame["ll_more"].notna().all()
