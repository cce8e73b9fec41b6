"""The Overview shows the lm-eval-compatible score of causal models (from the run with lm-eval's prefix token),
says that masked LMs have none, and shows each run's prefix token and the ties of B, PLL and pct_stereotype."""
from __future__ import annotations

import pytest

from biascore.methods.attribution.scorer import summarize
from biascore.runs import runner
from biascore.methods import get
from test_dashboard_pages import MODEL, frame_with, open_page


def test_overview_shows_lmeval_score_prefix_and_ties(demo_scores, smollm):
    # into the session cache, beside the default run
    lmeval = runner.run(get("attribution"), smollm, "demo", prefix="lmeval").frame
    at = open_page("overview")
    assert not at.error
    long = frame_with(at, "lm-eval pct_stereotype")
    shown = long[(long.model == MODEL) & (long.benchmark == "demo")].reset_index(drop=True)
    expected = summarize(lmeval, "lmeval")
    assert list(shown.bias_type) == list(expected.bias_type)
    assert shown["lm-eval pct_stereotype"].tolist() == pytest.approx(expected.pct_stereotype.tolist())
    assert shown["lm-eval stderr"].tolist() == pytest.approx(expected.pct_stereotype_stderr.tolist(), nan_ok=True)
    assert shown["lm-eval ties"].tolist() == expected.ties.tolist()
    assert set(shown["lm-eval prefix"]) == {"<|im_start|> (id 1)"}
    # B and PLL stay those of the published-prefix run, whose token is shown, with their ties
    published = demo_scores[MODEL]
    assert set(shown["prefix"]) == {"<|im_end|> (id 2)"}
    assert shown.B.tolist() == pytest.approx(summarize(published, "attribution").score.tolist())
    assert shown["B ties"].tolist() == summarize(published, "attribution").ties.tolist()
    assert shown["PLL ties"].tolist() == summarize(published, "pll").ties.tolist()
    masked = long[(long.model != MODEL) & (long.benchmark == "demo")]
    assert len(masked) and masked["lm-eval pct_stereotype"].isna().all()
    assert set(masked["lm-eval prefix"]) == {"no such task for masked LMs"}
    assert set(masked["prefix"]) == {"none (masked LM)"}
    captions = " ".join(c.value for c in at.caption)
    assert "not the CrowS paper's PLL" in captions and "lm-eval has no such task" in captions
