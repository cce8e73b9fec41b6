"""biascore: the engine behind the Bias Attribution Explorer.

Scorers (one module each, registered by name in :mod:`biascore.scorers`):

* ``attribution`` — token-level bias attribution b(u), S_JSD, B and the CrowS PLL score
* ``fields`` — USAS semantic fields of bias-inducing words
* ``heads`` — attention-head bias from the gradient of |SEAT|
* ``labdet`` — LABDet nationality bias
* ``association`` — WEAT/SEAT/CEAT and log-probability bias

No Streamlit imports anywhere in this package.
"""

ENGINE_VERSION = "1.0.0"

__all__ = ["ENGINE_VERSION"]
