"""Live pairs from many people at once, scored together in shared forward passes (docs/operating.md).

:class:`LiveQueue` gathers the pairs for one loaded model that arrive together (``window``, at most
``max_gather``) and scores them in one call of :func:`biascore.methods.attribution.scorer.score_pairs` (b(u) =
d(P_u,more) − d(P_u,less), S_JSD = mean b(u); Gamboa & Lee). Each person gets a lone call's row up to float32
rounding of the shared batch (measured |Δ b(u)| ≤ 2.0e-6, |Δ S_JSD| ≤ 4.1e-7; asserted: ten times those,
:data:`LOGP_TOLERANCE`, :data:`BU_TOLERANCE`, :data:`SJSD_TOLERANCE`; docs/reproducibility.md). One daemon worker
per queue; identical pairs in a round are scored once, the last ``memo`` results kept (read-only rows).
"""
from __future__ import annotations

import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable

from biascore.runs import timing_log
from biascore.models.loading import LanguageModel
from biascore.methods.attribution.jsd import JsdVariant
from biascore.methods.attribution.scorer import score_pairs

#: Gathering window (seconds): a round starts once no new pair has arrived for this long — short enough not to
#: be noticed by one person alone (a SmolLM2 pair takes about 0.2 s to score on one CPU core) …
WINDOW_S = 0.05
#: … but never later than this after its first pair, however many keep arriving (a room pressing Enter together).
MAX_GATHER_S = 0.5
#: Most pairs in one call (one round); about 60 sentences of 15–25 tokens, well inside lm_scoring's budget.
MAX_PAIRS = 32
#: Agreement between a pair scored in a shared round and alone (see the module docstring):
#: |Δ log P(u)| ≤ LOGP_TOLERANCE · max(1, |log P(u)|), |Δ b(u)| ≤ BU_TOLERANCE, |Δ S_JSD| ≤ SJSD_TOLERANCE.
LOGP_TOLERANCE = 1e-4
BU_TOLERANCE = 2e-5
SJSD_TOLERANCE = 4e-6

#: ``waiting(state)``: what a caller's request is doing now, in a few words for a person (changes only).
WaitingFn = Callable[[str], None]


@dataclass
class _Request:
    key: tuple[str, str, str]
    future: Future = field(default_factory=Future)
    submitted: float = field(default_factory=time.monotonic)


class LiveQueue:
    """Gathers live pairs for one loaded model and scores them in shared calls (see the module docstring)."""

    def __init__(self, lm: LanguageModel, *, window: float = WINDOW_S, max_gather: float = MAX_GATHER_S,
                 max_pairs: int = MAX_PAIRS, memo: int = 256, scorer: Callable | None = None):
        self.lm, self.window, self.max_gather, self.max_pairs, self.memo_size = lm, window, max_gather, max_pairs, memo
        self._score = scorer or score_pairs
        self._lock = threading.Condition()
        self._pending: list[_Request] = []
        self._running: list[_Request] = []
        self._memo: OrderedDict[tuple, dict] = OrderedDict()
        self._worker: threading.Thread | None = None
        #: rounds scored and pairs in them (for benchmarks and tests)
        self.stats = {"rounds": 0, "pairs": 0, "largest": 0}

    def submit(self, sent_more: str, sent_less: str, jsd: JsdVariant = "reference") -> Future:
        """A future for the pair's row (the dict :func:`score_pair` returns)."""
        key = (sent_more, sent_less, jsd)
        with self._lock:
            hit = self._memo.get(key)
            if hit is not None:
                self._memo.move_to_end(key)
                done: Future = Future()
                done.timing = {"memo": True}  # type: ignore[attr-defined]
                done.set_result(hit)
                return done
            req = _Request(key)
            self._pending.append(req)
            if self._worker is None or not self._worker.is_alive():
                name = f"biascore-live-{getattr(self.lm, 'name', 'model')}"
                self._worker = threading.Thread(target=self._work, name=name, daemon=True)
                self._worker.start()
            self._lock.notify_all()
            return req.future

    def score(self, sent_more: str, sent_less: str, jsd: JsdVariant = "reference", *,
              waiting: WaitingFn | None = None, poll: float = 0.25, timing: dict | None = None) -> dict:
        """The pair's row, waiting for its round; ``waiting(state)`` hears what the request is doing (only when that
        changes). Errors of the scorer are raised here, to each caller of the round. ``timing``, when given, receives
        where the wait went: ``queue_s`` (submitted → its round started), ``gather_s`` (of that, the round's gathering
        window), ``forward_s`` (the round's scoring call), ``round_pairs``; or ``memo: True`` for a remembered pair."""
        future = self.submit(sent_more, sent_less, jsd)
        said = None
        while True:
            try:
                row = future.result(timeout=poll if waiting else None)
                if timing is not None:
                    timing.update(getattr(future, "timing", {}))
                return row
            except TimeoutError:
                state = self.state(future)
                if state != said and waiting is not None:
                    waiting(state)
                    said = state

    def state(self, future: Future) -> str:
        """In words: queued behind a round, or being scored in one (with how many other pairs)."""
        with self._lock:
            running = next((len(self._running) for r in self._running if r.future is future), None)
            if running is not None:
                others = running - 1
                return "scoring your pair" + (f" together with {others} other pair{'s' * (others != 1)}"
                                              if others else "")
            ahead = len(self._running)
            return (f"queued: a round of {ahead} pair{'s' * (ahead != 1)} is being scored first" if ahead
                    else "queued: gathering the pairs sent at the same moment")

    def _work(self) -> None:
        while True:
            with self._lock:
                while not self._pending:
                    if not self._lock.wait(timeout=60):  # idle for a minute: the thread ends (restarted on use)
                        if not self._pending:
                            self._worker = None
                            return
            gather_start = time.monotonic()
            self._gather()
            with self._lock:
                self._running, self._pending = self._pending[:self.max_pairs], self._pending[self.max_pairs:]
                batch = list(self._running)
            self._run(batch, gather_s=time.monotonic() - gather_start)

    def _gather(self) -> None:
        """Let the others of the same moment arrive: wait until ``window`` passes without a new pair, the round
        is full, or ``max_gather`` has passed."""
        end = time.monotonic() + self.max_gather
        while True:
            with self._lock:
                seen = len(self._pending)
            time.sleep(max(0.0, min(self.window, end - time.monotonic())))
            with self._lock:
                if len(self._pending) == seen or len(self._pending) >= self.max_pairs or time.monotonic() >= end:
                    return

    def _run(self, batch: list[_Request], gather_s: float = 0.0) -> None:
        by_jsd: dict[str, list[tuple[str, str]]] = {}
        for req in batch:
            pairs = by_jsd.setdefault(req.key[2], [])
            if req.key[:2] not in pairs:
                pairs.append(req.key[:2])
        results: dict[tuple, dict] = {}
        error: BaseException | None = None
        start, start_cpu = time.monotonic(), time.thread_time()
        try:
            for jsd, pairs in by_jsd.items():
                rows = self._score(self.lm, pairs, jsd=jsd)
                results.update({(*pair, jsd): row for pair, row in zip(pairs, rows)})
        except BaseException as exc:  # noqa: BLE001 - handed to every caller of the round, who raises it
            error = exc
        forward_s, forward_cpu_s = time.monotonic() - start, time.thread_time() - start_cpu
        with self._lock:
            waiting_after = len(self._pending)
            self._running = []
            self.stats["rounds"] += 1
            self.stats["pairs"] += sum(len(p) for p in by_jsd.values())
            self.stats["largest"] = max(self.stats["largest"], len(batch))
            for key, row in results.items():
                self._memo[key] = row
                self._memo.move_to_end(key)
            while len(self._memo) > self.memo_size:
                self._memo.popitem(last=False)
        timing_log.record("live_round", pairs=len(batch), gather_s=round(gather_s, 4), forward_s=round(forward_s, 4),
                          forward_cpu_s=round(forward_cpu_s, 4), pending_after=waiting_after)
        for req in batch:
            req.future.timing = {"queue_s": start - req.submitted, "gather_s": gather_s,  # type: ignore[attr-defined]
                                 "forward_s": forward_s, "round_pairs": len(batch)}
            if error is not None:
                req.future.set_exception(error)
            else:
                req.future.set_result(results[req.key])


_queues: dict[int, LiveQueue] = {}
_queues_lock = threading.Lock()


def live_queue(lm: LanguageModel, **options) -> LiveQueue:
    """The process's one queue for this loaded model (created on first use; ``options`` apply then)."""
    with _queues_lock:
        queue = _queues.get(id(lm))
        if queue is None or queue.lm is not lm:
            queue = _queues[id(lm)] = LiveQueue(lm, **options)
        return queue


def busy() -> bool:
    """True while a live queue of this process has scored a pair in the last minute (its worker is alive)."""
    with _queues_lock:
        return any(q._worker is not None and q._worker.is_alive() for q in _queues.values())


def score_live(lm: LanguageModel, sent_more: str, sent_less: str, jsd: JsdVariant = "reference", *,
               waiting: WaitingFn | None = None, timing: dict | None = None) -> dict:
    """One typed pair through the model's :class:`LiveQueue` (scored together with the pairs other people
    send at the same moment); the row :func:`score_pair` would give, within the stated tolerance. ``timing``:
    see :meth:`LiveQueue.score`."""
    return live_queue(lm).score(sent_more, sent_less, jsd, waiting=waiting, timing=timing)
