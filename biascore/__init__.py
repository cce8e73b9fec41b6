"""biascore: the engine behind the Bias Attribution Explorer — bias scorers from five NLP papers, one cache.

    import biascore
    biascore.methods()                                        # what can be run
    result = biascore.run("attribution", "smollm2-135m", "demo")
    result.summary(); result.pair(3)                          # tables; a token heatmap in Jupyter
    biascore.score_pair("smollm2-135m", "Women can't drive.", "Men can't drive.")
    biascore.compare(result, biascore.run("attribution", "gemma3-270m", "demo")).summary()   # paired, B − A
    result.to_parquet("r.parquet"); biascore.load_result("r.parquet")   # the same Result back
    result.to_json("r.json")                                  # the results record (versions, hashes, seeds…)

The package's map is in docs/adding-a-method.md; ``api`` holds the functions below. No Streamlit imports
anywhere in this package, no import cycles and no import of a higher floor (tests/test_layout.py).
"""
from __future__ import annotations

from typing import Any

from biascore.version import ENGINE_VERSION

_API = {"benchmarks", "compare", "load_benchmark", "load_model", "load_result", "method", "methods", "run", "score_pair"}
__all__ = ["ENGINE_VERSION", *sorted(_API)]


def __getattr__(name: str) -> Any:
    """The API functions, imported on first use (``import biascore`` stays light: no torch until needed)."""
    if name in _API:
        from biascore import api

        return getattr(api, name)
    raise AttributeError(f"module 'biascore' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The API functions too (they are imported on first use), so tab completion lists them."""
    return sorted(set(globals()) | _API)
