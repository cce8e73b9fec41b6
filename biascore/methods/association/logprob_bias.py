"""Log-probability bias of a masked LM (Kurita et al. 2019), with the Bangla sentence structures S1–S5.

For a template with a target slot (masked) and an attribute slot::

    p_tgt   = P([MASK] = t | template with the attribute filled in)        ("fill" score)
    p_prior = P([MASK] = t | template with the attribute masked as well)  ("prior" score)
    score(t, a) = log(p_tgt / p_prior)                                     (prior-corrected score)

A k-piece target is k [MASK] tokens, log p the sum of the pieces (targets with the same k share one forward
pass). Effect size, WEAT-style (Kurita et al. §4): s(t) = mean_{a∈A} score(t, a) − mean_{b∈B} score(t, b),
ES = (mean_X s − mean_Y s) / std_{X∪Y} s (bootstrap interval: :mod:`biascore.stats.effect_size`), one-sided
permutation p over re-partitions of X ∪ Y; the Bangla paper's Figure 2 plots per trait the prior bias against the
corrected bias. Tests: ``data/logprob_tests.json`` (English templates of this project; Bangla traits and S1–S5 from
the Bangla paper, appendix A.4, with its Figure 3's four term pairs), NFC-normalised.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from biascore.progress import ProgressFn
from biascore import settings
from biascore.methods.association.corpus_contexts import normalize
from biascore.stats.effect_size import effect_size_from_associations, effect_size_interval
from biascore.models.lm_scoring import pad_batch, position_logits
from biascore.models.loading import LanguageModel
from biascore.stats.permutation import permutation_p_value
from biascore.models.pair_tokens import max_input_length

TARGET, ATTRIBUTE = "{target}", "{attribute}"
_SLOT = re.compile(r"(\{target\}|\{attribute\})")


@dataclass(frozen=True)
class LogProbTest:
    name: str
    language: str
    targets: dict  # group name -> tuple of words (exactly two groups: X first)
    items: pd.DataFrame  # structure, template, attribute, attribute_group (two groups: A first)
    content_hash: str

    @property
    def target_groups(self) -> list[str]:
        return list(self.targets)

    @property
    def attribute_groups(self) -> list[str]:
        return list(dict.fromkeys(self.items["attribute_group"]))


def _tests() -> dict:
    return json.loads((settings.PROJECT_DATA / "logprob_tests.json").read_text(encoding="utf-8"))


def list_logprob_tests(language: str | None = None) -> list[str]:
    return [k for k, v in _tests().items() if language is None or v["language"] == language]


def logprob_files(name: str, data_dir: str | Path | None = None) -> list[Path]:
    """The data files a test reads besides the shipped spec (the Bangla trait tables)."""
    spec = _tests()[name]
    return [settings.data_dir(data_dir) / spec["bangla_traits"]] if "bangla_traits" in spec else []


def load_logprob_test(name: str, data_dir: str | Path | None = None) -> LogProbTest:
    spec = _tests()
    if name not in spec:
        raise ValueError(f"unknown log-probability test {name!r} (available: {', '.join(spec)})")
    t = spec[name]
    targets = {g: tuple(normalize(w) for w in ws) for g, ws in t["targets"].items()}
    if "bangla_traits" in t:
        items = bangla_structure_items(settings.data_dir(data_dir) / t["bangla_traits"])
    else:
        items = pd.DataFrame([
            {"structure": f"T{i + 1}", "template": tpl, "attribute": a, "attribute_group": g}
            for i, tpl in enumerate(t["templates"]) for g, words in t["attributes"].items() for a in words])
    for tpl in items["template"]:
        if tpl.count(TARGET) != 1 or tpl.count(ATTRIBUTE) != 1:
            raise ValueError(f"{name}: template needs one {TARGET} and one {ATTRIBUTE}: {tpl!r}")
    digest = hashlib.sha256((json.dumps(t, ensure_ascii=False, sort_keys=True)
                             + items.to_csv(index=False)).encode()).hexdigest()[:16]
    return LogProbTest(name, t["language"], targets, items.reset_index(drop=True), digest)


_LAYOUT = {  # where target (with its suffix), placeholder text and attribute (with its suffix) go
    1: "{target}{ms} {ph} {attribute}{ts}",
    2: "{target}{ms} {ph} {attribute}{ts}",
    3: "{attribute}{ts} {target}{ms} {ph}",
    4: "{ph} {attribute}{ts} {target}{ms}",
    5: "{ph} {attribute}{ts} {target}{ms}",
}


def _cell(value) -> str:
    return "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


def _trait_suffix(raw: str) -> str:
    """A trait suffix starting with '-' is glued to the trait (অজ্ঞ + -তা = অজ্ঞতা), others follow a space."""
    raw = raw.strip()
    if not raw:
        return ""
    return raw[1:] if raw.startswith("-") else " " + raw


def bangla_structure_items(folder: Path) -> pd.DataFrame:
    """Templates of structures S1–S5 for every positive and negative trait in ``folder``."""
    rows = []
    for group in ("positive", "negative"):
        path = folder / f"{group}_traits_bn.csv"
        if not path.exists():
            raise FileNotFoundError(f"Bangla log-probability data not found: {path}")
        frame = pd.read_csv(path, encoding="utf-8-sig", dtype=str, keep_default_na=False)
        for _, r in frame.iterrows():
            trait = r["Trait"].strip()
            if not trait:
                continue
            for k, layout in _LAYOUT.items():
                tpl = (layout.replace("{ms}", _cell(r.get(f"S{k}_Mask_Suffix")))
                       .replace("{ph}", _cell(r.get(f"S{k}_Placeholder")).strip())
                       .replace("{ts}", _trait_suffix(_cell(r.get(f"S{k}_Trait_Suffix")))))
                rows.append({"structure": f"S{k}", "template": normalize(" ".join(tpl.split())),
                             "attribute": normalize(trait), "attribute_group": group})
    return pd.DataFrame(rows)


def _render(lm: LanguageModel, template: str, k: int, attribute: str | None) -> tuple[str, bool]:
    """Text with k masks for the target and the attribute (or one mask); True if the attribute comes first."""
    mask = lm.tokenizer.mask_token
    out, attribute_first, seen_target = [], False, False
    for part in _SLOT.split(template):
        if part == TARGET:
            out.append(mask * k)
            seen_target = True
        elif part == ATTRIBUTE:
            attribute_first = not seen_target
            out.append(mask if attribute is None else lm.prepare_text(attribute))
        else:
            out.append(lm.prepare_text(part))
    return "".join(out), attribute_first


def _pieces(lm: LanguageModel, word: str) -> list[int]:
    ids = lm.tokenizer(lm.prepare_text(word), add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"target {word!r} has no tokens")
    return list(ids)


def masked_position_logits(lm: LanguageModel, input_ids: list[list[int]]) -> list[torch.Tensor]:
    """Vocabulary logits at the [MASK] positions of each sequence (in order), from one batched pass. The LM head runs
    only at the mask positions (:func:`biascore.models.lm_scoring.position_logits`)."""
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    ids, att = pad_batch([list(x) for x in input_ids], pad, lm.device)
    rows, cols = (ids == lm.tokenizer.mask_token_id).nonzero(as_tuple=True)
    with torch.inference_mode():
        logits = position_logits(lm, ids, att, rows, cols).float().cpu()
    counts = np.bincount(rows.cpu().numpy(), minlength=len(input_ids))
    bounds = np.cumsum([0] + counts.tolist())
    return [logits[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def score_logprob(lm: LanguageModel, test: LogProbTest, *, batch_size: int = 32,
                  progress: ProgressFn | None = None) -> pd.DataFrame:
    """One row per (template item, target word): log p_tgt, log p_prior, score = their difference."""
    if lm.kind != "masked" or lm.tokenizer.mask_token is None:
        raise ValueError(f"{lm.name} is a {lm.kind} model: the log-probability test needs a masked LM")
    groups = list(test.targets.items())
    if len(groups) != 2:
        raise ValueError("a log-probability test needs exactly two target groups")
    pieces = {w: _pieces(lm, w) for _, ws in groups for w in ws}
    by_k: dict[int, list[str]] = {}
    for w, p in pieces.items():
        by_k.setdefault(len(p), []).append(w)
    limit = max_input_length(lm)

    jobs = []  # (item index, k, variant, text, attribute_first)
    for i, item in test.items.iterrows():
        for k in by_k:
            for variant, attr in (("tgt", item["attribute"]), ("prior", None)):
                text, attr_first = _render(lm, item["template"], k, attr)
                jobs.append((i, k, variant, text, attr_first))
    piece_matrix = {k: torch.tensor([pieces[w] for w in ws]) for k, ws in by_k.items()}
    results: dict[tuple[int, int, str], np.ndarray] = {}  # log p of every target with k pieces
    too_long: set[int] = set()
    for start in range(0, len(jobs), batch_size):
        batch = jobs[start:start + batch_size]
        enc = [lm.tokenizer(text)["input_ids"] for _, _, _, text, _ in batch]
        keep = [j for j, ids in enumerate(enc) if len(ids) <= limit]
        too_long.update(batch[j][0] for j in range(len(batch)) if j not in keep)
        if keep:
            for logits, j in zip(masked_position_logits(lm, [enc[j] for j in keep]), keep):
                i, k, variant, _, attr_first = batch[j]
                if variant == "prior":  # drop the attribute's mask
                    logits = logits[1:] if attr_first else logits[:-1]
                if logits.shape[0] != k:
                    raise ValueError(f"mask layout not understood in {batch[j][3]!r}")
                logp = torch.log_softmax(logits.float(), dim=-1)
                results[(i, k, variant)] = logp[torch.arange(k), piece_matrix[k]].sum(dim=1).numpy()
        if progress:
            progress(min(start + batch_size, len(jobs)), len(jobs))
    column = {w: (k, n) for k, ws in by_k.items() for n, w in enumerate(ws)}

    rows = []
    for i, item in test.items.iterrows():
        for group, words in groups:
            for w in words:
                k, n = column[w]
                skipped = i in too_long
                tgt = np.nan if skipped else float(results[(i, k, "tgt")][n])
                prior = np.nan if skipped else float(results[(i, k, "prior")][n])
                rows.append({"test": test.name, "structure": item["structure"], "attribute": item["attribute"],
                             "attribute_group": item["attribute_group"], "target": w, "target_group": group,
                             "sentence": item["template"].replace(TARGET, w).replace(ATTRIBUTE, item["attribute"]),
                             "n_pieces": k, "logp_tgt": tgt, "logp_prior": prior, "score": tgt - prior,
                             "skipped_reason": f"longer than the model's {limit} tokens" if skipped else ""})
    return pd.DataFrame(rows)


def effect_sizes(scores: pd.DataFrame, test: LogProbTest, *, seed: int = 0) -> pd.DataFrame:
    """Per structure (and "all"): WEAT-style effect size of the scores over the two target groups."""
    x_group, y_group = test.target_groups
    a_group, b_group = test.attribute_groups[:2]
    out = []
    ok = scores[scores["skipped_reason"] == ""]
    for structure, part in [("all", ok)] + list(ok.groupby("structure", sort=True)):
        by = part.groupby(["target", "target_group", "attribute_group"])["score"].mean().unstack("attribute_group")
        if a_group not in by or b_group not in by:
            continue
        by = by.dropna(subset=[a_group, b_group])
        s = (by[a_group] - by[b_group]).reset_index()
        s = pd.concat([s[s["target_group"] == x_group], s[s["target_group"] == y_group]])
        n_x, n_y = int((s["target_group"] == x_group).sum()), int((s["target_group"] == y_group).sum())
        if n_x < 1 or n_y < 1 or n_x + n_y < 3:
            continue
        values = s[0].to_numpy()
        es = effect_size_from_associations(values, np.arange(len(values)) < n_x)
        low, high, how = effect_size_interval(values, np.arange(len(values)) < n_x, seed=seed)
        perm = permutation_p_value(values, n_x, seed=seed)
        attrs = part.drop_duplicates(["attribute", "attribute_group"])["attribute_group"]
        out.append({"test": test.name, "structure": structure, "effect_size": es, "effect_size_low": low,
                    "effect_size_high": high, "ci_method": how, "p_value": perm.p_value,
                    "n_x": n_x, "n_y": n_y, "n_a": int((attrs == a_group).sum()),
                    "n_b": int((attrs == b_group).sum()), "n_sentences": int(part[["structure", "attribute", "attribute_group"]]
                                                                            .drop_duplicates().shape[0])})
    return pd.DataFrame(out)


def prior_vs_corrected(scores: pd.DataFrame, test: LogProbTest) -> pd.DataFrame:
    """Per (structure, attribute): fill, prior and corrected bias of X over Y (the paper's Figure 2)."""
    x_group, y_group = test.target_groups
    ok = scores[scores["skipped_reason"] == ""]
    means = ok.groupby(["structure", "attribute", "attribute_group", "target_group"])[
        ["logp_tgt", "logp_prior", "score"]].mean().unstack("target_group")
    out = pd.DataFrame({"fill_bias": means[("logp_tgt", x_group)] - means[("logp_tgt", y_group)],
                        "prior_bias": means[("logp_prior", x_group)] - means[("logp_prior", y_group)],
                        "corrected_bias": means[("score", x_group)] - means[("score", y_group)]})
    return out.reset_index()
