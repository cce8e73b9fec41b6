"""Run EleutherAI's lm-evaluation-harness itself on a benchmark of ours (tests and bench/lmeval_compare.py).

The task is lm-eval's own ``crows_pairs_english`` (and, per bias type, ``crows_pairs_english_gender`` /
``_sexual_orientation``) taken by ``include:`` from the installed package — its doc_to_choice, empty context,
process_results and metrics unchanged — with only the data source replaced by a local CSV of the benchmark's
pairs (the same sentences our loader reads). The model runs through lm-eval's own ``hf`` class (HFLM).
"""
from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

#: our bias_type → lm-eval's per-type task (its process_docs filter keeps bias_type.startswith(...))
TYPE_TASKS = {"gender": "crows_pairs_english_gender", "sexual-orientation": "crows_pairs_english_sexual_orientation"}


def _task_yaml(folder: Path, name: str, base: Path, csv: Path) -> None:
    (folder / f"{name}.yaml").write_text(
        f"include: {base}\ntask: {name}\ntag: []\ndataset_path: csv\ndataset_name: null\n"
        f"dataset_kwargs:\n  data_files:\n    test: {csv}\n", encoding="utf-8")


def run_lmeval_crows(model_dir: str | Path, pairs: pd.DataFrame, workdir: str | Path, *, dtype: str = "float32",
                     batch_size: int = 8, per_type: bool = True, lm=None,
                     task: str = "crows_pairs_english") -> tuple[pd.DataFrame, dict]:
    """lm-eval's per-pair log-likelihoods (columns ``ll_more``, ``ll_less``, in the order of ``pairs``) and its
    aggregated results (task → {``pct_stereotype``, ``pct_stereotype_stderr``, ``likelihood_diff``, …}).

    ``pairs``: columns sent_more, sent_less, bias_type. Tasks are named ``local_all`` and ``local_<bias type>``.
    ``lm``: another lm-eval model instance to run instead of HFLM on ``model_dir`` (e.g. its ``local-completions``
    client of a server, bench/served_compare.py). ``task``: lm-eval's task whose logic runs (``crows_pairs_french``:
    the same logic; per-type tasks are English only).
    """
    import lm_eval
    import lm_eval.tasks
    from lm_eval.models.huggingface import HFLM

    folder = Path(workdir)
    folder.mkdir(parents=True, exist_ok=True)
    csv = folder / "pairs.csv"
    pairs[["sent_more", "sent_less", "bias_type"]].to_csv(csv, index=False)
    shipped = Path(lm_eval.tasks.__file__).parent / "crows_pairs"
    tasks = {"local_all": shipped / f"{task}.yaml"}
    if per_type and task == "crows_pairs_english":
        tasks.update({f"local_{t}": shipped / f"{lm_task}.yaml" for t, lm_task in TYPE_TASKS.items()
                      if (pairs["bias_type"] == t).any()})
    for name, base in tasks.items():
        _task_yaml(folder, name, base, csv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_CACHE", str(folder / "datasets"))
    if lm is None:
        lm = HFLM(pretrained=str(model_dir), device="cpu", dtype=dtype, batch_size=batch_size)
    manager = lm_eval.tasks.TaskManager(include_path=str(folder), include_defaults=False)
    out = lm_eval.simple_evaluate(model=lm, tasks=list(tasks), task_manager=manager, log_samples=True)
    samples = sorted(out["samples"]["local_all"], key=lambda s: s["doc_id"])
    per_pair = pd.DataFrame({"ll_more": [float(s["resps"][0][0][0]) for s in samples],
                             "ll_less": [float(s["resps"][1][0][0]) for s in samples]})
    results = {name: {k.split(",")[0]: v for k, v in res.items() if "," in k}
               for name, res in out["results"].items()}
    return per_pair, {**results, "prefix_token_id": lm.prefix_token_id}
