"""A reference completions server: a **test double of the OpenAI-compatible protocol** that vLLM implements.

Not a product and not a mock: a real HTTP server (the standard library's threading server) in its own process,
serving a real model (an embedded alias such as ``smollm2-135m`` or a local folder, through transformers, in
float32) with vLLM's semantics for what :mod:`biascore.models.served` reads:

* ``GET /v1/models`` — ``{"data": [{"id": NAME, "max_model_len": N}]}``;
* ``POST /v1/completions`` — ``prompt`` a text (tokenised with the tokenizer's special tokens, as vLLM does),
  a list of token ids, or a list of either (one choice per prompt, by ``index``; the prompts of one request go
  to the engine together, as vLLM schedules them); with ``echo`` and ``logprobs`` each choice's ``logprobs``
  holds ``tokens`` (``token_id:N`` with ``return_tokens_as_token_ids``, as vLLM writes them), ``text_offset``,
  ``token_logprobs`` (log P(token i | tokens before it); None for the first) and ``top_logprobs``, followed by
  ``max_tokens`` greedily generated tokens;
* ``POST /tokenize`` — ``{"tokens": ids, "count": n, "max_model_len": N}`` (+ ``token_strs`` when asked);
* ``GET /tokenizer_info`` — the tokenizer's ``bos_token`` / ``eos_token`` (vLLM with
  ``--enable-tokenizer-info-endpoint``; ``--no-tokenizer-info`` leaves it out, a 404 as in vLLM's default).

Requests arriving together are batched into padded forward passes of prompts of alike length (as a serving
engine batches), so concurrent clients see the server's throughput. ``GET /reference/stats`` (this double's own,
not part of the protocol) counts what it served: ``completions`` requests, the most of them in flight at once
(``max_in_flight``) and the largest forward batch (``largest_batch``), for tests that check a client's
concurrency; ``prompts`` counts the prompts they carried, ``tokenize`` the ``/tokenize`` requests,
``forward_passes`` and ``padded_tokens`` the forward batches and their tokens with padding (the server's work),
``forward_s`` the seconds those passes took and ``in_flight`` the requests being answered now;
``POST /reference/stats/reset`` zeroes them. ``--perturb SEED`` adds small noise to the weights (a different model
under the same name);
``--float32-softmax`` computes the log-probabilities as vLLM does (a plain float32 log-softmax, less precise near
P = 1);
``--api-key KEY`` answers 401 to ``/v1`` requests without ``Authorization: Bearer KEY`` (as ``vllm serve
--api-key``).

Faults, for tests of a client's checks (this double's own, not part of the protocol): ``POST /reference/fault``
with ``{"kind": K, "times": N, ...}`` makes the next N completions requests (-1: all) misbehave — ``null`` (one
``token_logprobs`` entry, at ``at``, becomes null), ``wrong_id`` (the token echoed at ``at`` becomes
``token_id:0``), ``text_tokens`` (``return_tokens_as_token_ids`` ignored: token texts echoed), ``shift`` (token-id
prompts get llama-cpp-python's shifted log-probabilities while text prompts stay right: a replica that differs;
with ``above`` N only in requests of more than N prompts: a server wrong only in large batches),
``prompt_logprobs`` (each choice in vLLM's ``prompt_logprobs`` form, its ``logprobs`` holding the generated token
only), ``slow`` (answer after ``delay_s`` seconds), ``cut`` (send half the answer, then close the connection),
``status`` (answer ``code``; with ``echo_auth`` the message repeats the request's ``Authorization`` header, as
some gateways do), ``text_only`` (token-id prompts refused with a 400: a server that takes text only),
``no_tokenize`` (``/tokenize`` answers 404, as llama-cpp-python's server, whose tokenizer is at
``/extras/tokenize``), ``no_tokenizer_info`` (as ``--no-tokenizer-info``); ``"shift": true`` with any kind makes
every prompt, text prompts too, get each token's log-probability from the distribution *after* it, as
llama-cpp-python 0.3.36's server does (abetlen/llama-cpp-python#1983), to test the conformance check; ``{}`` clears
it.

``--balance URL,URL`` makes it no server of its own but a round-robin load balancer in front of those servers
(each connection to the next one, as a TCP balancer does): replicas that may differ.

Run: ``python tests/served_reference.py --model smollm2-135m --port 0``; it prints ``READY <port>`` once it
serves.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import queue
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator, NamedTuple

MAX_BATCH = 256  # prompts in one forward batch at most (vLLM's max_num_seqs)
MAX_BATCH_TOKENS = 4096  # padded tokens in one forward batch at most (the in-process engine's budget on a CPU)


class Read(NamedTuple):
    """What one sequence's forward pass gives its answer, per position k (log-probabilities in float64): ``same[k]``
    = log P(token k) and ``after[k]`` = log P(token k + 1), both from the distribution at k, and that distribution's
    most probable token ``best[k]`` with its log-probability ``best_lp[k]``."""

    same: list[float]
    after: list[float]
    best: list[int]
    best_lp: list[float]


class Engine:
    """The model with a batching loop: requests wait in a queue, one thread runs them in padded batches."""

    def __init__(self, model_name: str, perturb: int | None = None, float32_softmax: bool = False):
        import torch  # here, not at the top: a balancer (--balance) starts without it

        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from biascore.models.loading import load_model

        self.lm = load_model(model_name, device="cpu", dtype="fp32")
        self.model, self.tok = self.lm.model, self.lm.tokenizer
        self.float32_softmax = float32_softmax
        if perturb is not None:
            gen = torch.Generator().manual_seed(perturb)
            with torch.no_grad():
                for p in self.model.parameters():
                    p.add_(torch.randn(p.shape, generator=gen) * 0.02 * p.detach().std().clamp(min=1e-3))
        self.max_len = int(getattr(self.model.config, "max_position_embeddings", 2048))
        self.pad = self.tok.pad_token_id if self.tok.pad_token_id is not None else 0
        self.jobs: queue.Queue = queue.Queue()
        self.stats_lock = threading.Lock()
        self.in_flight = 0
        self.reset_stats()
        self.fault: dict = {}
        self._texts: dict[int, str] = {}
        threading.Thread(target=self._loop, daemon=True).start()

    def take_fault(self) -> dict:
        """The fault this completions request gets (and one fewer left), or {}."""
        with self.stats_lock:
            fault = dict(self.fault)
            if fault and fault.get("times", -1) > 0:
                self.fault["times"] -= 1
                if self.fault["times"] == 0:
                    self.fault = {}
            return fault

    def count(self, delta: int) -> None:
        """A completions request starts (+1) or ends (-1)."""
        with self.stats_lock:
            self.in_flight += delta
            if delta > 0:
                self.stats["completions"] += 1
                self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.in_flight)

    def reset_stats(self) -> None:
        with self.stats_lock:
            self.stats = {"completions": 0, "max_in_flight": 0, "largest_batch": 0, "prompts": 0, "tokenize": 0,
                          "forward_passes": 0, "padded_tokens": 0, "forward_s": 0.0}

    def _loop(self) -> None:
        """Each queue item is one request's prompts (queued together, as vLLM schedules a request's prompts). At each
        step every prompt waiting is planned into forward batches as the in-process engine plans its own
        (:func:`biascore.models.lm_scoring._batches`: sorted by length, under a token budget, MAX_BATCH_TOKENS as
        vLLM's scheduler takes one per step, a new batch once padding would pass 8 %: vLLM packs a batch's prompts
        without padding, this double pads them to the longest), and the batch holding the oldest prompt runs (so the
        first requests are answered first, equally for every client); the rest wait with whatever arrives meanwhile.
        One request's prompts keep their answers. (Gathering one budget of requests per step split batches where a
        step ended: crows-en-gso's 231 pairs from 16 concurrent requests took 12–13 passes against the engine's 9;
        planned again at every step, 10.)"""
        from biascore.models.lm_scoring import BatchPlan, _batches

        plan = BatchPlan(max_tokens=MAX_BATCH_TOKENS, max_rows=MAX_BATCH)
        waiting: list = []  # (ids, box) of the prompts not yet run, oldest first
        while True:
            if not waiting:
                waiting.extend(self.jobs.get())
            while True:
                try:
                    waiting.extend(self.jobs.get_nowait())
                except queue.Empty:
                    break
            batches = _batches([len(ids) for ids, _ in waiting], plan)
            run = set(next(b for b in batches if 0 in b))  # the batch of the oldest prompt
            part = [one for i, one in enumerate(waiting) if i in run]
            waiting = [one for i, one in enumerate(waiting) if i not in run]
            with self.stats_lock:
                self.stats["largest_batch"] = max(self.stats["largest_batch"], len(part))
                self.stats["forward_passes"] += 1
                self.stats["padded_tokens"] += len(part) * max(len(ids) for ids, _ in part)
            t0 = time.perf_counter()
            try:
                results = self._forward([ids for ids, _ in part])
            except Exception as exc:  # noqa: BLE001 - handed to each waiting request
                results = [exc] * len(part)
            with self.stats_lock:
                self.stats["forward_s"] += time.perf_counter() - t0
            for (_, box), res in zip(part, results):
                box.put(res)

    def _forward(self, seqs: list[list[int]]) -> list[Read]:
        """Per sequence, what an answer reads at each position k (:class:`Read`). The LM head runs on the real
        positions only, not the padding (vLLM computes logits only where it reads them). Each log-probability is
        z − log1p(Σ_{i≠argmax} exp z_i) with z = logits − max, the formula the in-process engine uses
        (:func:`biascore.models.lm_scoring._launch_gold_logprobs`): float32 over the vocabulary, yet with the relative
        precision of log P near 0 (P near 1) that the reproducibility contract holds served runs to, which vLLM's
        plain float32 log-softmax loses (one failed it on the demo pairs; ``--float32-softmax`` computes that one);
        a float64 log-softmax over the vocabulary would cost the server ~15 % of its forward pass."""
        import torch

        from biascore.models.lm_scoring import position_logits

        with torch.inference_mode():
            width = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
            att = torch.zeros((len(seqs), width), dtype=torch.long)
            for r, s in enumerate(seqs):
                ids[r, :len(s)] = torch.tensor(s)
                att[r, :len(s)] = 1
            rows, cols = att.nonzero(as_tuple=True)  # row-major: each sequence's positions in order
            z = position_logits(self.lm, ids, att, rows, cols).float()
            top, best = z.max(dim=-1, keepdim=True)
            after = ids[rows, (cols + 1).clamp(max=width - 1)]  # the next token (any valid id at a sequence's end)
            reads = torch.stack([ids[rows, cols], after, best[:, 0]], dim=1)
            if self.float32_softmax:  # vLLM's prompt log-probabilities: a plain float32 log-softmax
                picked = torch.log_softmax(z, dim=-1).gather(1, reads).double()
            else:
                z.sub_(top)  # in place: no vocabulary-sized temporaries
                picked = z.gather(1, reads).double()
                picked -= torch.log1p(z.exp_().scatter_(1, best, 0.0).sum(dim=-1).double())[:, None]
            columns = (picked[:, 0], picked[:, 1], best[:, 0], picked[:, 2])
            return [Read(*(part.tolist() for part in parts))
                    for parts in zip(*(c.split([len(s) for s in seqs]) for c in columns))]

    def logprobs(self, ids: list[int]) -> Read:
        return self.logprobs_many([ids])[0]

    def logprobs_many(self, seqs: list[list[int]]) -> list[Read]:
        """Every sequence queued at once, as one item (one forward batch where they fit), then waited for."""
        item = [(ids, queue.Queue(maxsize=1)) for ids in seqs]
        self.jobs.put(item)
        out = [box.get() for _, box in item]
        for res in out:
            if isinstance(res, Exception):
                raise res
        return out

    def complete(self, body: dict, shift_above: int | None = None, fault: dict | None = None) -> dict:
        """One choice per prompt (``prompt`` may be a batch: a list of texts or of token-id lists, as vLLM takes).
        ``shift_above``: token-id prompts get shifted log-probabilities in a request of more prompts; ``fault``: the
        request's (its ``text_only`` kind and ``shift`` flag, module docstring)."""
        fault = fault or {}
        shift = bool(fault.get("shift"))
        prompt = body.get("prompt")
        batch = prompt if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)) else [prompt]
        shift_ids = shift_above is not None and len(batch) > shift_above
        texts = [isinstance(one, str) for one in batch]
        if fault.get("kind") == "text_only" and not all(texts):
            raise ValueError("this server takes text prompts only")
        ids = [self._ids(one) for one in batch]
        first = self.logprobs_many(ids)
        choices = [{"index": index, **self._choice(one, lp, body, shift or (shift_ids and not text))}
                   for index, (one, lp, text) in enumerate(zip(ids, first, texts))]
        return {"id": "cmpl-reference", "object": "text_completion", "model": body.get("model"), "choices": choices,
                "usage": {"prompt_tokens": sum(len(one) for one in ids)}}

    def _ids(self, prompt) -> list[int]:
        if isinstance(prompt, str):
            ids = list(self.tok(prompt, add_special_tokens=True)["input_ids"])
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            ids = list(prompt)
        else:
            raise ValueError("prompt must be a string or a list of token ids")
        if not ids or len(ids) > self.max_len:
            raise ValueError(f"prompt of {len(ids)} tokens (1 to {self.max_len} allowed)")
        return ids

    def _choice(self, ids: list[int], read: Read, body: dict, shift: bool) -> dict:
        n_new = int(body.get("max_tokens", 16) or 0)
        echo, want = bool(body.get("echo", False)), body.get("logprobs")
        seq = list(ids)
        # token i ≥ 1 is read from the distribution before it, at i - 1; llama-cpp-python's shift reads it from the
        # distribution after it, at i (and the first token too)
        rows = range(1, len(ids)) if shift else range(len(ids) - 1)
        read_at = read.same if shift else read.after
        values = [read.same[0] if shift else None, *(read_at[r] for r in rows)]
        tops = [None, *(self._top(tok, read_at[r], read.best[r], read.best_lp[r]) for tok, r in zip(ids[1:], rows))]
        for step in range(n_new):
            nxt, value = read.best[-1], read.best_lp[-1]
            seq.append(nxt)
            values.append(value)
            tops.append(self._top(nxt, value, nxt, value))
            if len(seq) >= self.max_len or step == n_new - 1:
                break
            read = self.logprobs(seq)
        start = 0 if echo else len(ids)
        texts, offsets = self._pieces(seq)
        text = "".join(texts[start:])
        choice = {"text": text, "finish_reason": "length", "logprobs": None}
        if want is not None:
            tokens = [f"token_id:{t}" for t in seq] if body.get("return_tokens_as_token_ids") else texts
            choice["logprobs"] = {"tokens": tokens[start:], "text_offset": offsets[start:],
                                  "token_logprobs": values[start:], "top_logprobs": tops[start:]}
        return choice

    def _top(self, gold: int, value: float, best: int, best_value: float) -> dict:
        """``top_logprobs`` at one position: the token read there and the most probable one (vLLM gives the top
        ``logprobs`` and the token itself)."""
        return {self._text(gold): value, self._text(best): best_value}

    def _text(self, token: int) -> str:
        """One token's text (decoded once per id: the decode is the slow part of building an answer)."""
        text = self._texts.get(token)
        if text is None:
            text = self._texts[token] = self.tok.decode([token])
        return text

    def _pieces(self, ids: list[int]) -> tuple[list[str], list[int]]:
        """Each token's text as incremental decoding gives it, and its offset in the decoded text."""
        texts, offsets, prev = [], [], ""
        for k in range(len(ids)):
            cur = self.tok.decode(ids[:k + 1])
            common = len(prev) if cur.startswith(prev) else 0
            offsets.append(common)
            texts.append(cur[common:])
            prev = cur
        return texts, offsets


def make_handler(engine: Engine, name: str, tokenizer_info: bool, api_key: str | None = None):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as asyncio sets on vLLM's sockets: else an answer's body waits ~40 ms for the ACK of its headers
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _authorized(self) -> bool:
            """``--api-key``: /v1 requests carry ``Authorization: Bearer KEY`` (vLLM checks /v1 only)."""
            if api_key is None or not self.path.startswith("/v1"):
                return True
            if self.headers.get("Authorization", "") == f"Bearer {api_key}":
                return True
            self._send(401, {"error": "Unauthorized"})
            return False

        def _cut(self, body: dict) -> None:
            """Half an answer, then the connection closed (a fault)."""
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[:len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)

        def _body(self) -> dict:
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def do_GET(self):  # noqa: N802
            if not self._authorized():
                return
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "reference",
                                                             "max_model_len": engine.max_len}]})
            elif self.path.rstrip("/") == "/reference/stats":
                with engine.stats_lock:
                    self._send(200, {**engine.stats, "in_flight": engine.in_flight})
            elif self.path.rstrip("/") == "/tokenizer_info" and tokenizer_info and engine.fault.get("kind") != \
                    "no_tokenizer_info":
                self._send(200, {"tokenizer_class": type(engine.tok).__name__, "bos_token": engine.tok.bos_token,
                                 "eos_token": engine.tok.eos_token})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):  # noqa: N802
            try:
                body = self._body()
                if not self._authorized():
                    return
                if self.path.rstrip("/") == "/reference/fault":
                    with engine.stats_lock:
                        engine.fault = dict(body)
                    self._send(200, {})
                    return
                if body.get("model") not in (None, name):
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                    return
                if self.path.rstrip("/") == "/reference/stats/reset":
                    engine.reset_stats()
                    self._send(200, {})
                elif self.path.rstrip("/") == "/v1/completions":
                    fault = engine.take_fault()
                    kind = fault.get("kind")
                    engine.count(+1)
                    try:
                        if kind == "status":
                            said = f"Invalid API key provided: {self.headers.get('Authorization')}" \
                                if fault.get("echo_auth") else "injected fault"
                            self._send(int(fault.get("code", 500)), {"error": {"message": said}})
                            return
                        if kind == "slow":
                            threading.Event().wait(float(fault.get("delay_s", 60)))
                        if kind == "text_tokens":
                            body.pop("return_tokens_as_token_ids", None)
                        answer = engine.complete(body, int(fault.get("above", 0)) if kind == "shift" else None, fault)
                        with engine.stats_lock:
                            engine.stats["prompts"] += len(answer["choices"])
                    finally:
                        engine.count(-1)
                    if kind in ("null", "wrong_id"):
                        lp = answer["choices"][0]["logprobs"]
                        at = min(int(fault.get("at", 1)), len(lp["tokens"]) - 1)
                        if kind == "null":
                            lp["token_logprobs"][at] = None
                        else:
                            lp["tokens"][at] = "token_id:0"
                    if kind == "prompt_logprobs":
                        for choice in answer["choices"]:
                            lp = choice["logprobs"]
                            ids = [int(t.split(":")[1]) for t in lp["tokens"]]
                            choice["prompt_logprobs"] = [None] + [
                                {str(t): {"logprob": v, "rank": 1, "decoded_token": engine._text(t)}}
                                for t, v in zip(ids[1:-1], lp["token_logprobs"][1:-1])]
                            choice["logprobs"] = {k: v[-1:] for k, v in lp.items()}
                    if kind == "cut":
                        self._cut(answer)
                        return
                    self._send(200, answer)
                elif self.path.rstrip("/") == "/tokenize" and engine.fault.get("kind") != "no_tokenize":
                    ids = list(engine.tok(body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True)))
                               ["input_ids"])
                    out = {"tokens": ids, "count": len(ids), "max_model_len": engine.max_len}
                    with engine.stats_lock:
                        engine.stats["tokenize"] += 1
                    if body.get("return_token_strs"):
                        out["token_strs"] = engine.tok.convert_ids_to_tokens(ids)
                    self._send(200, out)
                else:
                    self._send(404, {"detail": "Not Found"})
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc), "type": "BadRequestError"}})

    return Handler


def make_balancer(backends: list[str]):
    """A round-robin load balancer, per connection as a TCP balancer (or a Kubernetes service) is: each new
    connection goes to the next backend's root, and every request on it (any path) to that backend."""
    import itertools

    import httpx

    turn, lock, client = itertools.cycle(backends), threading.Lock(), httpx.Client(timeout=600)

    class Balancer(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args):  # quiet
            pass

        def _forward(self, method: str) -> None:
            if not hasattr(self, "root"):  # one handler per connection: its requests all go to one backend
                with lock:
                    self.root = next(turn)
            root = self.root
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
            headers = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
            resp = client.request(method, root.rstrip("/") + self.path, content=data, headers=headers)
            self.send_response(resp.status_code)
            self.send_header("Content-Type", resp.headers.get("content-type", "application/json"))
            self.send_header("Content-Length", str(len(resp.content)))
            self.end_headers()
            self.wfile.write(resp.content)

        def do_GET(self):  # noqa: N802
            self._forward("GET")

        def do_POST(self):  # noqa: N802
            self._forward("POST")

    return Balancer


class Process:
    """A reference server in its own process (for tests and bench/): started, waited for, killed, restarted."""

    def __init__(self, *args: str, port: int = 0):
        self.args, self.port, self.proc = list(args), port, None

    def start(self) -> "Process":
        import os
        import subprocess

        repo = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": repo + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.proc = subprocess.Popen([sys.executable, __file__, "--port", str(self.port), *self.args],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env, cwd=repo)
        for line in self.proc.stdout:  # waits for the event itself: the line the server prints once it serves
            if line.startswith("READY "):
                self.port = int(line.split()[1])
                return self
        raise RuntimeError(f"the reference server {self.args} exited with {self.proc.wait()} before serving")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def fault(self, kind: str | None = None, times: int = -1, **params) -> None:
        """Make the next ``times`` completions requests misbehave (module docstring); no ``kind``: clear it."""
        import httpx

        body = {"kind": kind, "times": times, **params} if kind else {}
        httpx.post(f"http://127.0.0.1:{self.port}/reference/fault", json=body, timeout=30).raise_for_status()

    @contextlib.contextmanager
    def faulty(self, kind: str, times: int = -1, **params) -> Iterator[None]:
        """:meth:`fault` for the ``with`` block, cleared after it however it ends (the server may be shared)."""
        self.fault(kind, times, **params)
        try:
            yield
        finally:
            self.fault(None)

    def stats(self, reset: bool = False) -> dict:
        """The double's counters (``GET /reference/stats``); ``reset``: zero them after reading."""
        import httpx

        root = f"http://127.0.0.1:{self.port}"
        out = httpx.get(f"{root}/reference/stats", timeout=30).json()
        if reset:
            httpx.post(f"{root}/reference/stats/reset", json={}, timeout=30)
        return out

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
            self.proc.stdout.close()


def serving(*args: str):
    """A reference server for as long as a fixture lasts: ``yield from serving(...)`` starts it, yields the
    :class:`Process` and kills it afterwards."""
    proc = Process(*args).start()
    try:
        yield proc
    finally:
        proc.kill()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--name", default="HuggingFaceTB/SmolLM2-135M-Instruct", help="the served model name")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--perturb", type=int, default=None, help="add seeded noise to the weights")
    ap.add_argument("--no-tokenizer-info", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the forward passes")
    ap.add_argument("--api-key", default=None, help="answer 401 to /v1 requests without this bearer key")
    ap.add_argument("--float32-softmax", action="store_true",
                    help="log-probabilities from a plain float32 log-softmax, as vLLM computes them")
    ap.add_argument("--balance", default=None, metavar="URL,URL",
                    help="no server: a round-robin load balancer in front of these servers' roots")
    args = ap.parse_args(argv)
    if args.balance:
        server = ThreadingHTTPServer((args.host, args.port), make_balancer(args.balance.split(",")))
        server.daemon_threads = True
        print(f"READY {server.server_address[1]}", flush=True)
        server.serve_forever()
    import torch

    torch.set_num_threads(args.threads)
    engine = Engine(args.model, perturb=args.perturb, float32_softmax=args.float32_softmax)
    server = ThreadingHTTPServer((args.host, args.port),
                                 make_handler(engine, args.name, not args.no_tokenizer_info, args.api_key))
    server.daemon_threads = True
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
