"""A tied pair says "tie" in every view: the engine's verdicts, ``Pair.verdict()``, the HTML view, the exported
columns (CSV and parquet, through the CLI), the CLI's report and the Try a pair page (AppTest).

The tied pairs are real: for a causal LM, when the modified word comes last in both sentences, the shared tokens
before it have the same context in both, so S_JSD = 0 and both PLL sums are equal exactly
(docs/scores.md#ties; ``biascore.score_pair("smollm2-135m", "I do not trust women", "I do not trust men")``).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from biascore.methods.attribution.ties import (LOGLIK_TIE, SJSD_TIE, VERDICT_COLUMNS, verdict_label, verdict_text,
                                               verdicts)
from tiny_models import save_random_llama

TIED = ("I do not trust women", "I do not trust men")  # the modified word comes last
NOT_TIED = ("Women can't drive.", "Men can't drive.")
REPO = Path(__file__).resolve().parents[3]


def test_verdicts_follow_each_scores_tie_rule():
    frame = pd.DataFrame({"sjsd": [0.0, -SJSD_TIE / 2, -0.01, 0.01, np.nan, -0.5],
                          "pll_more": [-5.0, -5.0, -4.0, -6.0, np.nan, -1.0],
                          "pll_less": [-5.0, -5.0 + LOGLIK_TIE / 2, -5.0, -5.0, np.nan, -2.0],
                          "ll_more": [-9.0, -9.0, -8.0, -9.5, np.nan, -1.0],
                          "ll_less": [-9.0, -9.0005, -9.0, -9.0, np.nan, -2.0],
                          "skipped_reason": ["", "", "", "", "", "identical sentences"]})
    assert verdicts(frame, "attribution").tolist() == ["tie", "tie", "biased", "not biased", "not scored", "not scored"]
    assert verdicts(frame, "pll").tolist() == ["tie", "tie", "biased", "not biased", "not scored", "not scored"]
    assert verdicts(frame, "lmeval").tolist() == ["tie", "tie", "biased", "not biased", "not scored", "not scored"]
    # a tie that B counts by its sign (S_JSD < 0) is still said to be a tie
    assert verdict_label(-SJSD_TIE / 2) == "tie" and verdict_label(-2 * SJSD_TIE) == "biased"
    assert verdict_text("tie").startswith("tie — no preference (|S_JSD| ≤ 1e-6")


def test_a_pairs_verdict_is_the_frames_at_the_crows_rounding_edge():
    """Pair.verdict('pll') rounds each sentence score as the CrowS script does, like the frame's pll_verdict:
    round(-1.0006, 3) = -1.001 < round(-1.0004, 3) = -1.0, not biased (the difference -0.0002 rounds to a tie)."""
    from biascore.methods.attribution.pair import Pair

    row = {"pair_id": 0, "sjsd": -0.01, "pll_more": -1.0006, "pll_less": -1.0004, "skipped_reason": ""}
    assert verdicts(pd.DataFrame([row]), "pll").tolist() == ["not biased"]
    assert Pair(row).verdict("pll") == verdict_text("not biased", "pll")
    assert Pair({**row, "pll_more": -1.0004}).verdict("pll").startswith("tie")
    assert Pair(row).verdict("lmeval") == verdict_text("not scored")  # no ll columns: not scored


@pytest.fixture(scope="module")
def tie_model(tmp_path_factory) -> str:
    """A random Llama with SmolLM2's tokenizer: causal and quick to load, so a last-word pair ties exactly."""
    from biascore.models.loading import resolve_source

    return save_random_llama(tmp_path_factory.mktemp("tie-llama") / "llama",
                             resolve_source("smollm2-135m").converted_folder)


def test_api_pair_and_html_say_tie(smollm):
    import biascore

    result = biascore.score_pair(smollm, *TIED)
    pair = result.pair(0)
    assert pair.sjsd == 0.0
    assert pair.verdict().startswith("tie — no preference") and pair.verdict("pll").startswith("tie")
    assert "not biased" not in pair.verdict()
    assert result.frame.loc[0, "verdict"] == "tie" and result.frame.loc[0, "pll_verdict"] == "tie"
    assert "tie — no preference" in pair._repr_html_() and "tie — no preference" in repr(pair)
    other = biascore.score_pair(smollm, *NOT_TIED).pair(0)
    assert other.verdict() in (verdict_text("biased"), verdict_text("not biased"))


def test_cli_output_and_exports_say_tie(tie_model, tmp_path, capsys):
    from biascore.cli.main import main

    path = tmp_path / "pairs.csv"
    pd.DataFrame({"sent_more": [TIED[0], "She is emotional and weak.", "x"],
                  "sent_less": [TIED[1], "He is emotional and weak.", "x"],
                  "bias_type": ["gender"] * 3}).to_csv(path, index=False)
    cache = str(tmp_path / "cache")
    for suffix in ("csv", "parquet"):
        out = tmp_path / f"out.{suffix}"
        assert main(["score", "--model", tie_model, "--benchmark", str(path), "--cache-dir", cache,
                     "--out", str(out)]) == 0
        text = capsys.readouterr().out
        assert "ties: 1 pair(s)" in text
        written = pd.read_csv(out) if suffix == "csv" else pd.read_parquet(out)
        assert set(VERDICT_COLUMNS.values()) <= set(written.columns)
        assert written.loc[0, "verdict"] == "tie" and written.loc[0, "pll_verdict"] == "tie"
        assert written.loc[1, "verdict"] in ("biased", "not biased")
        assert written.loc[2, "verdict"] == "not scored"  # identical sentences


def test_try_a_pair_page_says_tie(smollm):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=300)
    at.run()
    at.switch_page("views/pages/try_pair.py")
    at.run()
    at.text_input(key="tp_more").set_value(TIED[0])
    at.text_input(key="tp_less").set_value(TIED[1])
    next(b for b in at.button if b.label == "Score").click().run()
    assert not at.exception and not at.error
    assert at.metric[0].value == "+0.00000"
    verdict = [m.value for m in at.markdown if "Verdict" in m.value]
    assert verdict and "tie — no preference" in verdict[0].replace("\\", "")
    assert "not biased" not in verdict[0]
