"""biascore: the engine behind the Bias Attribution Explorer.

Layout (one subpackage per method, shared contracts in ``core``, statistics in ``stats``):

* ``core/`` — settings, result cache, model loading, benchmarks, download, batched log-probabilities,
  tokens/words of a pair, embeddings, SEAT test files
* ``stats/`` — WEAT/SEAT effect size, permutation tests
* ``methods/<name>/`` — one folder per paper's method: ``attribution`` (b(u), S_JSD, B, CrowS PLL),
  ``fields`` (USAS semantic fields), ``heads`` (attention-head bias), ``labdet`` (LABDet nationality
  bias), ``association`` (WEAT/SEAT/CEAT and log-probability bias); each has a ``scorer`` module with
  its entry point and CLI registration
* ``review/`` — translation reviews (SQLite) and the minimal-pair check
* ``cli/`` — ``python -m biascore``; ``cli/args`` is a leaf with the shared options

No Streamlit imports anywhere in this package.
"""

ENGINE_VERSION = "1.0.0"

__all__ = ["ENGINE_VERSION"]
