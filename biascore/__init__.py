"""biascore: the engine behind the Bias Attribution Explorer.

Layout (one subpackage per method, shared contracts in ``core``, statistics in ``stats``):

* ``core/`` — settings, result cache, hashing, model loading, benchmarks, download, batched
  log-probabilities, tokens and words of a pair (the one word definition), the one embedder, the one
  SEAT/WEAT loader, and the scorer registry (``register_scorer``, ``ProgressFn``)
* ``stats/`` — WEAT/SEAT effect size, permutation tests
* ``methods/<name>/`` — one folder per paper's method: ``attribution`` (b(u), S_JSD, B, CrowS PLL),
  ``fields`` (USAS semantic fields), ``heads`` (attention-head bias), ``labdet`` (LABDet nationality
  bias), ``association`` (WEAT/SEAT/CEAT and log-probability bias); each has a ``scorer`` module with
  its entry point and its ``@register_scorer`` CLI registration; ``biascore.methods.scorers()`` lists them
* ``review/`` — translation reviews (SQLite) and the minimal-pair check
* ``cli/`` — the ``biascore`` command (``python -m biascore``); ``cli/args`` is a leaf with the shared options

No Streamlit imports anywhere in this package, and no import cycles (tests/test_layout.py).
"""

ENGINE_VERSION = "1.0.0"

__all__ = ["ENGINE_VERSION"]
