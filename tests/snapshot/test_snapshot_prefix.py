"""A snapshot carries a causal model's results for both prefix tokens (with their whole-sentence log-likelihoods),
and its identity-only model — which has no tokenizer — finds them: the tokenizer's BOS/EOS facts travel in the
result keys and the manifest."""
from __future__ import annotations

from biascore.core.cache import ResultCache
from biascore.core.datasets import load_benchmark
from biascore.methods.attribution.scorer import logprob_cache_key, score_benchmark
from biascore.snapshot.export import export_snapshot
from biascore.snapshot.standin import standin_handle


def test_snapshot_standin_finds_both_prefix_runs(smollm, data_dir, tmp_path):
    cache = ResultCache(tmp_path / "cache")
    frames = {p: score_benchmark(smollm, "demo", prefix=p, cache=cache) for p in ("published", "lmeval")}
    manifest = export_snapshot(tmp_path / "s.zip", cache=cache, data_dir=data_dir)
    exported = {e["key"]["digest"] for e in manifest["entries"] if e["scorer"] == "attribution"}
    standin = standin_handle("smollm2-135m", manifest["models"]["smollm2-135m"])
    bm = load_benchmark("demo", data_dir)
    for prefix, frame in frames.items():
        key = logprob_cache_key(standin.identity(), bm, None, prefix=prefix)
        assert key == logprob_cache_key(smollm, bm, None, prefix=prefix)
        assert key.digest in exported and frame["ll_more"].notna().all()
