"""A reference completions server: a **test double of the OpenAI-compatible protocol** that vLLM implements.

Not a product and not a mock: a real HTTP server (the standard library's threading server) in its own process,
serving a real model (an embedded alias such as ``smollm2-135m`` or a local folder, through transformers, in
float32) with vLLM's semantics for what :mod:`biascore.models.served` reads:

* ``GET /v1/models`` — ``{"data": [{"id": NAME, "max_model_len": N}]}``;
* ``POST /v1/completions`` — ``prompt`` a text (tokenised with the tokenizer's special tokens, as vLLM does) or
  a list of token ids; with ``echo`` and ``logprobs`` the answer's ``choices[0].logprobs`` holds ``tokens``,
  ``text_offset``, ``token_logprobs`` (log P(token i | tokens before it); None for the first) and
  ``top_logprobs``, followed by ``max_tokens`` greedily generated tokens;
* ``POST /tokenize`` — ``{"tokens": ids, "count": n, "max_model_len": N}`` (+ ``token_strs`` when asked);
* ``GET /tokenizer_info`` — the tokenizer's ``bos_token`` / ``eos_token`` (vLLM with
  ``--enable-tokenizer-info-endpoint``; ``--no-tokenizer-info`` leaves it out, a 404 as in vLLM's default).

Requests arriving together are batched into one padded forward pass (as a serving engine batches), so
concurrent clients see the server's throughput. ``GET /reference/stats`` (this double's own, not part of the
protocol) counts what it served: ``completions`` requests, the most of them in flight at once
(``max_in_flight``) and the largest forward batch (``largest_batch``), for tests that check a client's
concurrency; ``POST /reference/stats/reset`` zeroes them. ``--shift`` makes it report, as llama-cpp-python 0.3.36's server
does, each token's log-probability from the distribution *after* it (abetlen/llama-cpp-python#1983), to test the
conformance check; ``--perturb SEED`` adds small noise to the weights (a different model under the same name).

Run: ``python tests/served_reference.py --model smollm2-135m --port 0``; it prints ``READY <port>`` once it
serves.
"""
from __future__ import annotations

import argparse
import json
import queue
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch

MAX_BATCH = 32


class Engine:
    """The model with a batching loop: requests wait in a queue, one thread runs them in padded batches."""

    def __init__(self, model_name: str, shift: bool = False, perturb: int | None = None):
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from biascore.models.loading import load_model

        self.lm = load_model(model_name, device="cpu", dtype="fp32")
        self.model, self.tok, self.shift = self.lm.model, self.lm.tokenizer, shift
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
        self.stats = {"completions": 0, "max_in_flight": 0, "largest_batch": 0}
        threading.Thread(target=self._loop, daemon=True).start()

    def count(self, delta: int) -> None:
        """A completions request starts (+1) or ends (-1)."""
        with self.stats_lock:
            self.in_flight += delta
            if delta > 0:
                self.stats["completions"] += 1
                self.stats["max_in_flight"] = max(self.stats["max_in_flight"], self.in_flight)

    def reset_stats(self) -> None:
        with self.stats_lock:
            self.stats = {"completions": 0, "max_in_flight": 0, "largest_batch": 0}

    def _loop(self) -> None:
        while True:
            batch = [self.jobs.get()]
            while len(batch) < MAX_BATCH:
                try:
                    batch.append(self.jobs.get_nowait())
                except queue.Empty:
                    break
            with self.stats_lock:
                self.stats["largest_batch"] = max(self.stats["largest_batch"], len(batch))
            try:
                results = self._forward([ids for ids, _ in batch])
            except Exception as exc:  # noqa: BLE001 - handed to each waiting request
                results = [exc] * len(batch)
            for (_, box), res in zip(batch, results):
                box.put(res)

    @torch.inference_mode()
    def _forward(self, seqs: list[list[int]]) -> list[torch.Tensor]:
        """Per sequence: log-softmax (float64) of the float32 logits at every position."""
        width = max(len(s) for s in seqs)
        ids = torch.full((len(seqs), width), self.pad, dtype=torch.long)
        att = torch.zeros((len(seqs), width), dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, :len(s)] = torch.tensor(s)
            att[r, :len(s)] = 1
        logits = self.model(input_ids=ids, attention_mask=att).logits
        return [torch.log_softmax(logits[r, :len(s)].double(), dim=-1) for r, s in enumerate(seqs)]

    def logprobs(self, ids: list[int]) -> torch.Tensor:
        box: queue.Queue = queue.Queue(maxsize=1)
        self.jobs.put((ids, box))
        res = box.get()
        if isinstance(res, Exception):
            raise res
        return res

    def complete(self, body: dict) -> dict:
        """One choice per prompt (``prompt`` may be a batch: a list of texts or of token-id lists, as vLLM takes)."""
        prompt = body.get("prompt")
        batch = prompt if isinstance(prompt, list) and prompt and isinstance(prompt[0], (str, list)) else [prompt]
        choices, used = [], 0
        for index, one in enumerate(batch):
            choice, n_prompt = self._choice(one, body)
            choices.append({"index": index, **choice})
            used += n_prompt
        return {"id": "cmpl-reference", "object": "text_completion", "model": body.get("model"), "choices": choices,
                "usage": {"prompt_tokens": used}}

    def _choice(self, prompt, body: dict) -> tuple[dict, int]:
        if isinstance(prompt, str):
            ids = list(self.tok(prompt, add_special_tokens=True)["input_ids"])
        elif isinstance(prompt, list) and prompt and all(isinstance(t, int) for t in prompt):
            ids = list(prompt)
        else:
            raise ValueError("prompt must be a string or a list of token ids")
        if not ids or len(ids) > self.max_len:
            raise ValueError(f"prompt of {len(ids)} tokens (1 to {self.max_len} allowed)")
        n_new = int(body.get("max_tokens", 16) or 0)
        echo, want = bool(body.get("echo", False)), body.get("logprobs")
        seq, values, tops = list(ids), [None], [None]
        lp = self.logprobs(seq)
        for i in range(1, len(ids)):
            row = lp[i] if self.shift else lp[i - 1]
            values.append(float(row[ids[i]]))
            tops.append(self._top(row, ids[i]))
        if self.shift:  # llama-cpp-python: the first token gets the distribution after it too
            values[0] = float(lp[0][ids[0]])
        for step in range(n_new):
            nxt = int(lp[-1].argmax())
            seq.append(nxt)
            values.append(float(lp[-1][nxt]))
            tops.append(self._top(lp[-1], nxt))
            if len(seq) >= self.max_len or step == n_new - 1:
                break
            lp = self.logprobs(seq)
        start = 0 if echo else len(ids)
        texts, offsets = self._pieces(seq)
        text = "".join(texts[start:])
        choice = {"text": text, "finish_reason": "length", "logprobs": None}
        if want is not None:
            choice["logprobs"] = {"tokens": texts[start:], "text_offset": offsets[start:],
                                  "token_logprobs": values[start:], "top_logprobs": tops[start:]}
        return choice, len(ids)

    def _top(self, row: torch.Tensor, gold: int) -> dict:
        best = int(row.argmax())
        return {self.tok.decode([gold]): float(row[gold]), self.tok.decode([best]): float(row[best])}

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


def make_handler(engine: Engine, name: str, tokenizer_info: bool):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet
            pass

        def _send(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _body(self) -> dict:
            n = int(self.headers.get("Content-Length") or 0)
            return json.loads(self.rfile.read(n) or b"{}")

        def do_GET(self):  # noqa: N802
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": name, "object": "model", "owned_by": "reference",
                                                             "max_model_len": engine.max_len}]})
            elif self.path.rstrip("/") == "/reference/stats":
                with engine.stats_lock:
                    self._send(200, dict(engine.stats))
            elif self.path.rstrip("/") == "/tokenizer_info" and tokenizer_info:
                self._send(200, {"tokenizer_class": type(engine.tok).__name__, "bos_token": engine.tok.bos_token,
                                 "eos_token": engine.tok.eos_token})
            else:
                self._send(404, {"detail": "Not Found"})

        def do_POST(self):  # noqa: N802
            try:
                body = self._body()
                if body.get("model") not in (None, name):
                    self._send(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                    return
                if self.path.rstrip("/") == "/reference/stats/reset":
                    engine.reset_stats()
                    self._send(200, {})
                elif self.path.rstrip("/") == "/v1/completions":
                    engine.count(+1)
                    try:
                        answer = engine.complete(body)
                    finally:
                        engine.count(-1)
                    self._send(200, answer)
                elif self.path.rstrip("/") == "/tokenize":
                    ids = list(engine.tok(body["prompt"], add_special_tokens=bool(body.get("add_special_tokens", True)))
                               ["input_ids"])
                    out = {"tokens": ids, "count": len(ids), "max_model_len": engine.max_len}
                    if body.get("return_token_strs"):
                        out["token_strs"] = engine.tok.convert_ids_to_tokens(ids)
                    self._send(200, out)
                else:
                    self._send(404, {"detail": "Not Found"})
            except (ValueError, KeyError, TypeError) as exc:
                self._send(400, {"error": {"message": str(exc), "type": "BadRequestError"}})

    return Handler


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
    ap.add_argument("--shift", action="store_true", help="llama-cpp-python's misaligned log-probs (a bad server)")
    ap.add_argument("--perturb", type=int, default=None, help="add seeded noise to the weights")
    ap.add_argument("--no-tokenizer-info", action="store_true")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of the forward passes")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    engine = Engine(args.model, shift=args.shift, perturb=args.perturb)
    server = ThreadingHTTPServer((args.host, args.port), make_handler(engine, args.name, not args.no_tokenizer_info))
    server.daemon_threads = True
    print(f"READY {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
