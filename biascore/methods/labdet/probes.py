"""Sentiment probes on frozen sentence features (LABDet, Koksal et al., 2023, §4: "we train a classifier such as SVM or
MLP on top of the frozen PLMs"): ``svm`` = standardised features → ``LinearSVC`` in ``CalibratedClassifierCV``
(Platt scaling, 5 folds); ``mlp`` = standardised features → ``MLPClassifier`` (100 hidden units, adam, early
stopping). Both seeded; :func:`heldout_accuracy` splits by template group (``GroupShuffleSplit``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Literal, Sequence

import numpy as np

if TYPE_CHECKING:  # scikit-learn is imported when a probe is made (not with the method's registration: the first minute)
    from sklearn.pipeline import Pipeline

ProbeKind = Literal["svm", "mlp"]
PROBES: tuple[str, ...] = ("svm", "mlp")


def make_probe(kind: ProbeKind = "svm", seed: int = 0) -> Pipeline:
    """An unfitted, seeded probe (a scikit-learn pipeline with ``fit`` and ``predict_proba``)."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.neural_network import MLPClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    if kind == "svm":
        clf = CalibratedClassifierCV(LinearSVC(C=1.0, max_iter=5000, random_state=seed), method="sigmoid", cv=5)
    elif kind == "mlp":
        clf = MLPClassifier(hidden_layer_sizes=(100,), max_iter=300, early_stopping=True, random_state=seed)
    else:
        raise ValueError(f"unknown probe {kind!r}; choose one of {', '.join(PROBES)}")
    return make_pipeline(StandardScaler(), clf)


def fit_probe(X: np.ndarray, y: Sequence[int], kind: ProbeKind = "svm", seed: int = 0) -> Pipeline:
    """Fit a probe on features ``X`` and binary labels ``y`` (1 = positive sentiment)."""
    y = np.asarray(y)
    if len(np.unique(y)) != 2:
        raise ValueError("a sentiment probe needs both classes (positive and negative) in its training data")
    return make_probe(kind, seed).fit(X, y)


def positive_proba(probe: Pipeline, X: np.ndarray) -> np.ndarray:
    """P(positive | x): the probability column of class 1."""
    col = list(probe.classes_).index(1)
    return probe.predict_proba(X)[:, col]


def template_split(groups: Sequence[str], test_size: float = 0.25, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Train / test row indices with whole templates on one side only (``GroupShuffleSplit``)."""
    groups = np.asarray(groups)
    if len(np.unique(groups)) < 2:
        raise ValueError("a split by template needs at least two templates")
    from sklearn.model_selection import GroupShuffleSplit
    splitter = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=seed)
    return next(splitter.split(np.zeros(len(groups)), groups=groups))


def heldout_accuracy(X: np.ndarray, y: Sequence[int], groups: Sequence[str], kind: ProbeKind = "svm",
                     seed: int = 0, test_size: float = 0.25) -> float:
    """Accuracy of a probe trained on some templates and tested on the other, unseen templates."""
    y = np.asarray(y)
    train_idx, test_idx = template_split(groups, test_size=test_size, seed=seed)
    probe = fit_probe(X[train_idx], y[train_idx], kind, seed)
    return float((probe.predict(X[test_idx]) == y[test_idx]).mean())
