"""Adaptive concurrency under a provider's rate limit: one :class:`RateLimiter` per judge.

Every HTTP attempt of a remote backend whose SDK speaks httpx (OpenAI-compatible, Azure,
Anthropic, Gemini) passes its judge's limiter (:class:`.openai_transport.CountedTransport`), so
every metric, step and panel member of a process that calls the same judge (provider, model,
endpoint and the two caps below: :func:`limiter_for`) shares one pace:

- **AIMD window.** At most ``window`` attempts in flight (at most ``max_concurrency``): it
  starts at 1 and grows by 1 per answer (slow start) until the first refusal, then by
  ``1/window`` per answer (additive increase); a refusal (HTTP 429) halves it (multiplicative
  decrease), once per round of attempts (an attempt started before the last decrease does not
  decrease it again).
- **Pacing.** Attempts start at most ``rate`` per second, ``rate`` the lower of the judge
  options ``max_requests_per_minute`` / 60 and the limit the provider announces in its
  headers (:mod:`.rate_headers`); with ``max_tokens_per_minute`` (or an announced token
  limit), each attempt also reserves its estimated tokens (:func:`estimate_tokens`).
- **Waits asked for.** A refusal's ``Retry-After`` (or Gemini's ``retryDelay``; without one, a
  back-off from 0.5 s doubling to :data:`MAX_FALLBACK_WAIT`), and an answer saying nothing is
  left (``remaining`` 0), pause every attempt of the judge until the wait is over.
- **No row lost to a 429 while the run makes progress.** A refused attempt is sent again
  (by the transport, not counted in the SDK's ``max_retries``) for as long as the judge answers
  some request between its refusals. A judge that refuses for good gives up: a request
  refused ``max_retries + 1`` times in a row with no answer to any request of the judge in
  between, a refusal that names a spent quota (``insufficient_quota``), or a wait longer than
  :data:`MAX_WAIT` ends as that 429 (docs/RELIABILITY.md, "Under load").

The limiter runs on the remote backends' one event loop (:mod:`.openai_transport`), so its
state needs no lock; :meth:`RateLimiter.status` is read from the calling thread (one line for
the progress bar).
"""

from __future__ import annotations

import asyncio
import contextvars
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from .rate_headers import RateSignals

__all__ = ["MAX_FALLBACK_WAIT", "MAX_WAIT", "STATUS_NOTE", "RateLimiter", "Strikes",
           "estimate_tokens", "limiter_for"]

#: The longest back-off when a refusal names no wait (0.5 s doubling up to this).
MAX_FALLBACK_WAIT = 30.0
#: A refusal asking for a longer wait (a daily quota) is given up at once: no run waits it out.
MAX_WAIT = 600.0
#: Paced attempts start this much further apart than the rate allows (2 %): arrivals jitter, and
#: a judge with no burst to spare refuses an attempt that comes a millisecond early.
PACE_MARGIN = 1.02
#: ... widened by 2 % per refusal while paced (narrowed again by 0.2 % per answer), up to this.
MAX_PACE_MARGIN = 1.10
#: How long an answer saying ``remaining`` 0 may pause the judge at most, without a refusal.
MAX_EMPTY_PAUSE = 60.0
#: Where the calling thread shows a limiter's :meth:`RateLimiter.status` (its progress bar's
#: note; set by :meth:`shared.engine.call_batch.CallBatch.send`), or ``None``.
STATUS_NOTE: contextvars.ContextVar[Callable[[str | None], None] | None] = \
    contextvars.ContextVar("judge_metrics_rate_note", default=None)
_MAX_TOKENS_FIELD = re.compile(
    rb'"(?:max_tokens|max_completion_tokens|max_output_tokens|maxOutputTokens)"\s*:\s*(\d+)')


def estimate_tokens(body: bytes) -> float:
    """A request's tokens as a provider counts them against a token limit before answering:
    its text (about 4 bytes a token) plus the answer tokens it allows."""
    allowed = _MAX_TOKENS_FIELD.search(body)
    return len(body) / 4 + (int(allowed.group(1)) if allowed else 0)


@dataclass
class Strikes:
    """One request's refusals in a row with no answer to any request of its judge between."""

    count: int = 0
    answers_seen: int = -1  # the limiter's answer count at the last refusal


class RateLimiter:
    """The pace of one judge (module docstring)."""

    def __init__(self, host: str, ceiling: int, requests_per_minute: float | None,
                 tokens_per_minute: float | None) -> None:
        self.host = host
        self.ceiling = max(1, ceiling)
        self.requests_per_minute = requests_per_minute  # the user's caps
        self.tokens_per_minute = tokens_per_minute
        self.announced_requests: float | None = None  # the provider's, per minute
        self.announced_tokens: float | None = None
        self.window = 1.0
        self.slow_start = True
        self.in_flight = 0
        self.next_request = 0.0  # monotonic time before which no attempt starts (pacing)
        self.next_tokens = 0.0
        self.last_start = -math.inf  # when the last attempt started (its wake-up, not its plan)
        self.slack = False  # the judge said it had requests to spare: a late start may catch up
        self.margin = PACE_MARGIN  # paced starts this much further apart than the rate
        self.paused_until = 0.0
        self.last_decrease = -math.inf
        self.fallback = 0  # refusals naming no wait, in a row
        self.answers = 0  # answers other than a refusal
        self.refused = 0  # refusals (HTTP 429)
        self.waiting = 0  # requests waiting now for the pause, the pace or the window
        self.latency: float | None = None  # seconds from an attempt's start to its answer
        self._released: asyncio.Event | None = None

    # -- what the attempts ask

    def rate(self) -> float | None:
        """Attempts per second at most (``None``: no pace)."""
        known = [v for v in (self.requests_per_minute, self.announced_requests) if v]
        return min(known) / 60.0 if known else None

    def token_rate(self) -> float | None:
        """Tokens per second at most (``None``: no token pace)."""
        known = [v for v in (self.tokens_per_minute, self.announced_tokens) if v]
        return min(known) / 60.0 if known else None

    async def acquire(self, tokens: float) -> float:
        """Wait for this judge's turn: the pause over, a place in the window, the pace's next
        start; returns when the attempt starts (monotonic), holding a place until
        :meth:`release`."""
        self.waiting += 1
        try:
            while True:
                now = time.monotonic()
                if now < self.paused_until:
                    await asyncio.sleep(self.paused_until - now)
                    continue
                if self.in_flight >= int(self.window):
                    await self._wait_for_release()
                    continue
                start = now
                rate, token_rate = self.rate(), self.token_rate()
                if rate:
                    start = max(start, self.next_request)
                if token_rate and tokens:
                    start = max(start, self.next_tokens)
                if rate:  # a little under the rate: the judge's clock is not ours
                    self.next_request = start + self.margin / rate
                if token_rate and tokens:
                    self.next_tokens = start + tokens / token_rate
                self.in_flight += 1
                try:
                    if start > now:
                        await asyncio.sleep(start - now)
                    if rate and not self.slack:  # no burst to spare: a late wake-up of the one
                        while (gap := self.last_start + self.margin / rate
                               - time.monotonic()) > 0:
                            await asyncio.sleep(gap)  # before must not bring this one closer
                except BaseException:
                    self.release()
                    raise
                if time.monotonic() < self.paused_until:  # a refusal came meanwhile: queue again
                    self.release()
                    continue
                self.last_start = time.monotonic()
                return self.last_start
        finally:
            self.waiting -= 1

    def release(self) -> None:
        """Give back an attempt's place in the window."""
        self.in_flight = max(0, self.in_flight - 1)
        released, self._released = self._released, None
        if released is not None:
            released.set()

    async def _wait_for_release(self) -> None:
        if self._released is None:
            self._released = asyncio.Event()
        try:  # woken by a release, or after a while to look at the pause again
            await asyncio.wait_for(self._released.wait(), timeout=1.0)
        except TimeoutError:
            pass

    # -- what the answers say

    def answered(self, signals: RateSignals, started: float) -> None:
        """An answer other than a refusal, to an attempt started at ``started``: the window
        grows; what the headers say is kept."""
        self.answers += 1
        self.fallback = 0
        self.margin = max(PACE_MARGIN, self.margin - 0.002)
        took = max(0.0, time.monotonic() - started)
        self.latency = took if self.latency is None else 0.8 * self.latency + 0.2 * took
        self.window = min(float(self.ceiling),
                          self.window + (1.0 if self.slow_start else 1.0 / self.window))
        self._learn(signals, started)

    def refusal(self, signals: RateSignals, started: float, strikes: Strikes,
                max_retries: int) -> str | None:
        """A refusal (HTTP 429) of an attempt started at ``started``: the window halves (once
        per round), every attempt of the judge waits as asked. Returns why the request is given
        up (a judge that refuses for good: module docstring), or ``None``: send it again.
        ``strikes``: the request's refusals so far (counted here)."""
        now = time.monotonic()
        self.refused += 1
        if self.rate():  # refused while paced: the judge's clock runs apart from ours
            self.margin = min(MAX_PACE_MARGIN, self.margin + 0.02)
        if started >= self.last_decrease:
            self.window = max(1.0, self.window / 2.0, self._paced_need())
            self.slow_start = False
            self.last_decrease = now
        self._learn(signals, started)
        wait = signals.retry_after
        if wait is None and signals.requests_left is not None and signals.requests_left < 1:
            wait = signals.requests_reset
        if wait is None:
            wait = min(MAX_FALLBACK_WAIT, 0.5 * 2 ** self.fallback)
            self.fallback += 1
        strikes.count = strikes.count + 1 if strikes.answers_seen == self.answers else 1
        strikes.answers_seen = self.answers
        if signals.final:
            return f"the provider refuses for good ({signals.final})"
        if strikes.count > max_retries:
            return (f"refused {strikes.count} times in a row while {self.host} answered no "
                    "request at all")
        if wait > MAX_WAIT:
            return f"the provider asks to wait {wait:.0f} s, longer than {MAX_WAIT:.0f} s"
        self._pause(now + wait)
        return None

    def _paced_need(self) -> float:
        """The attempts in flight the pace keeps (rate x an answer's time): with a known rate
        the pace bounds the starts, so the window never needs to shrink below this."""
        rate = self.rate()
        return min(float(self.ceiling), rate * self.latency) if rate and self.latency else 1.0

    def _learn(self, signals: RateSignals, started: float) -> None:
        """Keep the limits announced; an answer saying nothing was left when its attempt
        started pauses the judge until a request is back (counted from that start: the answer
        comes a latency later)."""
        if signals.requests_per_minute:
            self.announced_requests = signals.requests_per_minute
        if signals.requests_left is not None:
            self.slack = signals.requests_left >= 1
        if signals.tokens_per_minute:
            self.announced_tokens = signals.tokens_per_minute
        now = started
        if signals.requests_left is not None and signals.requests_left < 1:
            rate = self.rate()
            waits = [w for w in (signals.requests_reset, 1.0 / rate if rate else None)
                     if w is not None]
            if waits:
                self._pause(now + min(min(waits), MAX_EMPTY_PAUSE))
        if signals.tokens_left is not None and signals.tokens_left < 1 and signals.tokens_reset:
            self._pause(now + min(signals.tokens_reset, MAX_EMPTY_PAUSE))

    def _pause(self, until: float) -> None:
        self.paused_until = max(self.paused_until, until)
        self.next_request = max(self.next_request, self.paused_until)
        self.next_tokens = max(self.next_tokens, self.paused_until)

    # -- what the progress bar shows

    def status(self) -> str | None:
        """One line while requests wait on this judge's rate limit, else ``None``."""
        if not self.waiting:
            return None
        left = self.paused_until - time.monotonic()
        refused = f"{self.refused} refused (429), sent again" if self.refused else "none refused"
        if left > 0.05:
            return f"rate limit: waiting {left:.0f} s as {self.host} asked; {refused}"
        rate = self.rate()
        if rate and self.waiting > 1:
            return f"rate limit: paced at {rate * 60:.0f} requests/min; {refused}"
        return f"rate limit: {refused}" if self.refused else None


_LIMITERS: dict[tuple[object, ...], RateLimiter] = {}
_LOCK = threading.Lock()


def limiter_for(provider: str, model: str, endpoint: str, host: str, ceiling: int,
                requests_per_minute: float | None,
                tokens_per_minute: float | None) -> RateLimiter:
    """The process's one limiter of this judge (provider, model, endpoint) with these caps;
    its window's ceiling is the largest ``max_concurrency`` of the backends that share it."""
    key = (provider, model, endpoint, requests_per_minute, tokens_per_minute)
    with _LOCK:
        limiter = _LIMITERS.get(key)
        if limiter is None:
            limiter = RateLimiter(host, ceiling, requests_per_minute, tokens_per_minute)
            _LIMITERS[key] = limiter
        limiter.ceiling = max(limiter.ceiling, ceiling)
        return limiter
