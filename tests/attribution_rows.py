"""A hand-made attribution row with the engine's documented columns (for drawing tests that must not
depend on a model): "Women don't know how to drive <b>." vs "Men don't know how to drive <b>."."""
from __future__ import annotations

import re

MORE = "Women don't know how to drive <b>."
LESS = "Men don't know how to drive <b>."


def _tokens(sentence: str) -> list[tuple[str, int, int]]:
    return [(m.group(), m.start(), m.end()) for m in re.finditer(r"\w+|[^\w\s]", sentence)]


def hand_made_row() -> dict:
    tm, tl = _tokens(MORE), _tokens(LESS)
    shared = [t for t, _, _ in tm[1:]]
    bu = [(-1) ** i * 0.01 * (i + 1) for i in range(len(shared))]  # +0.01, -0.02, +0.03, ...
    return {"pair_id": 0, "benchmark": "hand", "bias_type": "gender", "sent_more": MORE, "sent_less": LESS,
            "tokens": shared, "bu": bu, "sjsd": sum(bu) / len(bu), "biased": sum(bu) / len(bu) < 0,
            "more_tokens": [t for t, _, _ in tm], "less_tokens": [t for t, _, _ in tl],
            "more_spans": [x for _, s, e in tm for x in (s, e)], "less_spans": [x for _, s, e in tl for x in (s, e)],
            "more_u": [-1] + list(range(len(shared))), "less_u": [-1] + list(range(len(shared))),
            "skipped_reason": ""}
