"""Cohen's and Fleiss' κ (the review's agreement) against independent computations of their formulas."""
from __future__ import annotations

import math

import numpy as np
import pytest

from biascore.stats.kappa import cohen_kappa, fleiss_kappa

LABELS = ("accept", "needs correction", "reject")


def cohen_by_hand(a, b, labels) -> float:
    n = len(a)
    p_o = sum(x == y for x, y in zip(a, b)) / n
    p_e = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in labels)
    return (p_o - p_e) / (1 - p_e)


def fleiss_by_hand(ratings: np.ndarray, n_codes: int) -> tuple[float, float]:
    n_items, m = ratings.shape
    counts = np.array([[list(row).count(c) for c in range(n_codes)] for row in ratings], dtype=float)
    p_i = [(sum(x * x for x in row) - m) / (m * (m - 1)) for row in counts]
    p_bar = sum(p_i) / n_items
    p_c = counts.sum(axis=0) / (n_items * m)
    p_e = float((p_c ** 2).sum())
    return (p_bar - p_e) / (1 - p_e), p_bar


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_equals_its_formula(seed):
    rng = np.random.default_rng(seed)
    a = rng.choice(LABELS, 40)
    b = np.where(rng.random(40) < 0.6, a, rng.choice(LABELS, 40))
    assert cohen_kappa(a, b, LABELS) == pytest.approx(cohen_by_hand(a, b, LABELS), rel=1e-12)


def test_cohen_kappa_equals_statsmodels_on_the_contingency_table():
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = np.random.default_rng(7)
    a = rng.choice(LABELS, 60)
    b = np.where(rng.random(60) < 0.5, a, rng.choice(LABELS, 60))
    table = np.array([[np.sum((a == x) & (b == y)) for y in LABELS] for x in LABELS])
    assert cohen_kappa(a, b, LABELS) == pytest.approx(cohens_kappa(table).kappa, rel=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_equals_its_formula(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(3, 6))
    truth = rng.integers(0, 3, 30)
    ratings = np.where(rng.random((30, m)) < 0.7, truth[:, None], rng.integers(0, 3, (30, m)))
    kappa, observed = fleiss_kappa(ratings, 3)
    want_kappa, want_observed = fleiss_by_hand(ratings, 3)
    assert kappa == pytest.approx(want_kappa, rel=1e-12) and observed == pytest.approx(want_observed, rel=1e-12)


def test_undefined_kappas_are_nan():
    assert math.isnan(cohen_kappa(["accept"], ["reject"], LABELS))            # one item
    assert math.isnan(cohen_kappa(["accept"] * 5, ["accept"] * 5, LABELS))   # one code only
    kappa, observed = fleiss_kappa(np.zeros((4, 3), dtype=int), 3)
    assert math.isnan(kappa) and observed == 1.0
