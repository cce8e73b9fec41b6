"""HTTP client of an OpenAI-compatible completions server (vLLM, SGLang, …): prompt log-probabilities and tokens.

The endpoints used, with the semantics vLLM implements:

* ``GET  {base}/models`` — the served model names (``data[].id``) and, from vLLM, ``max_model_len``;
* ``POST {base}/completions`` with ``echo: true, logprobs: 1, max_tokens: 1`` (as lm-evaluation-harness's
  ``local-completions`` sends; the generated token is dropped) and ``return_tokens_as_token_ids: true`` (vLLM:
  each echoed token as ``token_id:N``) — ``choices[k].logprobs`` holds, for every token of prompt k,
  ``tokens[i]``, ``text_offset[i]`` and ``token_logprobs[i]`` = log P(token i | the tokens before it) (None for
  the first token). The prompt is a list of token ids, or a list of such lists (many prompts in one request,
  answered one choice per prompt by ``index``); text prompts are never scored;
* ``POST {root}/tokenize`` (vLLM's, beside ``/v1``) — ``{"tokens": [ids]}`` for a text, with or without the
  tokenizer's special tokens; ``GET {root}/tokenizer_info`` (vLLM ``--enable-tokenizer-info-endpoint``) — the
  tokenizer's BOS/EOS text, when the server offers it.

Every echo answer is checked before it is used (:meth:`ServedClient.echo_many`; a failure is one line,
:class:`ServedBadAnswer`); requests share one :class:`httpx.Client`, retried with back-off (:class:`ServedUnavailable`
after the last); the API key is read from the variable ``api_key_env`` names, kept only in the request headers
(docs/cli.md, "A model behind a server", for all three).
"""
from __future__ import annotations

import math
import os
import re
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Sequence, TypeVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import httpx

from biascore.errors import ModelLoadError
from biascore.models.names import PREFIX, is_served

T = TypeVar("T")
R = TypeVar("R")

DEFAULT_CONCURRENCY = 8
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_RETRIES = 4
#: the most prompts sent in one completions request (vLLM schedules a request's prompts together)
DEFAULT_BATCH = 32
#: the options a served model description takes after ``?``
OPTIONS = ("timeout", "retries", "api_key_env")
#: what the CLI says after a final failure (the dashboard says the server is down instead)
RESUME_ADVICE = "finished shards are kept: run the same command again when it is back"
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN_ID = re.compile(r"token_id:(-?\d+)")
DEFAULT_BACKOFF_S = 0.5


#: the bounds of the request settings, wherever they are set (beyond them a run could wait for ever)
MAX_RETRIES, MAX_BACKOFF_S, MAX_TIMEOUT_S = 20, 60.0, 3600.0


def _setting(name: str, default, kind=float):
    """``BIASCORE_SERVED_RETRIES`` (whole, 0 to MAX_RETRIES) / ``_BACKOFF_S`` (0 to MAX_BACKOFF_S) from the
    environment, else ``default``; anything else is one line."""
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    high = MAX_RETRIES if kind is int else MAX_BACKOFF_S
    try:
        value = kind(text)
    except ValueError:
        raise ServedError(f"{name}={text!r} is not a {'whole ' if kind is int else ''}number") from None
    if not 0 <= value <= high:  # NaN fails here too
        raise ServedError(f"{name}={text!r} must be from 0 to {high:g}")
    return value


#: the API keys this process has read (:class:`ServedClient`): no message of a served model ever holds one
_SECRETS: set[str] = set()


def redact(text: str) -> str:
    """``text`` without any API key read in this process (a server may echo the ``Authorization`` header back)."""
    for secret in _SECRETS:
        text = text.replace(secret, "…")
    return text


class ServedError(ModelLoadError):
    """A served model cannot be used or a request to it failed (after retries); the message is one line, and
    holds no API key (:func:`redact`: whatever a server answered, it is cleaned here)."""

    def __init__(self, message: str = ""):
        super().__init__(redact(str(message)))


class ServedUnavailable(ServedError):
    """The server did not answer (after the retries): ``cause`` says why (no URL), without the CLI's advice."""

    def __init__(self, base: str, cause: str):
        super().__init__(f"the server at {base} {cause}; {RESUME_ADVICE}")
        self.base, self.cause = base, redact(cause)


class ServedBadAnswer(ServedError):
    """An answer that fails the checks (module docstring): nothing of it is used or stored."""


class ServedAborted(ServedError):
    """A request not sent because another request of the same call failed for good."""


@dataclass(frozen=True)
class ServedName:
    """``served:http://HOST:PORT/v1[#NAME][?OPTIONS]`` split into the API base URL, the requested model name (or
    None) and the options (``timeout=SECONDS``, ``retries=N``, ``api_key_env=VARIABLE``; ``&`` between them).
    The options may also follow the URL (``served:http://h:p/v1?timeout=30#NAME``)."""

    base: str  # e.g. http://127.0.0.1:8000/v1 (no trailing slash)
    model: str | None
    timeout_s: float | None = None
    retries: int | None = None
    api_key_env: str | None = None

    @classmethod
    def parse(cls, name: str) -> "ServedName":
        text = name.strip()[len(PREFIX):] if is_served(name) else name.strip()
        url, _, model = text.partition("#")
        model, _, model_query = model.partition("?")
        parts = urlsplit(url)
        if "@" in parts.netloc:
            raise ServedError(f"served model {_public(name)!r}: a user name or password in the URL is not accepted "
                              "(it would be shown and stored with the model's name); put the key in an environment "
                              "variable and name that variable: served:URL#MODEL?api_key_env=VARIABLE")
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ServedError(f"served model {_public(name)!r}: expected served:http://HOST:PORT/v1 or "
                              "served:http://HOST:PORT/v1#MODEL")
        try:
            parts.port  # noqa: B018 - a malformed port raises here
        except ValueError:
            raise ServedError(f"served model {_public(name)!r}: the port is not a number") from None
        base = urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")).rstrip("/")
        options: dict[str, str] = {}
        for query in (parts.query, model_query):
            for key, value in parse_qsl(query, keep_blank_values=True):
                if key not in OPTIONS:
                    raise ServedError(f"served model {_public(name)!r}: unknown option {key!r} (it takes "
                                      f"{', '.join(OPTIONS)})")
                options[key] = value
        return cls(base, model.strip() or None).with_options(
            timeout_s=_number(options.get("timeout"), "timeout", float, name),
            retries=_number(options.get("retries"), "retries", int, name), api_key_env=options.get("api_key_env"))

    def with_options(self, *, timeout_s: float | None = None, retries: int | None = None,
                     api_key_env: str | None = None) -> "ServedName":
        """These options set (None keeps the current one); bad values are one line."""
        if timeout_s is not None and not 0 < timeout_s <= MAX_TIMEOUT_S:
            raise ServedError(f"served model {self.describe()}: timeout must be a number of seconds above 0 and at "
                              f"most {MAX_TIMEOUT_S:g}")
        if retries is not None and not 0 <= retries <= MAX_RETRIES:
            raise ServedError(f"served model {self.describe()}: retries must be 0 or more and at most {MAX_RETRIES}")
        if api_key_env is not None and not _ENV_NAME.fullmatch(api_key_env):
            raise ServedError(f"served model {self.describe()}: api_key_env names an environment variable "
                              "(letters, digits and _), not a key")
        return replace(self, timeout_s=self.timeout_s if timeout_s is None else float(timeout_s),
                       retries=self.retries if retries is None else int(retries),
                       api_key_env=self.api_key_env if api_key_env is None else api_key_env)

    def describe(self) -> str:
        """The model description without its options: ``served:URL[#NAME]``."""
        return PREFIX + self.base + (f"#{self.model}" if self.model else "")

    def __str__(self) -> str:
        """The whole model description, options included (names of variables only, never a key)."""
        opts = {"timeout": self.timeout_s, "retries": self.retries, "api_key_env": self.api_key_env}
        query = urlencode({k: (f"{v:g}" if isinstance(v, float) else v) for k, v in opts.items() if v is not None})
        return self.describe() + (f"?{query}" if query else "")

    @property
    def root(self) -> str:
        """The server's root (where vLLM serves ``/tokenize``): the base URL without a final ``/v1``."""
        return self.base[:-3] if self.base.endswith("/v1") else self.base


def _public(name: str) -> str:
    """A description as a message may show it: no options, no user name or password."""
    return re.sub(r"//[^/?#]*@", "//", name.strip().partition("?")[0])


def _number(value: str | None, what: str, kind, name: str):
    if value is None:
        return None
    try:
        return kind(value)
    except ValueError:
        raise ServedError(f"served model {_public(name)!r}: {what}={value!r} is not a "
                          f"{'whole ' if kind is int else ''}number") from None


@dataclass
class EchoedPrompt:
    """One prompt's tokens as the server scored them: token texts (or ``token_id:N``), character offsets and
    log P(token i | before)."""

    tokens: list[str]
    text_offset: list[int]
    logprobs: list[float | None]


#: the abort flag of the :meth:`ServedClient.map` call a worker thread is serving (None outside one)
_current = threading.local()


class ServedClient:
    """One server: the requests above with a pool, retries, a timeout and the API key (thread-safe)."""

    def __init__(self, name: ServedName, *, concurrency: int = DEFAULT_CONCURRENCY):
        self.name, self.concurrency = name, max(1, int(concurrency))
        self.backoff_s = _setting("BIASCORE_SERVED_BACKOFF_S", DEFAULT_BACKOFF_S)
        self.timeout_s = float(name.timeout_s or DEFAULT_TIMEOUT_S)
        self.retries = int(name.retries if name.retries is not None
                           else _setting("BIASCORE_SERVED_RETRIES", DEFAULT_RETRIES, int))
        #: prompts per completions request (1 where the server takes one prompt per request; see conformance)
        self.batch = DEFAULT_BATCH
        headers = {}
        if name.api_key_env:
            key = os.environ.get(name.api_key_env, "").strip()
            if not key:
                raise ServedError(f"served model {name.describe()}: the environment variable {name.api_key_env} "
                                  "(api_key_env) that should hold its API key is not set")
            _SECRETS.add(key)
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
        self._http = httpx.Client(timeout=httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s)),
                                  limits=limits, headers=headers)
        self._pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="served")
        self.model: str = name.model or ""

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._http.close()

    def _request(self, method: str, url: str, payload: dict | None = None) -> dict:
        """JSON of one request, retried with back-off on connection errors, timeouts, 429 and 5xx; not sent
        (:class:`ServedAborted`) once the :meth:`map` call it belongs to has failed."""
        abort: threading.Event | None = getattr(_current, "abort", None)
        last = ""
        for attempt in range(self.retries + 1):
            if abort is not None and abort.is_set():
                raise ServedAborted(f"the server at {self.name.base}: request not sent (another one failed)")
            try:
                resp = self._http.request(method, url, json=payload)
            except httpx.TimeoutException:
                last = f"did not answer within {self.timeout_s:g} s (timeout)"
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = f"cannot be reached ({type(exc).__name__})"
            except httpx.TransportError as exc:
                last = f"closed the connection mid-response ({type(exc).__name__})"
            else:
                if resp.status_code < 400:
                    try:
                        return resp.json()
                    except ValueError:
                        raise ServedBadAnswer(f"{url} answered something that is not JSON") from None
                if resp.status_code < 500 and resp.status_code != 429:
                    raise ServedHTTPError(resp.status_code, f"{url} answered {resp.status_code}: "
                                          f"{_error_text(resp)}{self._hint(resp.status_code, url)}")
                last = f"answered {resp.status_code}: {_error_text(resp)}"
            if attempt < self.retries:  # the back-off ends early once the call is aborted
                (abort or threading.Event()).wait(min(self.backoff_s * 2 ** attempt, MAX_BACKOFF_S))
        raise ServedUnavailable(self.name.base, f"{last} (after {self.retries + 1} tries)")

    def _hint(self, status: int, url: str) -> str:
        if status in (401, 403):
            if self.name.api_key_env:
                return f" (the API key in {self.name.api_key_env} was refused)"
            return (" (the server wants an API key: put it in an environment variable and name that variable in "
                    "the model description, served:URL#MODEL?api_key_env=VARIABLE)")
        if status == 404 and url.startswith(self.name.base) and not self.name.base.endswith("/v1"):
            return f" (an OpenAI-compatible base URL usually ends in /v1: served:{self.name.base}/v1)"
        return ""

    def map(self, fn: Callable[[T], R], items: Iterable[T], done: Callable[[int], None] | None = None) -> list[R]:
        """``fn`` over ``items`` with at most ``concurrency`` requests in flight; results in order.
        ``done(i)`` is called (in the calling thread) as item i finishes, in the order they finish. The first
        item that fails raises here at once; the items not started are dropped and no request of this call is
        sent or retried after it (those in flight end within the timeout, their answers unused)."""
        items = list(items)
        abort = threading.Event()

        def guarded(x: T) -> R:
            if abort.is_set():
                raise ServedAborted("not sent: another request failed")
            _current.abort = abort
            try:
                return fn(x)
            except BaseException:
                abort.set()  # here, before this worker takes the next item
                raise
            finally:
                _current.abort = None

        futures = [self._pool.submit(guarded, x) for x in items]
        where = {f: i for i, f in enumerate(futures)}
        out: list = [None] * len(items)
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in sorted(finished, key=where.__getitem__):
                    exc = f.exception()
                    if exc is not None and not isinstance(exc, ServedAborted):
                        raise exc
                for f in sorted(finished, key=where.__getitem__):
                    out[where[f]] = f.result()
                    if done is not None:
                        done(where[f])
        except BaseException:
            abort.set()
            for f in futures:
                f.cancel()
            raise
        return out

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
        if redact(self.model) != self.model:
            raise ServedError(f"the server at {self.name.base} names its model with the API key; refused")
        return entry

    def echo(self, prompt: Sequence[int], *, as_ids: bool = True, check: bool = True) -> EchoedPrompt:
        """One token-id prompt's echo (see :meth:`echo_many`)."""
        return self.echo_many([prompt], as_ids=as_ids, check=check)[0]

    def echo_many(self, prompts: Sequence[Sequence[int]], *, as_ids: bool = True,
                  check: bool = True) -> list[EchoedPrompt]:
        """The tokens, offsets and log-probabilities of token-id prompts, in one request (the server's
        ``prompt`` list; :attr:`batch` prompts at most). One token is generated, as lm-evaluation-harness asks
        (some servers refuse ``max_tokens`` 0 or read it as "no limit"), and dropped: each prompt keeps its first
        ``len(prompt)`` entries. ``as_ids``: tokens come back as ``token_id:N`` and must equal the ids sent
        (else token texts, for character offsets). Every answer is checked (module docstring; ``check=False``:
        only its shape, for the conformance check's own messages)."""
        batch = [[int(t) for t in p] for p in prompts]
        got = self._completions(batch if len(batch) > 1 else batch[0], len(batch), as_ids)
        where = f"the server at {self.name.base}"
        out = []
        for prompt, one in zip(batch, got):
            one = EchoedPrompt(one.tokens[:len(prompt)], one.text_offset[:len(prompt)], one.logprobs[:len(prompt)])
            if check:
                check_echo(prompt, one, where, as_ids)
            out.append(one)
        return out

    def echo_text(self, text: str) -> EchoedPrompt:
        """A text prompt's echo, unchecked, keeping the entries that start inside ``text``: only for the
        conformance check of a server without ``/tokenize``, so that its refusal names what is wrong with its
        log-probabilities. Text prompts are never scored."""
        one = self._completions(text, 1, as_ids=False)[0]
        keep = sum(1 for o in one.text_offset if o < len(text))
        return EchoedPrompt(one.tokens[:keep], one.text_offset[:keep], one.logprobs[:keep])

    def _completions(self, prompt, n: int, as_ids: bool) -> list[EchoedPrompt]:
        """The ``n`` echoes, in order, of one echo + logprobs request for ``prompt`` (one or a list of them)."""
        payload = {"model": self.model, "prompt": prompt, "echo": True, "logprobs": 1, "max_tokens": 1,
                   "temperature": 0.0}
        if as_ids:
            payload["return_tokens_as_token_ids"] = True
        body = self._request("POST", f"{self.name.base}/completions", payload)
        where = f"the server at {self.name.base}"
        try:
            choices = sorted(body["choices"], key=lambda c: int(c.get("index", 0)))
            if len(choices) != n:
                raise ServedBadAnswer(f"{where} answered {len(choices)} choices for {n} prompts")
            if any(c.get("prompt_logprobs") and len((c.get("logprobs") or {}).get("tokens") or ()) < 2
                   for c in choices):
                raise ServedBadAnswer(
                    f"{where} answered an echo request in vLLM's prompt_logprobs form (choices[].prompt_logprobs, a "
                    "dict per token; no prompt tokens in choices[].logprobs): biascore reads the OpenAI echo form, "
                    "logprobs.tokens / token_logprobs of every prompt token; serve the model with a vLLM whose "
                    "/v1/completions fills them for echo: true (0.5.2 or later), or translate that form in front")
            return [EchoedPrompt([str(t) for t in lp["tokens"]], [int(o) for o in lp["text_offset"]],
                                 [None if v is None else float(v) for v in lp["token_logprobs"]])
                    for lp in (c["logprobs"] for c in choices)]
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise ServedBadAnswer(f"{where} returned no prompt log-probabilities for an echo request (echo + "
                                  "logprobs)") from None

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


def check_echo(prompt: Sequence[int], got: EchoedPrompt, where: str, as_ids: bool = True) -> None:
    """One answer's checks: as many tokens, offsets and log-probabilities as prompt ids; (``as_ids``) the echoed
    ids equal to those sent; a finite log-probability ≤ 0 for every token after the first. One line, else."""
    n = len(prompt)
    if not (len(got.tokens) == len(got.text_offset) == len(got.logprobs) == n):
        raise ServedBadAnswer(f"{where} echoed {len(got.tokens)} tokens with {len(got.logprobs)} log-probabilities "
                              f"for a prompt of {n} token ids; nothing of this answer is used")
    if as_ids:
        echoed = [_TOKEN_ID.fullmatch(t) for t in got.tokens]
        if not all(echoed):
            raise ServedBadAnswer(f"{where} does not echo token ids (vLLM's return_tokens_as_token_ids): the "
                                  "scored tokens cannot be checked against those sent")
        wrong = next((i for i, (m, t) in enumerate(zip(echoed, prompt)) if int(m.group(1)) != t), None)
        if wrong is not None:
            raise ServedBadAnswer(f"{where} echoed token {echoed[wrong].group(1)} at position {wrong} of a prompt "
                                  f"that has {prompt[wrong]} there; nothing of this answer is used")
    bad = next((i for i, v in enumerate(got.logprobs[1:], 1) if v is None or not math.isfinite(v) or v > 1e-4), None)
    if bad is not None:
        raise ServedBadAnswer(f"{where} returned {got.logprobs[bad]} as the log-probability of token {bad} of a "
                              f"{n}-token prompt (a finite number ≤ 0 is required); nothing of this answer is "
                              "used or stored")


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
