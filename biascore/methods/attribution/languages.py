"""Across languages: an aligned set — the same source pairs in several languages, keyed by ``source_id`` (the
CrowS-Pairs row; registry ``alignment``; Filipino CrowS-Pairs by the row of its English source pair in ``crows-en``)
— scored language by language through the one runner and cache, so that two languages compare pair by pair the way
two models do: :meth:`Languages.pair` (one source pair in every language; a language without it, or with it skipped,
says why in one line), :meth:`Languages.summary` (B per language with its Wilson interval) and
:meth:`Languages.compare` (:func:`~biascore.methods.attribution.compare.compare_frames`: McNemar on the verdicts,
paired bootstrap on S_JSD, n = the source pairs scored in both, ``discordant`` the pairs whose verdicts differ)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import pandas as pd

from biascore.inputs.datasets import BenchmarkError, aligned_sets, load_benchmark, registry
from biascore.methods.attribution.compare import Comparison, compare_frames
from biascore.models.precision import precision_of
from biascore.progress import Bar, ProgressFn


def _keys(name: str, frame: pd.DataFrame, data_dir) -> tuple[pd.Series, str]:
    """The alignment key of each pair (by pair_id; "" = not aligned) and a note on pairs left unaligned."""
    if "source_id" in frame:
        return frame.set_index("pair_id").source_id, ""
    via = registry()[name]["alignment"].get("via")
    if via is None:
        raise BenchmarkError(f"{name} has no alignment key (a source_id column)")
    source = load_benchmark(via, data_dir).frame
    rows = {(m, l): str(p) for p, m, l in zip(source.pair_id, source.sent_more, source.sent_less)}
    keys = pd.Series([rows.get((m, l), "") for m, l in zip(frame.sent_more_en, frame.sent_less_en)],
                     index=frame.pair_id)
    missing = int((keys == "").sum())
    return keys, (f"{name}: {missing} pair(s) whose English source is not a pair of {via} are not aligned"
                  if missing else "")


@dataclass
class Languages:
    """An aligned set scored in several languages (module docstring)."""

    set_name: str
    benchmarks: dict[str, str]  # language → benchmark
    results: dict[str, Any]  # language → attribution Result
    keys: dict[str, pd.Series]  # language → source_id by pair_id
    notes: list[str] = field(default_factory=list)

    def frame(self, language: str) -> pd.DataFrame:
        """The language's attribution frame with its ``source_id`` (unaligned pairs left out)."""
        frame = self.results[language].frame
        frame = frame.assign(source_id=frame.pair_id.map(self.keys[language]).fillna(""))
        return frame[frame.source_id != ""]

    def pair(self, source_id) -> pd.DataFrame:
        """One source pair in every language: language, benchmark, pair_id, sent_more, sent_less, sjsd, verdict,
        skipped_reason, ``row`` (the scored row, for the heatmaps); ``missing`` says why a language has none."""
        rows = []
        for lang, name in self.benchmarks.items():
            frame = self.frame(lang)
            hit = frame[frame.source_id == str(source_id)]
            if hit.empty:
                rows.append({"language": lang, "benchmark": name, "missing": f"{name} has no pair {source_id}"})
                continue
            row = hit.iloc[0].to_dict()
            rows.append({"language": lang, "benchmark": name, "missing": "", "row": row,
                         **{k: row[k] for k in ("pair_id", "sent_more", "sent_less", "sjsd", "verdict",
                                                 "skipped_reason")}})
        return pd.DataFrame(rows)

    def summary(self, level: float = 0.95) -> pd.DataFrame:
        """B per language with its interval: language, benchmark, n, score (B), ci_low, ci_high, n_skipped, ties."""
        from biascore.methods.attribution.scorer import summarize
        rows = [{"language": lang, "benchmark": self.benchmarks[lang],
                 **summarize(self.results[lang].frame, "attribution", level=level).iloc[0].drop("bias_type")}
                for lang in self.benchmarks]
        return pd.DataFrame(rows)

    def compare(self, language_a: str, language_b: str, **kwargs) -> Comparison:
        """Language B against language A on the source pairs both scored (``compare_frames``'s keywords pass
        through); ``discordant`` lists the pairs by ``source_id`` (its ``pair_id``) whose verdicts differ."""
        for lang in (language_a, language_b):
            if lang not in self.results:
                raise ValueError(f"{lang!r} is not a scored language of {self.set_name} "
                                 f"(scored: {', '.join(self.results)})")
        a, b = (self.frame(lang).assign(pair_id=lambda f: f.source_id) for lang in (language_a, language_b))
        if not set(a.pair_id) & set(b.pair_id):
            raise ValueError(f"{language_a} and {language_b} share no source pair of {self.set_name}")
        return compare_frames(a, b, model_a=language_a, model_b=language_b, benchmark=self.set_name,
                              same_sentences=False, precision_a=precision_of(self.results[language_a]),
                              precision_b=precision_of(self.results[language_b]), **kwargs)


def across_languages(set_name: str, model: Any | Mapping[str, Any], languages: list[str] | None = None, *,
                     run, data_dir=None, progress: ProgressFn | bool | None = True, **options) -> Languages:
    """Score ``set_name`` in ``languages`` (default: all of its languages) with ``model`` (one, or {language:
    model}) through ``run`` (the runner: ``run(benchmark, model, data_dir=…, progress=…, **options)`` returns an
    attribution Result) and line the languages up by key; one progress bar follows every pair of every language."""
    sets = aligned_sets()
    if set_name not in sets:
        raise ValueError(f"unknown aligned set {set_name!r}; choose one of {', '.join(sets)}")
    members = sets[set_name]
    chosen = list(languages or members)
    unknown = [lang for lang in chosen if lang not in members]
    if unknown:
        raise ValueError(f"{set_name} has no language {', '.join(unknown)}; it has {', '.join(members)}")
    models = dict(model) if isinstance(model, Mapping) else {lang: model for lang in chosen}
    if set(chosen) - set(models):
        raise ValueError(f"no model given for {', '.join(sorted(set(chosen) - set(models)))}")
    benchmarks = {lang: load_benchmark(members[lang], data_dir) for lang in chosen}
    total, done = sum(len(bm) for bm in benchmarks.values()), [0]
    bar = Bar(f"attribution on {set_name} ({len(chosen)} languages)", unit="pair") \
        if progress is True else None
    results, keys, notes = {}, {}, []
    try:
        for lang, bm in benchmarks.items():
            start = done[0]

            def step(k: int, n: int, start: int = start) -> None:
                done[0] = start + k
                (bar or progress or (lambda *_: None))(done[0], total)

            results[lang] = run(bm, models[lang], data_dir=data_dir, progress=step, **options)
            step(len(bm), len(bm))
            keys[lang], note = _keys(bm.name, bm.frame, data_dir)
            notes += [note] if note else []
    finally:
        if bar is not None:
            bar.close()
    return Languages(set_name, {lang: members[lang] for lang in chosen}, results, keys, notes)
