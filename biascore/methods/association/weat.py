"""Association-test definitions (target sets X, Y; attribute sets A, B) and the WEAT/SEAT test itself.

Test files are JSON objects ``{"targ1": {"category", "examples"}, "targ2": …, "attr1": …, "attr2": …}``
(the SEAT/WEAT files of May et al. in ``seat/*.jsonl`` — pretty-printed JSON despite the extension —
and the Bangla categories C1–C9 in ``bangla/ceat_categories/ceat1..9.jsonl``). Names:

* ``weat6``, ``sent-weat6``, … — English; ``sent-*`` tests hold sentences (SEAT), the others words (WEAT)
* ``bangla-c1`` … ``bangla-c9`` — Bangla word lists (WEAT, and CEAT from a corpus)

:func:`weat` computes the effect size with :func:`biascore.stats.effect_size.effect_size_from_associations`
(the shared implementation) and the one-sided permutation p-value of :mod:`biascore.stats.permutation`.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from biascore.core import settings
from biascore.stats.effect_size import association, effect_size_from_associations
from biascore.stats.permutation import permutation_p_value

_BANGLA = re.compile(r"^bangla-c([1-9])$")


@dataclass(frozen=True)
class AssociationTest:
    name: str
    language: str  # "en" or "bn"
    kind: str  # "sentences" (SEAT) or "words" (WEAT/CEAT)
    X: tuple[str, ...]
    Y: tuple[str, ...]
    A: tuple[str, ...]
    B: tuple[str, ...]
    categories: tuple[str, str, str, str]  # names of X, Y, A, B
    content_hash: str

    def describe(self) -> str:
        x, y, a, b = self.categories
        return f"{x} vs {y} / {a} vs {b}"


def _test_path(name: str, data_dir: Path) -> Path:
    m = _BANGLA.match(name)
    if m:
        return data_dir / "bangla" / "ceat_categories" / f"ceat{m.group(1)}.jsonl"
    if not re.fullmatch(r"[A-Za-z0-9_+\-]+", name):
        raise ValueError(f"not a test name: {name!r}")
    return data_dir / "seat" / f"{name}.jsonl"


def list_tests(language: str | None = None, kind: str | None = None, data_dir: str | Path | None = None) -> list[str]:
    """Names of the tests present in the data directory (English SEAT/WEAT first, then Bangla)."""
    root = settings.data_dir(data_dir)
    names = sorted((p.stem for p in (root / "seat").glob("*.jsonl")), key=_natural)
    names += [f"bangla-c{i}" for i in range(1, 10) if (root / "bangla" / "ceat_categories" / f"ceat{i}.jsonl").exists()]
    out = []
    for n in names:
        lang = "bn" if n.startswith("bangla-") else "en"
        k = "sentences" if n.startswith("sent-") else "words"
        if (language is None or language == lang) and (kind is None or kind == k):
            out.append(n)
    return out


def _natural(name: str):
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name)]


def load_test(name: str, data_dir: str | Path | None = None) -> AssociationTest:
    """Read one test; raises FileNotFoundError / ValueError with the path and what is wrong."""
    path = _test_path(name, settings.data_dir(data_dir))
    if not path.exists():
        raise FileNotFoundError(f"association test {name!r} not found at {path} (available: "
                                f"{', '.join(list_tests(data_dir=data_dir)) or 'none'})")
    raw = path.read_bytes()
    try:
        obj = json.loads(raw.decode("utf-8-sig"))
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc
    sets, cats = [], []
    for key in ("targ1", "targ2", "attr1", "attr2"):
        part = obj.get(key)
        if not isinstance(part, dict) or not isinstance(part.get("examples"), list):
            raise ValueError(f"{path}: missing {key}.examples")
        items = tuple(dict.fromkeys(str(x).strip() for x in part["examples"] if str(x).strip()))
        if len(items) < (2 if key.startswith("targ") else 1):
            raise ValueError(f"{path}: {key} has too few items ({len(items)})")
        sets.append(items)
        cats.append(str(part.get("category", key)))
    return AssociationTest(name=name, language="bn" if name.startswith("bangla-") else "en",
                           kind="sentences" if name.startswith("sent-") else "words",
                           X=sets[0], Y=sets[1], A=sets[2], B=sets[3], categories=tuple(cats),
                           content_hash=hashlib.sha256(raw).hexdigest()[:16])


@dataclass(frozen=True)
class WeatResult:
    effect_size: float
    p_value: float
    exact: bool
    n_x: int
    n_y: int
    n_a: int
    n_b: int

    def as_row(self) -> dict:
        return dict(effect_size=self.effect_size, p_value=self.p_value, n_x=self.n_x, n_y=self.n_y,
                    n_a=self.n_a, n_b=self.n_b, p_exact=self.exact)


def weat(X: np.ndarray, Y: np.ndarray, A: np.ndarray, B: np.ndarray, *, max_exact: int = 100_000,
         n_samples: int = 100_000, seed: int = 0) -> WeatResult:
    """Effect size and one-sided permutation p-value of embedding matrices X, Y (targets), A, B (attributes).

    s(w,A,B) = mean_a cos(w,a) − mean_b cos(w,b); ES = (mean_X s − mean_Y s) / std_{X∪Y} s (n − 1).
    """
    s = association(np.concatenate([X, Y]), A, B).numpy()
    is_x = np.arange(len(s)) < len(X)
    es = effect_size_from_associations(s, is_x)
    perm = permutation_p_value(s, len(X), max_exact=max_exact, n_samples=n_samples, seed=seed)
    return WeatResult(es, perm.p_value, perm.exact, len(X), len(Y), len(A), len(B))
