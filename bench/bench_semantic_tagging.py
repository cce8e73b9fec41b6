"""Time USAS tagging of a benchmark's sentences: tagger build, first tagging, cached re-read.

    python bench/bench_semantic_tagging.py [--benchmark crows-en-gso] [--compare-pymusas]

Uses a throw-away cache directory so the first tagging is really computed. ``--compare-pymusas`` also
times pymusas's own (unindexed) MWE lookup on the same sentences and checks the tags are identical.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", default="crows-en-gso")
    parser.add_argument("--compare-pymusas", action="store_true")
    args = parser.parse_args()
    os.environ["BIASCORE_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_tags_")

    t0 = time.perf_counter()
    from biascore.methods.fields import tagging
    from biascore.inputs.datasets import load_benchmark
    t_import = time.perf_counter() - t0

    sentences = list(load_benchmark(args.benchmark).frame["sent_more"])
    t0 = time.perf_counter()
    tagger = tagging.get_tagger("en")
    t_build = time.perf_counter() - t0
    tagging._build_tagger.cache_clear()  # a new process: the parsed lexicons now come from the cache
    t0 = time.perf_counter()
    tagger = tagging.get_tagger("en")
    t_rebuild = time.perf_counter() - t0
    t0, c0 = time.perf_counter(), time.process_time()
    tagged = tagging.tag_sentences(sentences)
    t_tag, c_tag = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    tagging.tag_sentences(sentences)
    t_cached = time.perf_counter() - t0
    print(f"{args.benchmark}: {len(sentences)} sentences, {len(tagged)} distinct; load avg {os.getloadavg()[0]:.1f}")
    print(f"  import            {t_import:6.2f} s")
    print(f"  build tagger      {t_build:6.2f} s  (first time: parses the lexicon files)")
    print(f"  build tagger      {t_rebuild:6.2f} s  (once per process; lexicons from the cache)")
    print(f"  tag (not cached)  {t_tag:6.2f} s  ({c_tag:.2f} s CPU)")
    print(f"  tag (cached)      {t_cached:6.2f} s")
    print(f"  build + tag       {t_rebuild + t_tag:6.2f} s  (a fresh process, lexicons cached)")

    if args.compare_pymusas:
        from pymusas.lexicon_collection import MWELexiconCollection

        nlp = tagger.nlp
        component = nlp.get_pipe("pymusas_rule_based_tagger")
        with nlp.select_pipes(disable=["pymusas_rule_based_tagger"]):
            docs = list(nlp.pipe(sentences))
        rule = component.rules[1]
        indexed = rule.mwe_lexicon_collection
        results = {}
        for label, collection in (("indexed", indexed), ("pymusas", MWELexiconCollection(indexed.to_dictionary()))):
            rule.mwe_lexicon_collection = collection
            t0 = time.perf_counter()
            results[label] = [[tuple(t._.pymusas_tags) for t in component(doc)] for doc in docs]
            print(f"  USAS component only, {label:8s} MWE lookup: {time.perf_counter() - t0:6.2f} s")
        rule.mwe_lexicon_collection = indexed
        print(f"  identical tags: {results['indexed'] == results['pymusas']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
