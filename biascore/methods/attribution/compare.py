"""Paired comparison of two models on the same pair benchmark: B, the CrowS PLL score and the lm-eval-compatible
score of model B minus model A, pair by pair (docs/scores.md, "Comparing two models": the intervals on small
groups, McNemar's ties, the precision of each side).

On the pairs **both** results scored, per bias type and ``all``: ``score_a``, ``score_b``; ``delta`` = score_b −
score_a with a paired percentile bootstrap interval (``ci_low``, ``ci_high``;
:func:`biascore.stats.paired.paired_bootstrap_ci`); McNemar's exact test on the discordant pairs (``a_only``,
``b_only``, ``n_discordant``; delta = 100 · (b_only − a_only) / n exactly; :func:`biascore.stats.paired.mcnemar_exact`,
``mcnemar_p``) with ``mcnemar_p_holm``, Holm's adjustment across the bias types (``all`` keeps its own p);
``sjsd_delta`` = mean over pairs of S_JSD(B) − S_JSD(A) with its paired bootstrap interval; ``precision_a`` /
``precision_b`` (:func:`biascore.models.precision.precision_of`) and ``ties_a`` / ``ties_b``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from biascore.contract.result import html_card
from biascore.models.precision import Precision, precision_of
from biascore.methods.attribution.ties import score_difference, verdicts
from biascore.stats.paired import holm, mcnemar_exact, paired_bootstrap_ci

#: the scores compared: metric name → (column prefix in the wide summary, label)
SCORES = {"attribution": ("", "B"), "pll": ("pll_", "PLL"), "lmeval": ("lmeval_", "lm-eval pct_stereotype")}
LONG_COLUMNS = ["score", "bias_type", "n", "score_a", "score_b", "delta", "ci_low", "ci_high", "a_only", "b_only",
                "n_discordant", "mcnemar_p", "mcnemar_p_holm", "ties_a", "ties_b"]
N_BOOT = 2000


def counted(frame: pd.DataFrame, metric: str) -> pd.Series:
    """Whether each pair is counted by ``metric``'s score (S_JSD < 0; rounded PLL(more) > PLL(less);
    ll_more > ll_less): the outcome McNemar's test compares."""
    if metric == "attribution":
        return frame["sjsd"].astype(float) < 0
    return score_difference(frame, metric) > 0


def matched_pairs(frame_a: pd.DataFrame, frame_b: pd.DataFrame, same_sentences: bool = True) -> pd.DataFrame:
    """The pairs both frames scored, side by side (suffixes ``_a``, ``_b``), by pair id. A pair id present in both
    with different sentences means two different benchmarks: refused with one line — unless ``same_sentences`` is
    False (two languages of an aligned set, joined by their alignment key: the sentences differ by design)."""
    keep = ["pair_id", "bias_type", "sent_more", "sent_less", "sjsd", "pll_more", "pll_less", "ll_more", "ll_less",
            "skipped_reason"]
    a = frame_a.reindex(columns=keep)
    b = frame_b.reindex(columns=keep)
    joined = a.merge(b, on="pair_id", suffixes=("_a", "_b"))
    differ = (joined.sent_more_a != joined.sent_more_b) | (joined.sent_less_a != joined.sent_less_b)
    if same_sentences and differ.any():
        raise ValueError(f"the two results are not on the same pairs: pair {int(joined.pair_id[differ].iloc[0])} "
                         "has different sentences (compare results on one benchmark)")
    if joined.empty:
        raise ValueError("the two results share no pair ids (compare results on one benchmark)")
    scored = (joined.skipped_reason_a.fillna("") == "") & (joined.skipped_reason_b.fillna("") == "")
    joined = joined[scored].rename(columns={"bias_type_a": "bias_type"}).reset_index(drop=True)
    return joined


def _side(joined: pd.DataFrame, suffix: str) -> pd.DataFrame:
    cols = ["sjsd", "pll_more", "pll_less", "ll_more", "ll_less"]
    return joined[[f"{c}{suffix}" for c in cols]].set_axis(cols, axis=1).assign(skipped_reason="")


@dataclass
class Comparison:
    """Model B against model A on the pairs both scored (see the module docstring)."""

    model_a: str
    model_b: str
    benchmark: str
    #: one row per score × group (columns :data:`LONG_COLUMNS`)
    table: pd.DataFrame
    #: per group: the mean paired S_JSD difference and its interval
    sjsd: pd.DataFrame
    n_boot: int = N_BOOT
    seed: int = 0
    level: float = 0.95
    notes: list[str] = field(default_factory=list)
    #: each side's precision label (``exact (float32)``, ``approximate (int8 weights)``, ``served (…)``); "" unknown
    precision_a: str = ""
    precision_b: str = ""
    #: the pairs whose B verdicts differ (counted by one side only): pair_id, bias_type, sjsd_a, sjsd_b
    discordant: pd.DataFrame = field(default_factory=pd.DataFrame)

    def summary(self) -> pd.DataFrame:
        """One row per bias type plus ``all``: B's columns of :data:`LONG_COLUMNS`, the mean paired S_JSD
        difference (``sjsd_delta``, ``sjsd_ci_low``, ``sjsd_ci_high``) and the same columns of the PLL score
        (``pll_…``) and, when both models have it, the lm-eval-compatible score (``lmeval_…``)."""
        out = None
        for metric, (prefix, _) in SCORES.items():
            part = self.table[self.table.score == metric].drop(columns="score")
            if part.empty:
                continue
            if prefix:
                part = part.drop(columns="n").rename(columns={c: prefix + c for c in part.columns if c != "bias_type"})
            out = part if out is None else out.merge(part, on="bias_type", how="left")
            if metric == "attribution":
                out = out.merge(self.sjsd, on="bias_type", how="left")
        if self.precision_a or self.precision_b:
            out = out.assign(precision_a=self.precision_a, precision_b=self.precision_b)
        return out.reset_index(drop=True)

    def describe(self) -> str:
        def side(model: str, precision: str) -> str:
            return f"{model} [{precision}]" if precision else model

        return (f"B = {side(self.model_b, self.precision_b)} against A = {side(self.model_a, self.precision_a)} on "
                f"{self.benchmark or 'the same pairs'} (delta = B − A), "
                "paired over the pairs both scored; "
                f"{int(self.level * 100)}% paired percentile bootstrap ({self.n_boot} resamples, seed {self.seed}); "
                "McNemar's exact test on the discordant pairs (ties counted as each score counts them); "
                "Holm-adjusted across bias types (mcnemar_p_holm; the 'all' row unadjusted)")

    def report_lines(self) -> list[str]:
        """What ``biascore compare`` prints: the method line, one table per score, the S_JSD line, notes."""
        lines = [self.describe()]
        fmt = {"mcnemar_p": lambda x: f"{x:.3g}", "mcnemar_p_holm": lambda x: f"{x:.3g}"}
        for metric, (_, label) in SCORES.items():
            part = self.table[self.table.score == metric].drop(columns="score")
            if part.empty:
                continue
            lines += ["", f"{label} (% of pairs; 50 = unbiased): score_a = A, score_b = B, delta = B − A",
                      part.to_string(index=False, formatters=fmt, float_format=lambda x: f"{x:.2f}")]
        lines += ["", "mean paired S_JSD difference (B − A)",
                  self.sjsd.to_string(index=False, float_format=lambda x: f"{x:.5f}")]
        lines += [f"note: {n}" for n in self.notes]
        return lines

    def _repr_html_(self) -> str:
        return html_card(self.describe(), self.summary())

    def __repr__(self) -> str:
        return f"<Comparison {self.model_b} − {self.model_a} on {self.benchmark}; {len(self.sjsd) - 1} bias type(s)>"


def precision_notes(model_a: str, precision_a: Precision | None, model_b: str,
                    precision_b: Precision | None) -> list[str]:
    """One note per side of a comparison whose numbers are not exact, naming the side and the other side's
    precision (none when both are exact or unknown)."""
    if precision_a is not None and precision_b is not None and not precision_a.exact \
            and precision_a.label == precision_b.label:
        return [f"both sides are {precision_a.label}: {precision_a.note}"]
    notes = []
    for name, model, mine, theirs in (("A", model_a, precision_a, precision_b), ("B", model_b, precision_b, precision_a)):
        if mine is None or mine.exact:
            continue
        other = theirs.label if theirs is not None else "of unknown precision"
        notes.append(f"{name} = {model} is {mine.label} while the other side is {other}: delta = B − A holds "
                     f"{name}'s numerical error beside any difference between the models ({mine.note})")
    return notes


def compare_frames(frame_a: pd.DataFrame, frame_b: pd.DataFrame, *, model_a: str = "A", model_b: str = "B",
                   benchmark: str = "", lmeval: bool = True, n_boot: int = N_BOOT, seed: int = 0,
                   level: float = 0.95, precision_a: Precision | None = None,
                   precision_b: Precision | None = None, same_sentences: bool = True) -> Comparison:
    """Compare two attribution frames pair by pair (module docstring). ``lmeval=False`` leaves the
    lm-eval-compatible score out (e.g. when a model's prefix token is not lm-eval's). ``precision_a`` /
    ``precision_b``: each result's precision (:func:`biascore.models.precision.precision_of`), named in the
    method line, the summary and a note for a side that is not exact. ``same_sentences``: :func:`matched_pairs`."""
    if n_boot < 100:
        raise ValueError(f"n_boot must be at least 100, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be between 0 and 1, got {level}")
    joined = matched_pairs(frame_a, frame_b, same_sentences)
    side_a, side_b = _side(joined, "_a"), _side(joined, "_b")
    flips = (counted(side_a, "attribution") != counted(side_b, "attribution")).to_numpy()
    groups = [("all", np.ones(len(joined), dtype=bool))] + [
        (g, (joined.bias_type == g).to_numpy()) for g in sorted(joined.bias_type.astype(str).unique())]
    notes = []
    metrics = ["attribution", "pll"]
    has_ll = side_a[["ll_more", "ll_less"]].notna().all(axis=1) & side_b[["ll_more", "ll_less"]].notna().all(axis=1)
    if lmeval and has_ll.any():
        metrics.append("lmeval")
        if not has_ll.all():
            notes.append(f"lm-eval score on the {int(has_ll.sum())} pairs with whole-sentence log-likelihoods in both")
    rows = []
    for metric in metrics:
        usable = has_ll.to_numpy() if metric == "lmeval" else np.ones(len(joined), dtype=bool)
        ca, cb = counted(side_a, metric).to_numpy(), counted(side_b, metric).to_numpy()
        ta = (verdicts(side_a, metric) == "tie").to_numpy()
        tb = (verdicts(side_b, metric) == "tie").to_numpy()
        first = len(rows)
        for name, mask in groups:
            m = mask & usable
            a, b = 100.0 * ca[m], 100.0 * cb[m]
            n = int(m.sum())
            lo, hi = paired_bootstrap_ci(a, b, n_boot=n_boot, level=level, seed=seed)
            a_only, b_only, p = mcnemar_exact(ca[m], cb[m])
            rows.append({"score": metric, "bias_type": name, "n": n, "score_a": a.mean() if n else np.nan,
                         "score_b": b.mean() if n else np.nan, "delta": (b.mean() - a.mean()) if n else np.nan,
                         "ci_low": lo, "ci_high": hi, "a_only": a_only, "b_only": b_only,
                         "n_discordant": a_only + b_only, "mcnemar_p": p if n else np.nan, "mcnemar_p_holm": np.nan,
                         "ties_a": int(ta[m].sum()), "ties_b": int(tb[m].sum())})
        family = [r["mcnemar_p"] for r in rows[first + 1:]]
        for r, adjusted in zip(rows[first + 1:], holm(family)):
            r["mcnemar_p_holm"] = float(adjusted)
        rows[first]["mcnemar_p_holm"] = rows[first]["mcnemar_p"]
    sjsd_rows = []
    for name, mask in groups:
        a, b = side_a.sjsd.to_numpy()[mask], side_b.sjsd.to_numpy()[mask]
        lo, hi = paired_bootstrap_ci(a, b, n_boot=n_boot, level=level, seed=seed)
        sjsd_rows.append({"bias_type": name, "sjsd_delta": float(np.mean(b - a)) if len(a) else np.nan,
                          "sjsd_ci_low": lo, "sjsd_ci_high": hi})
    n_a, n_b = len(frame_a), len(frame_b)
    if len(joined) < max(n_a, n_b):
        notes.append(f"compared on the {len(joined)} pairs both scored ({model_a}: {n_a} rows, {model_b}: {n_b} rows)")
    notes += precision_notes(model_a, precision_a, model_b, precision_b)
    return Comparison(model_a, model_b, benchmark, pd.DataFrame.from_records(rows, columns=LONG_COLUMNS),
                      pd.DataFrame.from_records(sjsd_rows), n_boot, seed, level, notes,
                      precision_a.label if precision_a else "", precision_b.label if precision_b else "",
                      joined.loc[flips, ["pair_id", "bias_type", "sjsd_a", "sjsd_b"]].reset_index(drop=True))


def _lmeval_prefix(result) -> bool:
    """Whether a result's whole-sentence log-likelihoods are lm-eval's (its prefix token is lm-eval's)."""
    return "lmeval" in str(result.conventions.get("prefix_conventions", ""))


def compare_results(result_a, result_b, *, n_boot: int = N_BOOT, seed: int = 0, level: float = 0.95,
                    names: tuple[str, str] | None = None) -> Comparison:
    """Compare two attribution :class:`~biascore.contract.result.Result` objects (:func:`compare_frames`); the
    lm-eval score is compared only when both results used lm-eval's prefix token (else a note says so). ``names``:
    how the method line and notes name A and B (default: their models' names)."""
    for r in (result_a, result_b):
        if getattr(getattr(r, "method", None), "name", None) != "attribution":
            raise ValueError("compare needs two attribution results (biascore.run('attribution', model, benchmark))")
    lm_ok = _lmeval_prefix(result_a) and _lmeval_prefix(result_b)
    model_a, model_b = names or (result_a.model, result_b.model)
    out = compare_frames(result_a.frame, result_b.frame, model_a=model_a, model_b=model_b,
                         benchmark=result_a.input_name, lmeval=lm_ok, n_boot=n_boot, seed=seed, level=level,
                         precision_a=precision_of(result_a), precision_b=precision_of(result_b))
    if not lm_ok and result_a.frame["ll_more"].notna().any() and result_b.frame["ll_more"].notna().any():
        out.notes.append("lm-eval score not compared: a result's prefix token is not lm-eval's "
                         "(run both with prefix='lmeval' to compare it)")
    return out
