"""HTTP client of an OpenAI-compatible completions server (vLLM, SGLang, …): prompt log-probabilities and tokens.

The endpoints used, with the semantics vLLM implements:

* ``GET  {base}/models`` — the served model names (``data[].id``) and, from vLLM, ``max_model_len``;
* ``POST {base}/completions`` with ``echo: true, logprobs: 1, max_tokens: 1`` (as lm-evaluation-harness's
  ``local-completions`` sends; the generated token is dropped) — ``choices[0].logprobs`` holds, for every prompt
  token, ``tokens[i]``, ``text_offset[i]`` and ``token_logprobs[i]`` = log P(token i | the tokens before it)
  (None for the first token); the prompt may be a text or a list of token ids;
* ``POST {root}/tokenize`` (vLLM's, beside ``/v1``) — ``{"tokens": [ids]}`` for a text, with or without the
  tokenizer's special tokens; ``GET {root}/tokenizer_info`` (vLLM ``--enable-tokenizer-info-endpoint``) — the
  tokenizer's BOS/EOS text, when the server offers it.

Requests go through one :class:`httpx.Client` (a connection pool, safe across threads) with a timeout, and are
retried with exponential back-off on connection errors, timeouts and 5xx/429 answers (``BIASCORE_SERVED_RETRIES``,
default 4 retries, and ``BIASCORE_SERVED_BACKOFF_S``, default 0.5 s doubling each time, change them: the tests retry
without waiting); a request that still fails raises :class:`ServedError` with one line. :meth:`ServedClient.map` runs requests on a bounded thread
pool (``concurrency`` requests in flight at most).
"""
from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Iterable, Sequence, TypeVar
from urllib.parse import urlsplit

import httpx

from biascore.core.models import ModelLoadError

T = TypeVar("T")
R = TypeVar("R")

#: how a served model is named wherever a model is named: ``served:http://HOST:PORT/v1[#NAME]``
PREFIX = "served:"
DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 4
DEFAULT_BACKOFF_S = 0.5


def _setting(name: str, default: float) -> float:
    """A number from the environment (``BIASCORE_SERVED_RETRIES`` / ``_BACKOFF_S``), else ``default``; a value that
    is not a number, or negative, is one line."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ServedError(f"{name}={text!r} is not a number") from None
    if value < 0:
        raise ServedError(f"{name}={text!r} must be 0 or more")
    return value


class ServedError(ModelLoadError):
    """A served model cannot be used or a request to it failed (after retries); the message is one line."""


def is_served(name: object) -> bool:
    """True for a model named ``served:http(s)://…``."""
    return isinstance(name, str) and name.strip().startswith(PREFIX)


@dataclass(frozen=True)
class ServedName:
    """``served:http://HOST:PORT/v1#NAME`` split into the API base URL and the requested model name (or None)."""

    base: str  # e.g. http://127.0.0.1:8000/v1 (no trailing slash)
    model: str | None

    @classmethod
    def parse(cls, name: str) -> "ServedName":
        text = name.strip()[len(PREFIX):] if is_served(name) else name.strip()
        url, _, model = text.partition("#")
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServedError(f"served model {name!r}: expected served:http://HOST:PORT/v1 or "
                              "served:http://HOST:PORT/v1#MODEL")
        try:
            parts.port  # noqa: B018 - a malformed port raises here
        except ValueError:
            raise ServedError(f"served model {name!r}: the port is not a number") from None
        return cls(url.rstrip("/"), model or None)

    @property
    def root(self) -> str:
        """The server's root (where vLLM serves ``/tokenize``): the base URL without a final ``/v1``."""
        return self.base[:-3] if self.base.endswith("/v1") else self.base


@dataclass
class EchoedPrompt:
    """One prompt's tokens as the server scored them: text pieces, character offsets and log P(token i | before)."""

    tokens: list[str]
    text_offset: list[int]
    logprobs: list[float | None]


class ServedClient:
    """One server: the requests above with a pool, retries and a timeout (thread-safe)."""

    def __init__(self, name: ServedName, *, concurrency: int = DEFAULT_CONCURRENCY,
                 timeout_s: float = DEFAULT_TIMEOUT_S, retries: int | None = None, backoff_s: float | None = None):
        self.name, self.concurrency = name, max(1, int(concurrency))
        self.retries = int(_setting("BIASCORE_SERVED_RETRIES", DEFAULT_RETRIES)) if retries is None else retries
        self.backoff_s = _setting("BIASCORE_SERVED_BACKOFF_S", DEFAULT_BACKOFF_S) if backoff_s is None else backoff_s
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._http = httpx.Client(timeout=httpx.Timeout(timeout_s, connect=min(10.0, timeout_s)), limits=limits)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="served")
        self.model: str = name.model or ""

    # ------------------------------------------------------------------ plumbing
    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    def _request(self, method: str, url: str, payload: dict | None = None, *, retry_4xx: bool = False) -> dict:
        """JSON of one request, retried with back-off on connection errors, timeouts, 429 and 5xx."""
        last = ""
        for attempt in range(self.retries + 1):
            try:
                resp = self._http.request(method, url, json=payload)
            except httpx.TimeoutException:
                last = "timed out"
            except httpx.TransportError as exc:
                last = f"cannot be reached ({type(exc).__name__})"
            else:
                if resp.status_code < 400:
                    try:
                        return resp.json()
                    except ValueError:
                        raise ServedError(f"{url} answered something that is not JSON") from None
                if resp.status_code < 500 and resp.status_code != 429 and not retry_4xx:
                    raise ServedHTTPError(resp.status_code, f"{url} answered {resp.status_code}: "
                                          f"{_error_text(resp)}")
                last = f"answered {resp.status_code}: {_error_text(resp)}"
            if attempt < self.retries:
                time.sleep(self.backoff_s * 2 ** attempt)
        raise ServedError(f"the server at {self.name.base} {last} (after {self.retries + 1} tries); finished "
                          "shards are kept: run the same command again when it is back")

    def map(self, fn: Callable[[T], R], items: Iterable[T], done: Callable[[int], None] | None = None) -> list[R]:
        """``fn`` over ``items`` with at most ``concurrency`` requests in flight; results in order.
        ``done(i)`` is called (in the calling thread) as each item finishes."""
        items = list(items)
        futures = [self._pool.submit(fn, x) for x in items]
        out = []
        try:
            for i, f in enumerate(futures):
                out.append(f.result())
                if done is not None:
                    done(i)
        except BaseException:
            for f in futures:
                f.cancel()
            raise
        return out

    # ------------------------------------------------------------------ endpoints
    def models(self) -> list[dict]:
        data = self._request("GET", f"{self.name.base}/models").get("data")
        if not isinstance(data, list):
            raise ServedError(f"{self.name.base}/models did not list models (is this an OpenAI-compatible server?)")
        return data

    def choose_model(self) -> dict:
        """The served model: the one named after ``#``, or the server's only model."""
        data = self.models()
        ids = [str(m.get("id")) for m in data]
        if self.name.model is not None:
            if self.name.model not in ids:
                raise ServedError(f"the server at {self.name.base} serves {', '.join(ids) or 'no model'}, not "
                                  f"{self.name.model!r}")
            entry = data[ids.index(self.name.model)]
        elif len(ids) == 1:
            entry = data[0]
        else:
            raise ServedError(f"the server at {self.name.base} serves {len(ids)} models ({', '.join(ids)}): "
                              "name one as served:URL#MODEL")
        self.model = str(entry.get("id"))
        return entry

    def echo(self, prompt: str | Sequence[int]) -> EchoedPrompt:
        """The prompt's tokens with their offsets and log-probabilities. One token is generated, as
        lm-evaluation-harness asks (some servers refuse ``max_tokens`` 0 or read it as "no limit"), and dropped:
        a token-id prompt keeps its first ``len(prompt)`` entries, a text prompt the entries that start inside it."""
        payload = {"model": self.model, "prompt": prompt if isinstance(prompt, str) else [int(t) for t in prompt],
                   "echo": True, "logprobs": 1, "max_tokens": 1, "temperature": 0.0}
        body = self._request("POST", f"{self.name.base}/completions", payload)
        try:
            lp = body["choices"][0]["logprobs"]
            tokens, offsets, values = list(lp["tokens"]), list(lp["text_offset"]), list(lp["token_logprobs"])
        except (KeyError, IndexError, TypeError):
            raise ServedError(f"the server at {self.name.base} returned no prompt log-probabilities for an echo "
                              "request (echo + logprobs)") from None
        keep = (len(prompt) if not isinstance(prompt, str)
                else sum(1 for o in offsets if int(o) < len(prompt)))
        return EchoedPrompt(tokens[:keep], [int(o) for o in offsets[:keep]],
                            [None if v is None else float(v) for v in values[:keep]])

    def tokenize(self, text: str, add_special_tokens: bool = False) -> list[int]:
        """The server's token ids of ``text`` (vLLM's ``/tokenize``)."""
        return self.tokenize_with_strs(text, add_special_tokens)[0]

    def tokenize_with_strs(self, text: str, add_special_tokens: bool = False) -> tuple[list[int], list[str] | None]:
        """The server's token ids of ``text`` and, where the server gives them (vLLM ``return_token_strs``), the
        tokenizer's own token strings (``Ġare``), else None."""
        body = self._request("POST", f"{self.name.root}/tokenize",
                             {"model": self.model, "prompt": text, "add_special_tokens": add_special_tokens,
                              "return_token_strs": True})
        tokens, strs = body.get("tokens"), body.get("token_strs")
        if not isinstance(tokens, list):
            raise ServedError(f"{self.name.root}/tokenize returned no token ids")
        ok = isinstance(strs, list) and len(strs) == len(tokens)
        return [int(t) for t in tokens], ([str(x) for x in strs] if ok else None)

    def tokenizer_info(self) -> dict | None:
        """vLLM's ``/tokenizer_info`` (its tokenizer's configuration), or None when the server has none."""
        try:
            return self._request("GET", f"{self.name.root}/tokenizer_info")
        except ServedHTTPError:
            return None


class ServedHTTPError(ServedError):
    """A 4xx answer (not retried): the request itself was refused."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _error_text(resp: httpx.Response) -> str:
    try:
        body = resp.json()
        msg = body.get("error", body.get("detail", body)) if isinstance(body, dict) else body
        if isinstance(msg, dict):
            msg = msg.get("message", msg)
        text = str(msg)
    except ValueError:
        text = resp.text
    text = " ".join(text.split())
    return text[:160] or resp.reason_phrase
