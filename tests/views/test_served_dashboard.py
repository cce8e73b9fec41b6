"""The dashboard on a served model (Streamlit AppTest): the operator lists ``LABEL=served:http://HOST:PORT/v1`` in
``BIASCORE_MODELS`` and the pages score through the server — the reference server of tests/served_reference.py,
a test double of vLLM's completions protocol serving SmolLM2 in float32 over real HTTP, in its own process.

* Try a pair scores a typed pair through the server and shows the in-process engine's S_JSD within the
  reproducibility contract's bound (mean β(u)) plus the live queue's tolerance;
* public mode offers the label only, and no page element or link names the server's URL, host or port;
* the Overview's "Score now" stores the served run and shows it, labelled served, with the in-process B, and
  Token attributions browses it under the label;
* a page whose methods need the model's weights (Association tests) says so in one line per method;
* an unreachable server is one line on Try a pair, naming the label and no URL; the other pages still open;
* the settings' parsing (labels, bare entries, a served entry without a label) and public-mode URL redaction.

(The SmolLM2 reference server is the hermetic served model here: the conformance check asks the served model to
continue a counting sequence, which a seeded random model cannot.)
"""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch
from test_dashboard_pages import frame_with, metric_values, open_page, type_pair
from test_public_mode import page_dump

from biascore.runs import runner
from biascore import settings
from biascore.errors import one_line
from biascore.methods import get
from biascore.models.spec import ModelSpec
from biascore.methods.attribution.live import SJSD_TOLERANCE
from reproducibility_contract import bu_tolerance
from biascore.methods.attribution.scorer import score_pair, summarize

LABEL = "smollm-gpu-box"
MORE, LESS = "Women are bad at math.", "Men are bad at math."

# results stored here (a served model's) stay out of the session cache that the other page tests list
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture
def server(reference_server):
    """The session's reference server (tests/conftest.py)."""
    return reference_server


@pytest.fixture
def listed(server, monkeypatch):
    """The served model in the settings under its label (next to the embedded default model)."""
    monkeypatch.setenv("BIASCORE_MODELS", f"smollm2-135m,{LABEL}=served:{server.url}")
    return server


def _shown_sjsd_matches(at, smollm) -> float:
    """The S_JSD the page shows equals the in-process engine's for the pair, within the contract's bound."""
    torch.set_num_threads(1)
    expected = score_pair(smollm, MORE, LESS)
    bound = float(np.mean(bu_tolerance(expected["logp_more"], expected["logp_less"])))
    shown = float(metric_values(at)[0])
    assert abs(shown - float(expected["sjsd"])) <= 0.5e-5 + bound + SJSD_TOLERANCE, (shown, expected["sjsd"], bound)
    return shown


def test_try_a_pair_scores_through_the_server(listed, smollm):
    at = open_page("try_pair", model=LABEL)
    assert at.selectbox(key="model_select").value == LABEL
    before = listed.stats()["completions"]
    type_pair(at, MORE, LESS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    _shown_sjsd_matches(at, smollm)
    assert listed.stats()["completions"] > before  # the pair went to the server
    assert any("Scored with" in c.value and LABEL in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 2


def test_public_mode_offers_the_label_and_names_no_url(listed, smollm, monkeypatch):
    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    monkeypatch.setenv("BIASCORE_MODELS", f"{LABEL}=served:{listed.url}")
    at = open_page("try_pair")
    assert at.selectbox(key="model_select").options == [LABEL]
    type_pair(at, MORE, LESS)
    assert not at.exception and not at.error, [e.value for e in at.error]
    _shown_sjsd_matches(at, smollm)
    dump = page_dump(at)
    for secret in (f"127.0.0.1:{listed.port}", "served:http", listed.url):
        assert secret not in dump, f"the page names {secret!r}"
    # a link naming the server's URL is refused like any model off the allow-list
    linked = open_page("try_pair", model=f"served:{listed.url}")
    assert any("does not offer" in w.value for w in linked.warning)
    assert linked.selectbox(key="model_select").value == LABEL


def test_overview_score_now_stores_the_served_run(listed, smollm):
    at = open_page("overview", model=LABEL, benchmark="demo")
    at.button(key="overview_score_now").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    at.run()
    long = frame_with(at, "B_ci_low")
    shown = long[long.model.str.endswith("(served)") & (long.benchmark == "demo")]
    assert set(shown.precision) == {"served (precision as the server computes)"}
    here = summarize(runner.run(get("attribution"), smollm, "demo").frame, "attribution")
    assert shown.n.tolist() == here.n.tolist()
    assert shown.B.tolist() == pytest.approx(here.score.tolist())  # no verdict flips on the demo pairs
    assert any(LABEL in s.value and "is scored" in s.value for s in at.success)
    # the other attribution pages browse the served run under the label
    pairs = open_page("token_attributions", model=LABEL, benchmark="demo")
    assert not pairs.error and pairs.selectbox(key="model_select").value == LABEL
    assert len(frame_with(pairs, "strongest_token")) == int(shown.n.iloc[0]) and metric_values(pairs)


def test_a_method_that_needs_the_weights_says_so_in_one_line(listed):
    at = open_page("association_tests", model=LABEL)
    assert not at.exception and not at.error, [e.value for e in at.error]
    refusals = [i.value for i in at.info if "is a served model" in i.value]
    assert len(refusals) == 3  # WEAT/SEAT, CEAT and log-probability tabs: one line each
    assert all("\n" not in line and "127.0.0.1" not in line for line in refusals)


def test_an_unreachable_server_is_one_line_and_the_rest_works(monkeypatch):
    monkeypatch.setenv("BIASCORE_PUBLIC", "1")
    monkeypatch.setenv("BIASCORE_MODELS", "offline-gpu=served:http://127.0.0.1:9/v1,smollm2-135m")
    at = open_page("try_pair")
    at.selectbox(key="model_select").set_value("offline-gpu").run()
    type_pair(at, MORE, LESS)
    assert not at.exception
    assert len(at.error) == 1
    line = re.sub(r"\\(.)", r"\1", at.error[0].value)  # as shown: the markdown source escapes every mark
    assert "offline-gpu" in line and "cannot be reached" in line
    assert "\n" not in line and "127.0.0.1" not in line and ":9" not in line and "Traceback" not in line
    at.selectbox(key="model_select").set_value("smollm2-135m").run()  # the other model still scores
    assert not at.exception and not at.error and metric_values(at)
    for page in ("overview", "token_attributions"):
        other = open_page(page, model="offline-gpu", benchmark="demo")
        assert not other.exception and not other.error, page


# ------------------------------------------------------------------------------------------------ settings
def test_served_entries_of_the_allow_list(monkeypatch):
    monkeypatch.setenv("BIASCORE_MODELS", "smollm2-135m, llama = served:http://gpu:8000/v1#meta/Llama ,"
                                          "served:http://box:9000/v1#qwen,served:http://other:1/v1")
    assert settings.allowed_models() == ["smollm2-135m", "llama", "qwen", "served model 2"]
    assert settings.served_models() == {"llama": "served:http://gpu:8000/v1#meta/Llama",
                                        "qwen": "served:http://box:9000/v1#qwen",
                                        "served model 2": "served:http://other:1/v1"}
    assert ModelSpec.configured("llama") == ModelSpec("served:http://gpu:8000/v1#meta/Llama", label="llama")
    assert ModelSpec.configured("smollm2-135m") == ModelSpec("smollm2-135m")
    monkeypatch.setenv("BIASCORE_MODELS", "=served:http://gpu:8000/v1")
    with pytest.raises(settings.SettingsError, match="needs a label") as info:
        settings.allowed_models()
    assert "gpu" not in str(info.value)
    monkeypatch.setenv("BIASCORE_MODELS", "a=served:http://x:1/v1,a=served:http://y:1/v1")
    with pytest.raises(settings.SettingsError, match="twice"):
        settings.served_models()


def test_public_mode_lines_name_no_url(monkeypatch):
    exc = RuntimeError("the server at http://10.1.2.3:8000/v1 cannot be reached (ConnectError) (after 5 tries)")
    assert "10.1.2.3" in one_line(exc, public=False)
    line = one_line(exc, public=True)
    assert "10.1.2.3" not in line and "8000" not in line and "cannot be reached (ConnectError)" in line


def test_stored_served_runs_are_browsable_while_the_server_is_down(monkeypatch, processes):
    """A served run stored, then the server stopped and the dashboard started afresh: the run is browsed under
    its label, said to be stored, and the page says the server is down — no command-line advice, no URL. The
    settings' entry carries the request options (``?retries=0&timeout=5``)."""
    import streamlit as st

    from served_reference import Process

    proc = Process().start()
    try:
        monkeypatch.setenv("BIASCORE_MODELS", f"smollm2-135m,{LABEL}=served:{proc.url}?retries=0&timeout=5")
        monkeypatch.setenv("BIASCORE_PUBLIC", "1")
        stored = runner.run(get("attribution"), f"served:{proc.url}", "demo").frame
    finally:
        proc.kill()
    st.cache_resource.clear()  # a dashboard process started afresh: no handle, nothing connected
    st.cache_data.clear()
    at = open_page("token_attributions", model=LABEL, benchmark="demo")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="model_select").value == LABEL
    notes = [i.value for i in at.info if "stored run" in i.value]
    assert len(notes) == 1 and f"The server of {LABEL} is down" in notes[0] and "cannot be reached" in notes[0]
    assert "run the same command" not in notes[0] and "127.0.0.1" not in notes[0] and "\n" not in notes[0]
    assert len(frame_with(at, "strongest_token")) == int((stored["skipped_reason"] == "").sum())
    overview = open_page("overview", model=LABEL, benchmark="demo")
    assert not overview.exception and not overview.error
    lines = [m.value for m in (*overview.info, *overview.success, *overview.warning)]
    assert any("is scored" in line for line in lines) and any(f"The server of {LABEL} is down" in line for line in lines)
    assert not any("run the same command" in line for line in lines)


def test_a_served_model_whose_server_is_down_says_so_without_cli_advice(monkeypatch):
    monkeypatch.setenv("BIASCORE_MODELS", "offline-gpu=served:http://127.0.0.1:9/v1?retries=0,smollm2-135m")
    at = open_page("try_pair", model="offline-gpu")
    type_pair(at, MORE, LESS)
    line = re.sub(r"\\(.)", r"\1", at.error[0].value)
    assert "The server of offline-gpu is down" in line and "run the same command" not in line
