"""A served model a researcher can trust (issue 32): faults injected into the reference server
(tests/served_reference.py, a real HTTP server process serving SmolLM2 in float32 with vLLM's endpoints; its
``/reference/fault`` makes the next requests misbehave) and what the client does about each — one line, nothing
wrong stored, a prompt exit — plus the API key, the request options and the request counts of a run.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest

import biascore
from biascore.cli.main import main
from biascore.runs import runner
from biascore.store.cache import ResultCache
from biascore.models.served import ServedError, load_served
from biascore.models.served.client import ServedName
from biascore.models.served.model import ServedChanged
from biascore.methods import get
from biascore.methods.attribution.frame import UnscoredPairs, check_scored
from biascore.methods.attribution.scorer import summarize
from served_reference import serving

pytestmark = pytest.mark.usefixtures("private_cache")
KEY = "sk-test-3f9a1c77e2b04d5e"


@pytest.fixture
def server(reference_server):
    """The session's reference server (tests/conftest.py), its fault cleared before and after each test."""
    return reference_server


@pytest.fixture(scope="module")
def keyed_server(processes):
    yield from serving("--api-key", KEY)


@pytest.fixture(autouse=True)
def _no_fault(server):
    server.fault(None)
    yield
    server.fault(None)


def _drained(proc, limit_s: float = 120.0) -> dict:
    """The server's counters once no request is being answered (polled: the event is the counter reaching 0)."""
    end = time.monotonic() + limit_s
    while True:
        stats = proc.stats()
        if stats["in_flight"] == 0 or time.monotonic() > end:
            return stats
        time.sleep(0.1)


def _cli(capsys, *args) -> tuple[int, list[str]]:
    code = main(list(args))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and "%|" not in line]
    return code, err


def test_a_null_log_probability_is_one_line_and_nothing_is_stored(server, smollm_demo_frame, tmp_path, capsys):
    name = "served:" + server.url
    cache = tmp_path / "cache"
    lm = load_served(name)
    server.fault("null", times=1, at=3)
    with pytest.raises(ServedError, match=r"returned None as the log-probability of token 3") as info:
        runner.run(get("attribution"), lm, "demo", limit=8, cache=ResultCache(cache))
    assert "\n" not in str(info.value)
    assert not runner.is_cached(get("attribution"), lm, "demo", limit=8, cache=ResultCache(cache))
    # the same command against the (now correct) server: the right numbers, scored afresh
    frame = runner.run(get("attribution"), lm, "demo", limit=8, cache=ResultCache(cache)).frame
    here = smollm_demo_frame(limit=8)
    assert frame["biased"].tolist() == here["biased"].tolist() and not frame["sjsd"].isna().any()


def test_a_null_through_the_cli_exits_2_with_one_line(server, tmp_path, capsys):
    server.fault("null", times=-1, at=2)
    code, err = _cli(capsys, "score", "--model", "served:" + server.url, "--benchmark", "demo", "--limit", "4",
                     "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and len(err) == 1 and "log-probability" in err[0] and "Traceback" not in err[0], err


def test_an_echoed_id_that_differs_from_the_one_sent_is_one_line(server, tmp_path):
    lm = load_served("served:" + server.url)
    server.fault("wrong_id", times=1, at=4)
    with pytest.raises(ServedError, match=r"echoed token 0 at position 4 of a prompt that has \d+ there") as info:
        runner.run(get("attribution"), lm, "demo", limit=4, cache=ResultCache(tmp_path / "cache"))
    assert "\n" not in str(info.value)
    assert not list((tmp_path / "cache").rglob("*.parquet"))


def test_a_server_that_does_not_echo_token_ids_is_refused(server):
    server.fault("text_tokens", times=-1)
    with pytest.raises(ServedError, match=r"does not echo token ids \(vLLM's return_tokens_as_token_ids\)"):
        load_served("served:" + server.url)


def test_positions_shifted_after_the_conformance_check_discard_the_shard(server, smollm_demo_frame, tmp_path):
    """A server (a replica) whose token-id answers shift by one after the model was connected: the probe measured
    again after the shard moves, the shard is discarded with one line, nothing is stored."""
    cache = ResultCache(tmp_path / "cache")
    lm = load_served("served:" + server.url)
    server.fault("shift", times=-1)
    with pytest.raises(ServedChanged, match="no longer computes what it did") as info:
        runner.run(get("attribution"), lm, "demo", limit=8, shard_size=4, cache=cache)
    assert "\n" not in str(info.value)
    assert not runner.is_cached(get("attribution"), lm, "demo", limit=8, cache=cache)
    assert not list((tmp_path / "cache").rglob("*.parquet"))  # not even the shard
    server.fault(None)
    frame = runner.run(get("attribution"), lm, "demo", limit=8, shard_size=4, cache=cache).frame
    here = smollm_demo_frame(limit=8)
    assert frame["pll_verdict"].tolist() == here["pll_verdict"].tolist()


def test_unscored_pairs_are_never_summed_or_stored():
    logp = pd.DataFrame({"pair_id": [0, 1], "skipped_reason": ["", ""], "logp_more": [[-1.0, -2.0], [-1.0]],
                         "logp_less": [[-1.5, np.nan], [-0.5]]})
    with pytest.raises(UnscoredPairs, match=r"1 pair\(s\) \(pair_id 0\)"):
        check_scored(logp)
    check_scored(logp.assign(skipped_reason=["no shared tokens: not a minimal pair", ""]))


def test_a_slow_server_ends_promptly_and_sends_nothing_after_the_failure(server):
    lm = load_served("served:" + server.url, concurrency=2, timeout_s=2, retries=1)
    lm.client.batch = 4  # 77 prompts: 20 requests, at most 2 at a time
    server.stats(reset=True)
    server.fault("slow", times=-1, delay_s=3)  # past the 2 s timeout, however fast the machine
    started = time.monotonic()
    with pytest.raises(ServedError, match=r"did not answer within 2 s \(timeout\) \(after 2 tries\)") as info:
        biascore.run("attribution", lm, "demo")
    took = time.monotonic() - started
    assert took < 15, took  # 2 tries × 2 s and a back-off, not 5 × 120 s
    assert "\n" not in str(info.value)
    server.fault(None)
    sent = _drained(server)["completions"]
    assert sent <= 2 * 2, sent  # the two requests in flight, each tried twice; nothing after the failure


def test_timeout_and_retries_on_the_cli(server, tmp_path, capsys):
    server.fault("slow", times=-1, delay_s=3)  # past the 2 s timeout, however fast the machine
    started = time.monotonic()
    code, err = _cli(capsys, "score", "--model", "served:" + server.url, "--timeout", "2", "--retries", "1",
                     "--benchmark", "demo", "--limit", "2", "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and len(err) == 1 and "did not answer within 2 s" in err[0] and "after 2 tries" in err[0], err
    assert time.monotonic() - started < 20
    server.fault(None)
    _drained(server)


def test_request_options_are_one_model_description():
    parsed = ServedName.parse("served:http://h:8000/v1#m?timeout=5&retries=0&api_key_env=MY_KEY")
    assert (parsed.base, parsed.model, parsed.timeout_s, parsed.retries, parsed.api_key_env) == \
        ("http://h:8000/v1", "m", 5.0, 0, "MY_KEY")
    assert ServedName.parse(str(parsed)) == parsed
    assert ServedName.parse("served:http://h:8000/v1?retries=2").retries == 2
    assert ServedName.parse("served:http://h:8000/v1#m").with_options(timeout_s=3).timeout_s == 3.0
    for bad, needle in (("served:http://h/v1?tries=2", "unknown option 'tries'"),
                        ("served:http://h/v1?timeout=soon", "timeout='soon' is not a number"),
                        ("served:http://h/v1?retries=-1", "retries must be 0 or more"),
                        ("served:http://h/v1?api_key_env=sk-abc-123", "names an environment variable")):
        with pytest.raises(ServedError, match=needle):
            ServedName.parse(bad)
    with pytest.raises(ValueError, match="apply to served models"):
        biascore.load_model("smollm2-135m", timeout=3)


def test_the_api_takes_timeout_and_retries(server):
    handle = biascore.load_model("served:" + server.url, timeout=7, retries=2, load=True)
    assert (handle.load().client.timeout_s, handle.load().client.retries) == (7.0, 2)


def test_an_api_key_from_the_named_variable_and_nowhere_on_disk(keyed_server, tmp_path, capsys, monkeypatch):
    url = "served:" + keyed_server.url
    code, err = _cli(capsys, "score", "--model", url, "--benchmark", "demo", "--limit", "2", "--retries", "0",
                     "--cache-dir", str(tmp_path / "c0"))
    assert code == 2 and len(err) == 1 and "answered 401" in err[0] and "api_key_env=VARIABLE" in err[0], err
    code, err = _cli(capsys, "score", "--model", url + "?api_key_env=BIASCORE_TEST_KEY", "--benchmark", "demo",
                     "--limit", "2", "--cache-dir", str(tmp_path / "c1"))
    assert code == 2 and "BIASCORE_TEST_KEY (api_key_env)" in err[0] and "not set" in err[0], err
    monkeypatch.setenv("BIASCORE_TEST_KEY", "wrong")
    code, err = _cli(capsys, "score", "--model", url + "?api_key_env=BIASCORE_TEST_KEY", "--benchmark", "demo",
                     "--limit", "2", "--cache-dir", str(tmp_path / "c2"))
    assert code == 2 and "the API key in BIASCORE_TEST_KEY was refused" in err[0] and "wrong" not in err[0], err
    monkeypatch.setenv("BIASCORE_TEST_KEY", KEY)
    out_file = tmp_path / "out.csv"
    code = main(["score", "--model", url + "?api_key_env=BIASCORE_TEST_KEY", "--benchmark", "demo", "--limit", "4",
                 "--cache-dir", str(tmp_path / "c3"), "--out", str(out_file)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert KEY not in printed.out + printed.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert out_file in files and any(p.suffix == ".parquet" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    # the key is not in the model's repr, label, identity or extra either
    handle = biascore.load_model(url + "?api_key_env=BIASCORE_TEST_KEY", load=True)
    lm = handle.load()
    assert KEY not in repr(handle) + lm.name + repr(lm.identity()) + repr(lm.extra) + handle.label


@pytest.mark.parametrize("fault, needle", [
    ({"kind": "cut"}, "closed the connection mid-response"),
    ({"kind": "status", "code": 503}, "answered 503"),
])
def test_connection_faults_say_what_happened(server, tmp_path, capsys, fault, needle):
    server.fault(**fault, times=-1)
    code, err = _cli(capsys, "score", "--model", "served:" + server.url, "--retries", "0", "--benchmark", "demo",
                     "--limit", "2", "--cache-dir", str(tmp_path / "c"))
    assert code == 2 and len(err) == 1 and needle in err[0] and "cannot be reached" not in err[0], err


def test_a_base_url_without_v1_gets_a_hint(server):
    with pytest.raises(ServedError, match=r"answered 404.*usually ends in /v1: served:http://127\.0\.0\.1:\d+/v1\)"):
        load_served("served:" + server.url[:-3])


def test_a_text_only_server_is_told_token_id_prompts_are_required(server):
    server.fault("text_only")
    with pytest.raises(ServedError, match="refuses token-id prompts.*server must take prompts as lists of "
                                          "token ids") as info:
        load_served("served:" + server.url)
    assert "\n" not in str(info.value)


def test_a_server_without_tokenize_is_refused_for_its_worse_fault(server):
    """No /tokenize (llama-cpp-python's server has none): its text-prompt echo is probed first, so misaligned
    log-probabilities are named as such (the real server's case, tests/models/test_served_llamacpp.py); a
    conforming echo is refused for the missing endpoint."""
    for shift, wanted in ((True, "misaligned prompt log-probabilities"), (False, "has no /tokenize endpoint")):
        server.fault("no_tokenize", shift=shift)
        with pytest.raises(ServedError, match=wanted) as info:
            load_served("served:" + server.url)
        assert "\n" not in str(info.value)


def test_one_echoed_prompt_per_sentence_many_per_request(server):
    """Demo (38 pairs) with the lm-eval prefix: one prompt per sentence (no echo to tokenise), in a few requests."""
    lm = load_served("served:" + server.url)
    server.stats(reset=True)
    frame = biascore.run("attribution", lm, "demo", prefix="lmeval").frame
    stats = server.stats()
    n = len(frame)
    assert stats["prompts"] <= 2 * n + 3, stats  # + the proof prompt riding in each request (3 of them)
    assert stats["completions"] <= stats["prompts"] / 4, stats
    assert summarize(frame)["n_skipped"].iloc[0] == int((frame["skipped_reason"] != "").sum())


def test_requests_batched_together_keep_their_own_answers(server):
    """The server gathers the prompts of requests that arrive together into one forward batch, sorted by length
    (tests/served_reference.py): each request still gets the answer to its own prompts, the same numbers as sent
    alone (within the contract: another batch composition), and the echoed ids checked against those sent."""
    lm = load_served("served:" + server.url, concurrency=6)
    words = "the nurse said that my neighbour was very careful with the old car".split()
    requests = [[lm.client.tokenize(" ".join(words[:4 + (3 * k + j) % 10])) for j in range(3)] for k in range(6)]
    alone = [[lm.client.echo(p).logprobs for p in req] for req in requests]
    server.stats(reset=True)
    together = lm.client.map(lambda req: [got.logprobs for got in lm.client.echo_many(req)], requests)
    stats = _drained(server)
    lm.client.close()
    assert stats["largest_batch"] > 3, stats  # the requests' prompts did meet in one forward batch
    for req, a, b in zip(requests, alone, together):
        for prompt, x, y in zip(req, a, b):
            assert len(y) == len(prompt) and y[0] is None
            np.testing.assert_allclose(y[1:], x[1:], rtol=1e-4, atol=1e-6)


# ------------------------------------------------------------------------------------------------ issue 40
def _stored(cache) -> list:
    """The result files of a cache (its shared models folder left out)."""
    return [p for p in cache.rglob("*.parquet") if "models" not in p.relative_to(cache).parts]


def _agrees_with_in_process(cache, smollm_demo_frame, url: str) -> None:
    """The same cache, a correct server: the served result equals the in-process one within the contract."""
    from reproducibility_contract import compare_frames

    there = runner.run(get("attribution"), load_served(url), "demo", cache=ResultCache(cache)).frame
    agreement = compare_frames(smollm_demo_frame(), there)
    assert agreement.within_contract and agreement.flips == 0, agreement.problems


def test_a_server_wrong_only_in_large_batches_is_refused_and_nothing_stored(server, smollm_demo_frame, tmp_path, capsys):
    """Shifted log-probabilities only in requests of more than 3 prompts: the connection's one request (the
    conformance check's 2 probes and the fingerprint's) passes, but the proof riding in every scoring request (32
    prompts) moves — one line, exit 2, nothing stored; the same cache then answers the correct server with the
    in-process numbers. (Wrong in requests of 3 already, the connection refuses it.)"""
    cache = tmp_path / "cache"
    server.fault("shift", times=-1, above=2)
    with pytest.raises(ServedError, match="misaligned prompt log-probabilities"):
        load_served("served:" + server.url)
    server.fault("shift", times=-1, above=3)
    code, err = _cli(capsys, "score", "--model", "served:" + server.url, "--benchmark", "demo",
                     "--cache-dir", str(cache))
    assert code == 2 and len(err) == 1 and "no longer computes what it did" in err[0], err
    said = re.search(r"in a request of (\d+) prompts, token \d+ of the proof prompt got log P \S+, \S+ on connecting",
                     err[0])
    assert said and int(said.group(1)) > 3 and err[0].endswith("nothing of it is used or stored"), err
    assert not _stored(cache)
    server.fault(None)
    _agrees_with_in_process(cache, smollm_demo_frame, "served:" + server.url)


def test_two_replicas_with_different_weights_behind_a_balancer_are_refused(server, perturbed_server, smollm_demo_frame,
                                                                           tmp_path, capsys, processes):
    """A round-robin load balancer in front of the correct server and one with other weights: whichever replica
    the connection measured, some scoring request reaches the other and its proof moves — nothing stored (the
    issue's run stored 16 of 38 pairs from the other weights); the same cache then answers the correct server."""
    cache = tmp_path / "cache"
    roots = ",".join(url[:-3] for url in (server.url, perturbed_server.url))
    for balancer in serving("--balance", roots):
        for outside in (0, 1, 1):  # runs that start on the first replica and, after N + 1 and 2N + 3 turns,
            for _ in range(outside):  # on the second one however many requests N a run makes
                httpx.get(balancer.url + "/models", timeout=30)
            code, err = _cli(capsys, "score", "--model", "served:" + balancer.url, "--benchmark", "demo",
                             "--cache-dir", str(cache))
            assert code == 2 and len(err) == 1 and "no longer computes what it did" in err[0], err
            assert not _stored(cache)
    _agrees_with_in_process(cache, smollm_demo_frame, "served:" + server.url)


def _files_hold(root, secret: str) -> list:
    """Every file under ``root`` (zips opened: their members too) whose bytes hold ``secret``."""
    import os
    import zipfile

    found = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "models"]  # the project's converted models, linked in
        for name in names:
            path = Path(folder) / name
            data = [path.read_bytes()]
            if zipfile.is_zipfile(path):
                with zipfile.ZipFile(path) as z:
                    data += [z.read(m) for m in z.namelist()]
            found += [path] if any(secret.encode() in d for d in data) else []
    return found


def test_no_key_or_url_password_in_any_output_file_announcement_page_or_snapshot(keyed_server, tmp_path, capsys,
                                                                                  monkeypatch, private_cache):
    """A server (a gateway) whose 401 repeats the request's Authorization header, and a URL with a password: the
    key and the password appear in no printed line, no file of the cache (results, the run's announcement in
    running/), no --out file, no page and no snapshot."""
    from test_dashboard_pages import open_page, type_pair
    from test_public_mode import page_dump

    monkeypatch.setenv("BIASCORE_TEST_KEY", KEY)
    url = "served:" + keyed_server.url + "?api_key_env=BIASCORE_TEST_KEY"
    printed = []
    with keyed_server.faulty("status", code=401, echo_auth=True):
        code, err = _cli(capsys, "score", "--model", url, "--benchmark", "demo", "--limit", "2")
        assert code == 2 and len(err) == 1 and "Invalid API key provided: Bearer …" in err[0], err
        assert "the API key in BIASCORE_TEST_KEY was refused" in err[0], err
        printed += err
        announced = list((private_cache / "running").glob("*.json"))
        assert announced and all('"failed"' in p.read_text() for p in announced)  # the grep below covers them
        monkeypatch.setenv("BIASCORE_MODELS", f"smollm2-135m,gpu-box=served:{keyed_server.url}"
                                              "?api_key_env=BIASCORE_TEST_KEY")
        at = open_page("try_pair", model="gpu-box")
        type_pair(at, "Women are bad at math.", "Men are bad at math.")
        assert at.error and "Bearer …" in at.error[0].value, [e.value for e in at.error]
        pages = page_dump(at)
    code = main(["score", "--model", url, "--benchmark", "demo", "--limit", "4", "--out", str(tmp_path / "o.csv")])
    assert code == 0
    code = main(["snapshot", "export", "--out", str(tmp_path / "snap.zip")])
    assert code == 0 and _stored(private_cache)
    password = "Pa55w0rd-7c1e"
    code, printed_here = _cli(capsys, "score", "--model",
                              "served:" + keyed_server.url.replace("//", f"//bob:{password}@"), "--benchmark", "demo",
                              "--limit", "2")
    err = [line for line in printed_here if line.startswith("error:")]  # (the page's Streamlit warnings beside it)
    assert code == 2 and len(err) == 1 and "api_key_env=VARIABLE" in err[0] and "not accepted" in err[0], err
    printed += printed_here
    out = capsys.readouterr()
    for secret in (KEY, password):
        assert not any(secret in text for text in (*printed, out.out, out.err, pages))
        assert not _files_hold(tmp_path, secret) and not _files_hold(private_cache, secret)


@pytest.mark.parametrize("where, value", [
    ("url", "retries=99999999999999999999999"), ("url", "retries=inf"), ("url", "timeout=inf"),
    ("url", "timeout=1e308"), ("url", "timeout=nan"), ("cli", "--retries=99999999999999999999999"),
    ("cli", "--timeout=1e308"), ("env", "BIASCORE_SERVED_RETRIES=inf"),
    ("env", "BIASCORE_SERVED_RETRIES=99999999999999999999999"), ("env", "BIASCORE_SERVED_BACKOFF_S=inf"),
    ("env", "BIASCORE_SERVED_BACKOFF_S=1e308"), ("env", "BIASCORE_SERVED_BACKOFF_S=nan"),
])
def test_bounds_of_retries_back_off_and_timeout_are_one_line(where, value, tmp_path, capsys, monkeypatch):
    """Against a dead host, a bound beyond its limit is refused at once in one line (no traceback, no endless
    back-off, no OverflowError)."""
    model, extra = "served:http://127.0.0.1:9/v1", []
    if where == "url":
        model += "?" + value
    elif where == "cli":
        extra = [value]
    else:
        monkeypatch.setenv(*value.split("=", 1))
    started = time.monotonic()
    code, err = _cli(capsys, "score", "--model", model, *extra, "--benchmark", "demo", "--limit", "2",
                     "--cache-dir", str(tmp_path / "c"))
    assert time.monotonic() - started < 10
    name = value.split("=")[0].lstrip("-")
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0] and "cannot be reached" not in err[0], err
    assert name in err[0] and ("at most" in err[0] or "from 0 to" in err[0] or "not a" in err[0]), err


def test_an_answer_in_vllms_prompt_logprobs_form_is_named_with_what_to_change(server):
    server.fault("prompt_logprobs", times=-1)
    with pytest.raises(ServedError, match=r"in vLLM's prompt_logprobs form \(choices\[\]\.prompt_logprobs.*reads "
                                          r"the OpenAI echo form.*0\.5\.2 or later") as info:
        load_served("served:" + server.url)
    assert "\n" not in str(info.value)


def test_prompts_per_pair_on_the_demo_with_the_proof_in_every_request(server, tmp_path, capsys):
    """The whole CLI run (connection included) of the 38 demo pairs with the lm-eval prefix: 2 prompts score a pair;
    the proofs, the connection's probes and the /tokenize calls (many sentences per call) add little — at most 2.5
    per pair in all (4.3 before: one /tokenize call per sentence)."""
    server.stats(reset=True)
    code, err = _cli(capsys, "score", "--model", "served:" + server.url, "--benchmark", "demo", "--prefix", "lmeval",
                     "--cache-dir", str(tmp_path / "c"))
    stats = _drained(server)
    assert code == 0, err
    assert stats["prompts"] + stats["tokenize"] <= 2.5 * 38, stats
