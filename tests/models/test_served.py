"""Served models (biascore.models.served) against the reference server (tests/served_reference.py, a test double of
vLLM's completions protocol serving SmolLM2 in float32 over real HTTP, in its own process).

Served = in-process within the reproducibility contract (docs/reproducibility.md) for b(u), S_JSD, the PLL and the
lm-eval-compatible score, under both prefix conventions, with the same ties; the conformance check refuses a
server whose log-probabilities are shifted by one; the fingerprint follows the served weights; a server killed
mid-run leaves its finished shards and the run resumes from them once it is back; bad URLs, unreachable hosts
and methods that need the weights get one line.
"""
from __future__ import annotations

import numpy as np
import pytest

import biascore
from biascore.cli.main import main
from biascore.store.cache import ResultCache
from biascore.contract.method import NotApplicable
from biascore.models.handle import open_model
from biascore.models.served import ConformanceError, ServedError
from reproducibility_contract import compare_frames, logp_tolerance
from biascore.methods.attribution.scorer import summarize
from biascore.runs import runner
from biascore.methods import get
from served_reference import Process

# results stored here (served / quantized models) stay out of the session cache that the page tests list
pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture
def good_server(reference_server):
    """The faithful reference server (SmolLM2, float32): the session's (tests/conftest.py)."""
    return reference_server


@pytest.fixture(scope="module")
def served(reference_server):
    return open_model("served:" + reference_server.url)


def _same_ll(a, b) -> None:
    """Whole-sentence log-likelihoods (lm-eval score) within the summed per-token bound."""
    for col in ("ll_more", "ll_less"):
        x, y = a[col].to_numpy(float), b[col].to_numpy(float)
        ok = np.isnan(x) == np.isnan(y)
        assert ok.all()
        m = ~np.isnan(x)
        assert np.all(np.abs(x[m] - y[m]) <= 1e-4 * np.abs(x[m]) + 1e-6), col


def test_served_identity_is_the_server_name_and_a_measured_fingerprint(served):
    ident = served.identity()
    assert ident.name == "HuggingFaceTB/SmolLM2-135M-Instruct (served)" and ident.kind == "causal"
    assert ident.dtype == "served" and ident.device == "server" and len(ident.fingerprint) == 64
    assert served.extra["conformance"]["median_p"] > 0.5
    assert (served.special_tokens().bos, served.special_tokens().eos) == ("<|im_start|>", "<|im_end|>")


def test_the_proof_is_the_probes_prefix_and_the_fingerprint_the_whole_probe(served, monkeypatch):
    """Each scoring request ends with the probe's first PROOF_TOKENS ids (their log-probabilities are the whole
    probe's first ones: the model is causal); the fingerprint, so every served cache key, is still the whole probe's,
    as measured alone before it rode in the conformance check's request."""
    from biascore.models.served.fingerprint import PROBE, PROOF_TOKENS, Probe

    probe, client = served.extra["probe"], served.client
    ids = client.tokenize(PROBE, True)
    assert probe.ids == tuple(ids) and len(ids) > PROOF_TOKENS
    assert Probe(probe.model, tuple(ids), tuple(client.echo(ids).logprobs)).fingerprint() == served.fingerprint
    sent, echo_many = [], client.echo_many
    monkeypatch.setattr(client, "echo_many",
                        lambda prompts, **kw: sent.append(list(prompts)) or echo_many(prompts, **kw))
    seqs = [client.tokenize(text) for text in ("Zebras proved it on a Tuesday.", "Okapis proved it on a Tuesday.")]
    served.causal_gold_logprobs(seqs, [list(range(len(s))) for s in seqs])
    assert sent and all(list(request[-1]) == ids[:PROOF_TOKENS] for request in sent), sent


@pytest.mark.exactness
@pytest.mark.parametrize("prefix", ["published", "lmeval"])
def test_served_equals_in_process_within_the_contract(served, smollm_demo_frame, prefix):
    """b(u), S_JSD, PLL and the lm-eval-compatible log-likelihoods on the demo benchmark, both prefix conventions
    (SmolLM2: <|im_end|> vs <|im_start|>); the same tokens, U, ties and verdicts up to the contract."""
    here = smollm_demo_frame(prefix)
    there = runner.run(get("attribution"), served, "demo", prefix=prefix).frame
    assert there["prefix_token_id"].tolist() == here["prefix_token_id"].tolist()
    assert there["prefix_token"].iloc[0] == served.prefix_token(prefix).text
    agreement = compare_frames(here, there)
    assert agreement.within_contract, agreement.problems
    assert agreement.tokens > 100
    assert there["skipped_reason"].tolist() == here["skipped_reason"].tolist()
    _same_ll(here, there)
    for metric in ("attribution", "pll"):  # ties counted alike (common-prefix tokens give b(u) = 0 exactly)
        a, b = summarize(here, metric), summarize(there, metric)
        assert a["ties"].tolist() == b["ties"].tolist()
    zero_here = [float(x) == 0.0 for bu in here["bu"] for x in bu]
    zero_there = [float(x) == 0.0 for bu in there["bu"] for x in bu]
    assert zero_here == zero_there and any(zero_here)


def test_served_results_are_labelled_and_cached_apart(served, smollm):
    result = biascore.run("attribution", served, "demo", limit=4)
    assert result.precision == "served (precision as the server computes)"
    assert "served (precision as the server computes)" in "\n".join(result.method.report(result))
    assert result.meta["dtype"] == "served"
    assert biascore.run("attribution", smollm, "demo", limit=4).digest != result.digest


def test_fingerprint_follows_the_weights_not_the_name(good_server, perturbed_server, served):
    again = open_model("served:" + good_server.url + "#HuggingFaceTB/SmolLM2-135M-Instruct")
    assert again.fingerprint == served.fingerprint
    other = open_model("served:" + perturbed_server.url)
    assert other.name == served.name and other.fingerprint != served.fingerprint


def test_prefix_needing_an_untold_token_is_refused_in_one_line(perturbed_server):
    with perturbed_server.faulty("no_tokenizer_info"):  # /tokenizer_info answers 404: its EOS is unknown
        other = open_model("served:" + perturbed_server.url)
    with pytest.raises(ValueError, match="does not say its tokenizer's BOS/EOS token that the published") as info:
        biascore.run("attribution", other, "demo", limit=2)
    assert "\n" not in str(info.value)


def test_shifted_logprobs_fail_the_conformance_check(good_server):
    """Log-probabilities shifted by one, as llama-cpp-python's server reports them (the reference server's fault)."""
    with good_server.faulty("shift", shift=True), pytest.raises(ConformanceError,
                                                                match="misaligned prompt log-probabilities") as info:
        open_model("served:" + good_server.url)
    assert "\n" not in str(info.value)


def test_methods_that_need_weights_refuse_a_served_model(served):
    for method, needle in (("heads", "needs the model's weights"), ("logprob", "needs the model's weights")):
        with pytest.raises(NotApplicable, match=needle) as info:
            biascore.run(method, served)
        assert "served" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("url, needle", [
    ("served:ftp://127.0.0.1/v1", "expected served:http://HOST:PORT/v1"),
    ("served:http://", "expected served:http://HOST:PORT/v1"),
    ("served:http://127.0.0.1:notaport/v1", "the port is not a number"),
    ("served:http://127.0.0.1:9/v1", "cannot be reached"),
])
def test_bad_urls_and_unreachable_hosts_give_one_line(url, needle, capsys):
    with pytest.raises(ServedError, match=needle) as info:
        open_model(url)
    assert "\n" not in str(info.value)
    assert main(["score", "--model", url, "--benchmark", "demo", "--limit", "2"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and needle in err[0] and "Traceback" not in err[0]


def test_a_model_the_server_does_not_serve_is_one_line(good_server):
    with pytest.raises(ServedError, match="serves HuggingFaceTB/SmolLM2-135M-Instruct, not 'gpt-9'"):
        open_model("served:" + good_server.url + "#gpt-9")


def test_killed_server_resumes_from_shards(tmp_path, processes, smollm_demo_frame):
    """Kill the server's process after the first shard, get one line; restart it on the same port and the run
    resumes from the stored shard, ending equal (within the contract) to an uninterrupted in-process run."""
    cache = ResultCache(tmp_path / "cache")
    proc = Process().start()
    try:
        name = "served:" + proc.url
        seen = []

        def kill_after_first_shard(done, total):
            # past 8: the first shard has been checked (the fingerprint's probe measured again) and written
            seen.append(done)
            if done > 8 and proc.proc.poll() is None:
                proc.kill()

        with pytest.raises(ServedError, match="run the same command again when it is back") as info:
            runner.run(get("attribution"), biascore.load_model(name), "demo", limit=24, shard_size=8, cache=cache,
                       progress=kill_after_first_shard)
        assert "\n" not in str(info.value)
        proc.start()  # the same port: the same served name
        resumed = []
        frame = runner.run(get("attribution"), biascore.load_model(name), "demo", limit=24, shard_size=8, cache=cache,
                           progress=lambda d, t: resumed.append(d)).frame
        assert resumed[0] >= 8  # the finished shard was read back, not recomputed
        assert compare_frames(smollm_demo_frame(limit=24), frame).within_contract
    finally:
        proc.kill()


def test_contract_bound_covers_served_logprobs(served, smollm):
    """Per token, served log P within ε(u) of in-process log P (the contract's first line), read directly."""
    from biascore.models.lm_scoring import causal_gold_logprobs

    seqs = [smollm.tokenizer("The nurse said she was tired.", add_special_tokens=False)["input_ids"]]
    pos = [list(range(len(seqs[0])))]
    a = causal_gold_logprobs(smollm, seqs, pos)[0]
    b = causal_gold_logprobs(served, seqs, pos)[0]
    assert np.all(np.abs(a - b) <= logp_tolerance(a))


def test_retries_and_back_off_are_settings(monkeypatch):
    """The client retries 4 times, 0.5 s doubling, unless BIASCORE_SERVED_RETRIES / _BACKOFF_S say otherwise (the
    tests' session sets the back-off to 0); a bad value is one line."""
    from biascore.models.served.client import ServedClient, ServedName

    name = ServedName.parse("served:http://127.0.0.1:9/v1")
    monkeypatch.delenv("BIASCORE_SERVED_BACKOFF_S", raising=False)
    client = ServedClient(name)
    assert (client.retries, client.backoff_s) == (4, 0.5)
    client.close()
    monkeypatch.setenv("BIASCORE_SERVED_RETRIES", "1")
    monkeypatch.setenv("BIASCORE_SERVED_BACKOFF_S", "0")
    client = ServedClient(name)
    assert (client.retries, client.backoff_s) == (1, 0.0)
    with pytest.raises(ServedError, match=r"cannot be reached .*\(after 2 tries\)"):
        client.models()
    client.close()
    monkeypatch.setenv("BIASCORE_SERVED_BACKOFF_S", "soon")
    with pytest.raises(ServedError, match="BIASCORE_SERVED_BACKOFF_S='soon' is not a number"):
        ServedClient(name)
