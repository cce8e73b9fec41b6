"""The bias attribution method: b(u), S_JSD and B per pair benchmark, and the CrowS PLL score beside them.

Gamboa & Lee, "A Novel Interpretability Metric for Explaining Bias in Language Models" (§3.3–3.4; formulas
in :mod:`biascore.methods.attribution.scorer` and :mod:`.jsd`), and the Filipino CrowS-Pairs / WinoQueer
paper (Appendix B) for the pseudo-log-likelihood score. The cached frame is log P(u) of every shared token
in both sentences (:data:`~biascore.methods.attribution.scorer.LOGP_COLUMNS`), computed in resumable shards
of pairs; the result frame (b(u), words, S_JSD, verdict, PLL sums) is derived from it for the chosen JSD
variant and cached too.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from biascore.inputs.kinds import PAIRS
from biascore.contract.presentation import Drawing, Headline, View
from biascore.contract.method import Method, NotApplicable
from biascore.contract.options import Options, option
from biascore.contract.schema import Column, columns
from biascore.models.prefix import DEFAULT_PREFIX, PREFIX_CONVENTIONS, PREFIX_HELP, conventions_giving
from biascore.contract.registry import register
from biascore.contract.result import Result
from biascore.models.spec import variant_label
from biascore.runs import runner
from biascore.methods.attribution import compare, lmeval, live, results, scorer, ties, token_view
from biascore.methods.attribution.crows_metric import crows_lines
from biascore.methods.attribution.frame import attribution_frame
from biascore.methods.attribution.jsd import JSD_VARIANTS
from biascore.methods.attribution.lmeval import LABEL as LMEVAL_LABEL, masked_model_message
from biascore.methods.attribution.ties import score_difference, tie_note
from biascore.methods.attribution.pair import PairResult

STORED = columns([
    ("pair_id", "int64", "the pair's id in its benchmark"),
    ("tokens", "list[str]", "the shared tokens U (in the more-biased sentence's order)"),
    ("more_tokens", "list[str]", "every content token of the more-biased sentence"),
    ("less_tokens", "list[str]", "every content token of the less-biased sentence"),
    ("more_spans", "list[int]", "character [start, end) of each more-biased token, flattened"),
    ("less_spans", "list[int]", "character [start, end) of each less-biased token, flattened"),
    ("more_u", "list[int]", "index into U of each more-biased token (-1: modified)"),
    ("less_u", "list[int]", "index into U of each less-biased token (-1: modified)"),
    ("logp_more", "list[float]", "log P(u) in the more-biased sentence, one per token of U (natural log)"),
    ("logp_less", "list[float]", "log P(u) in the less-biased sentence"),
    ("truncated", "bool", "a sentence was cut at the model's input limit"),
    ("skipped_reason", "str", "why the pair was not scored (empty when scored)"),
    ("ll_more", "float64", "causal LMs: whole-sentence log-likelihood Σ_t log P(t | prefix, tokens before t) of the "
                           "more-biased sentence (lm-eval-compatible score); NaN for masked LMs"),
    ("ll_less", "float64", "the same for the less-biased sentence"),
    ("prefix_token_id", "int64", "causal LMs: the token put in front of each sentence (-1 for a masked LM)"),
    ("prefix_token", "str", "its text"),
])

SCHEMA = columns([
    ("pair_id", "int64", "the pair's id in its benchmark"), ("benchmark", "str", "the benchmark's name"),
    ("bias_type", "str", "the pair's bias type"), ("sent_more", "str", "the more-biased sentence"),
    ("sent_less", "str", "the less-biased sentence"), ("tokens", "list[str]", "the shared tokens U"),
    ("bu", "list[float]", "b(u) = d(P_u,more) − d(P_u,less) per token of U; < 0 pushes toward the more-biased sentence"),
    ("words", "list[str]", "the words of the more-biased sentence made of shared tokens only (no modified token)"),
    ("word_spans", "list[int]", "character [start, end) of each word, flattened"),
    ("word_bu", "list[float]", "b of each word = mean b(u) of its shared tokens"),
    ("sjsd", "float64", "S_JSD = mean b(u) over U (NaN when skipped)"),
    ("biased", "bool", "S_JSD < 0: the model prefers the more-biased sentence"),
    ("pll_more", "float64", "Σ_{u∈U} log P(u) in the more-biased sentence (CrowS PLL)"),
    ("pll_less", "float64", "Σ_{u∈U} log P(u) in the less-biased sentence"),
    ("skipped_reason", "str", "why the pair was not scored (empty when scored)"),
    *[c for c in STORED if c.name not in ("pair_id", "tokens", "skipped_reason")],
    ("verdict", "str", "B's verdict: biased (S_JSD < 0), not biased, tie (|S_JSD| ≤ 1e-6) or not scored"),
    ("pll_verdict", "str", "the CrowS PLL score's verdict, on sentence scores rounded to 3 decimals as the CrowS script: "
                           "biased (PLL(more) > PLL(less)), not biased, tie (equal: the script's neutral) or not scored"),
    ("lmeval_verdict", "str", "the lm-eval-compatible score's verdict: biased (ll_more > ll_less), not biased, tie "
                              "(|ll_more − ll_less| ≤ 1e-3) or not scored (masked LMs, fast-exact runs)"),
])
#: the derived frame's layout: part of its cache key (2: the per-score verdict columns; 3: modified words left out)
FRAME_VERSION = 3


@dataclass(frozen=True)
class AttributionOptions(Options):
    jsd: str = option("reference", choices=JSD_VARIANTS, key=False, convention=True,
                      help="reference: d = JSD^(1/4) as the published code; paper: d = sqrt(JSD)")
    metric: str = option("attribution", choices=scorer.METRICS, key=False,
                         help="what the summary shows: attribution = B (%% pairs with S_JSD < 0); pll = the CrowS "
                              "paper's pseudo-log-likelihood bias score over the shared tokens, counted as its "
                              "metric.py does (scores rounded to 3 decimals, equal ones neutral); lmeval = "
                              "lm-evaluation-harness's crows_pairs_english score (whole-sentence log-likelihood; "
                              "causal LMs only; NOT the paper's PLL)")
    prefix: str | None = option(None, choices=PREFIX_CONVENTIONS, key=False,
                                help="causal LMs: the token in front of each sentence. " + "; ".join(
                                    f"{k}: {v}" for k, v in PREFIX_HELP.items()) + ". Default: published "
                                    "(lmeval with --metric lmeval). The token itself is part of the cache key")

    @property
    def prefix_convention(self) -> str:
        """The prefix convention in force: the option, else lm-eval's for the lmeval metric, else published."""
        return self.prefix or ("lmeval" if self.metric == "lmeval" else DEFAULT_PREFIX)


@register
class Attribution(Method):
    name = "attribution"
    #: the token and overview pages draw with these: the cached runs, a pair's token and word units, the tie
    #: labels, the live queue and lm-eval's caption
    class drawing(Drawing):
        cached_runs = results.cached_runs
        best_runs = results.best_runs
        lmeval_runs = results.lmeval_runs
        load_run = results.load_run
        pair_table = token_view.pair_table
        pairs = token_view.pairs
        salience = token_view.salience
        verdict_label = ties.verdict_label
        verdict_text = ties.verdict_text
        score_live = live.score_live
        live_busy = live.busy
        lmeval_caption = lmeval.CAPTION
        LmevalUnavailable = lmeval.LmevalUnavailable
    command = "score"
    order = 10
    summary_line = "bias attribution b(u), S_JSD, B and the CrowS PLL score on a pair benchmark"
    paper = ("Gamboa & Lee, A Novel Interpretability Metric for Explaining Bias in Language Models, §3.3–3.4; "
             "CrowS PLL: Filipino CrowS-Pairs and WinoQueer, Appendix B")
    formula = "b(u) = d(P_u,more) − d(P_u,less); S_JSD = mean_u b(u); B = 100 · share of pairs with S_JSD < 0"
    input_kind = PAIRS
    Options = AttributionOptions
    schema = SCHEMA
    stored_schema = STORED
    model_kinds = ("masked", "causal")
    runs_served = True  # causal prompt log-probabilities are all it needs
    shard_size = scorer.SHARD_PAIRS
    gpu_shard_size = scorer.GPU_SHARD_PAIRS
    one_row_per_input_row = True
    cache_derived = True
    result_type = PairResult
    views = (View("bar", title="B by bias type (95% Wilson interval)", label="bias_type", value="score",
                  low="ci_low", high="ci_high", reference=50.0), View("table"))

    def check(self, model_kind: str, loaded, options: AttributionOptions) -> None:
        super().check(model_kind, loaded, options)
        if options.metric == "lmeval" and model_kind != "causal":
            raise NotApplicable(masked_model_message("this model") if model_kind == "masked" else
                                f"the lm-eval-compatible CrowS score needs a causal LM; this model is {model_kind}")

    def model_key_parts(self, identity, options: AttributionOptions) -> dict:
        """A causal model's prefix token under the chosen convention (id, text, every convention giving it, the
        tokenizer's BOS/EOS facts: :mod:`biascore.models.prefix`); conventions giving one token share a result."""
        return scorer.prefix_key_parts(identity, options.prefix_convention)

    def compute(self, ctx, loaded, options: AttributionOptions) -> pd.DataFrame:
        return scorer.compute_logprobs(ctx.model(), loaded.frame, progress=ctx.progress,
                                       prefix=options.prefix_convention)

    def conventions(self, ctx, loaded, options: AttributionOptions) -> dict:
        lm = ctx.model()
        if lm.kind != "causal":
            return {"context": "masked LM: each token of U masked in turn, the rest of the sentence kept"}
        token = lm.prefix_token(options.prefix_convention)
        return {"prefix_token": token.text, "prefix_token_id": token.id,
                "prefix_conventions": ",".join(conventions_giving(lm.special_tokens(), token.id))}

    def derive(self, ctx, stored: pd.DataFrame, loaded, options: AttributionOptions) -> pd.DataFrame:
        return attribution_frame(loaded, stored.sort_values("pair_id").reset_index(drop=True), options.jsd)

    def derive_key_parts(self, options: AttributionOptions) -> dict:
        return {"jsd": options.jsd, "frame_version": FRAME_VERSION}

    def summary(self, result: Result) -> pd.DataFrame:
        return scorer.summarize(result.frame, result.options.metric)

    #: the headline per ``--metric``: the summary's score column overall, read per bias type (a sweep's Overview)
    HEADLINES = {
        "attribution": Headline("B", "score", "% of pairs whose S_JSD < 0; 50 = unbiased, above 50 = prefers the "
                                "more-biased sentence", where=(("bias_type", "all"),)),
        "pll": Headline("PLL", "score", "% of pairs whose pseudo-log-likelihood (rounded to 3 decimals) prefers the "
                        "more-biased sentence; 50 = unbiased", where=(("bias_type", "all"),)),
        "lmeval": Headline(LMEVAL_LABEL, "pct_stereotype", "% of pairs whose whole-sentence log-likelihood prefers "
                           "the more-biased sentence; 50 = unbiased", where=(("bias_type", "all"),))}

    def drawn(self, result: Result) -> list:
        """The B chart, and the pairs, each opening its b(u) heatmap and ranked units (the Token attributions
        page's views)."""
        return [*super().drawn(result), token_view.pairs(result.frame)]

    def headline(self, options: AttributionOptions) -> Headline:
        return self.HEADLINES[options.metric]

    def report(self, result: Result) -> list[str]:
        frame, metric = result.frame, result.options.metric
        label = {"attribution": "B (% pairs with S_JSD < 0)",
                 "pll": "PLL bias score, CrowS paper and script (% pairs with Σ_U log P(more) > Σ_U log P(less), "
                        "both rounded to 3 decimals)",
                 "lmeval": f"{LMEVAL_LABEL} (lm-eval-compatible, NOT the CrowS paper's PLL: % pairs whose whole "
                           "sentence is more likely in its stereotyped version)"}[metric]
        summary = self.summary(result).assign(precision=result.precision)  # the CLI's precision line says more
        lines = [f"{result.model} on {result.input_name} ({result.precision}) — {label}; 50 = unbiased",
                 self._prefix_line(result)]
        if metric == "lmeval":
            lines.append("stderr: standard error of the mean, as lm-eval reports it (pct_stereotype in %, "
                         "likelihood_diff in nats)")
            fmt = {c: (lambda x: f"{x:.4f}") for c in ("likelihood_diff", "likelihood_diff_stderr")}
            lines.append(summary.to_string(index=False, formatters=fmt, float_format=lambda x: f"{x:.2f}"))
        else:
            lines += ["intervals: 95% Wilson score interval (binomial proportion)",
                      summary.to_string(index=False, float_format=lambda x: f"{x:.2f}")]
        if metric == "pll":
            lines += crows_lines(frame[frame["skipped_reason"] == ""])
        n_ties = int(summary["ties"].iloc[0])
        if n_ties:
            scored = frame if metric == "lmeval" else frame[frame["skipped_reason"] == ""]
            lines.append(tie_note(n_ties, int((score_difference(scored, metric) == 0).sum()), metric))
        skipped = frame[frame["skipped_reason"] != ""]
        if len(skipped):
            lines.append(f"\n{len(skipped)} pair(s) skipped and kept in the output with skipped_reason:")
            lines += [f"  {n:5d}  {reason}" for reason, n in skipped["skipped_reason"].value_counts().items()]
        n_trunc = int(frame["truncated"].sum())
        if n_trunc:
            lines.append(f"{n_trunc} pair(s) had a sentence longer than the model's input limit and were truncated")
        return lines

    @staticmethod
    def _prefix_line(result: Result) -> str:
        """The token put in front of each sentence (conventions are printed with every result)."""
        conv, prefix = result.conventions, result.options.prefix_convention
        if "prefix_token_id" not in conv:
            return ("prefix token: none (masked LM: the tokenizer's own special tokens frame each sentence)"
                    + (f"; --prefix {prefix} applies to causal LMs only" if result.options.prefix else ""))
        line = (f"prefix token: {conv['prefix_token']!r} (id {conv['prefix_token_id']}; --prefix {prefix}: "
                f"{PREFIX_HELP[prefix]})")
        if result.options.metric == "lmeval" and "lmeval" not in str(conv.get("prefix_conventions", "")):
            line += "; not lm-eval's prefix token, so these are not lm-eval's numbers"
        return line


@dataclass(frozen=True)
class PairedOptions(Options):
    against: str = option("", metavar="DIGEST", help="model A: the digest of its stored attribution result on this "
                          "benchmark (deltas: this model − A); empty: this model's own, a check (every delta 0)")
    prefix: str | None = option(None, choices=PREFIX_CONVENTIONS, help="this model's prefix convention (causal LMs)")
    jsd: str = option("reference", choices=JSD_VARIANTS, convention=True, help="the JSD variant of S_JSD, both sides")
    n_boot: int = option(compare.N_BOOT, minimum=100, help="bootstrap resamples")
    seed: int = option(0, help="seed of the bootstrap")
    level: float = option(0.95, minimum=0, maximum=1, exclusive=True, help="confidence level of the intervals")


@register
class Paired(Method):
    """Two attribution results on one benchmark compared pair by pair (:mod:`.compare`, as ``biascore compare``):
    read from the stored results, never loading a model, and stored like any result, so every viewer shares it."""

    name = "attribution-paired"
    order = 11
    summary_line = "paired comparison of two models' attribution results: B, PLL and lm-eval deltas, bootstrap, McNemar"
    paper = "Dror et al., The Hitchhiker's Guide to Testing Statistical Significance in NLP (paired bootstrap, McNemar)"
    formula = "delta = score(this model) − score(A) on the pairs both scored; paired percentile bootstrap; McNemar exact"
    input_kind = PAIRS
    Options = PairedOptions
    schema = columns([
        ("bias_type", "str", "a bias type, or all"), ("n", "int64", "pairs both scored"),
        ("score_a", "float64", "B of model A on them"), ("score_b", "float64", "B of this model on them"),
        ("delta", "float64", "score_b − score_a"), ("ci_low", "float64", "paired bootstrap interval of delta"),
        ("ci_high", "float64", "its upper end"), ("n_discordant", "int64", "pairs counted by one model only"),
        ("mcnemar_p", "float64", "McNemar's exact test on them"), ("mcnemar_p_holm", "float64", "Holm across bias types"),
        ("sjsd_delta", "float64", "mean paired S_JSD difference"), ("pll_delta", "float64", "the PLL score's delta")])
    model_kinds = ("masked", "causal")
    needs_model = False  # two stored attribution results are all it reads
    runs_served = True

    def compute(self, ctx, bench, options: PairedOptions) -> pd.DataFrame:
        entry = next((s for s in runner.stored(Attribution(), cache=ctx.cache) if s.digest == options.against), None)
        if options.against and entry is None:  # refused before this model's own result is read or computed
            raise ValueError(f"--against {options.against}: no stored attribution result has this digest")
        b = ctx.run(Attribution(), bench, prefix=options.prefix, jsd=options.jsd)
        a = b if entry is None else runner.open_stored(Attribution(), entry, cache=ctx.cache, data_dir=ctx.data_dir,
                                                       jsd=options.jsd)
        ctx.used["attribution (A)"] = a.digest
        names = tuple(variant_label(r.model, r.meta.get("weights") or None) for r in (a, b))  # as the pages name them
        out = compare.compare_results(a, b, n_boot=options.n_boot, seed=options.seed, level=options.level, names=names)
        ctx.recorded.update(method_line=out.describe(), notes=list(out.notes))
        return out.summary()
