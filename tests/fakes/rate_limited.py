"""A rate-limited OpenAI-compatible judge on 127.0.0.1: a token bucket in front of answers.

``with RateLimitedFake(rate=3, burst=3, latency=0.5) as fake: fake.url`` serves
``POST /v1/chat/completions``. Each request takes one token from a bucket that holds at most
``burst`` tokens and refills at ``rate`` tokens a second (full at the start). A request that
finds a token is answered after ``latency`` seconds; one that finds none is refused at once
with HTTP 429, as OpenAI refuses it (docs: "Rate limits", "Error codes"): the error body
``{"error": {"code": "rate_limit_exceeded", "type": "requests", ...}}``, ``Retry-After`` (whole
seconds until a token is back, at least 1) and ``retry-after-ms`` (the same in milliseconds, as
OpenAI's servers send it). Every answer, refused or not, carries OpenAI's rate-limit headers:
``x-ratelimit-limit-requests`` (the limit per minute, ``rate`` x 60),
``x-ratelimit-remaining-requests`` (whole tokens left) and ``x-ratelimit-reset-requests`` (the
time until the bucket is full again, written as OpenAI writes it: ``"1s"``, ``"250ms"``,
``"1m30s"``); ``announce=False`` leaves them out (a provider that says nothing but 429 and
``Retry-After``). ``spent=True``: every request is refused as OpenAI refuses an account whose
credit is spent (429, ``insufficient_quota``), which no wait lifts.

The answers: a request asking for log-probabilities gets "Yes" or "No" with a first-token top
list (``faultproxy.synthetic_top_logprobs``: a Yes/No judge such as l3score scores it); any
other request gets one JSON object with the fields the usual judge schemas ask
(``reason``, ``verdict``, ``score``, ``verdicts``), which a JSON-mode judge reads.

``fake.stats()``: ``answered``, ``refused``, the largest number of answers in progress at once,
``span`` (seconds from the first request to the last) and ``busy`` (from the first request to
the last answer).
"""

from __future__ import annotations

import json
import math
import threading
import time
from typing import Any

from faultproxy import chat_envelope, synthetic_top_logprobs

from fakes.translating import LocalServer, Reply

#: What a request without log-probabilities is answered (JSON the usual judge schemas read).
JSON_ANSWER = json.dumps({"reason": "The answer matches the reference.", "verdict": 1,
                          "score": 8, "verdicts": [], "statements": []})


def openai_duration(seconds: float) -> str:
    """``seconds`` as OpenAI's ``x-ratelimit-reset-*`` headers write a duration."""
    if seconds < 1:
        return f"{max(1, round(seconds * 1000))}ms"
    minutes, rest = divmod(seconds, 60)
    text = f"{rest:.3g}s".replace(".0s", "s")
    return f"{int(minutes)}m{text}" if minutes >= 1 else text


class RateLimitedFake(LocalServer):
    def __init__(self, rate: float, burst: float, latency: float = 0.0,
                 announce: bool = True, spent: bool = False) -> None:
        if rate <= 0 or burst < 1 or latency < 0:
            raise ValueError("rate > 0, burst >= 1 and latency >= 0, please")
        self.rate, self.burst, self.latency, self.announce = rate, burst, latency, announce
        self.spent = spent
        self._tokens = float(burst)
        self._refilled = time.monotonic()
        self._lock = threading.Lock()
        self.bodies: list[bytes] = []  # every request's body, in arrival order
        self.answered = 0
        self.refused = 0
        self._busy = 0
        self.max_busy = 0
        self.first: float | None = None
        self.last: float | None = None
        self.done: float | None = None  # when the last answer was written

    def _take(self) -> tuple[bool, float]:
        """One token, if there is one; and the tokens left (under the lock)."""
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._refilled) * self.rate)
        self._refilled = now
        self.first = now if self.first is None else self.first
        self.last = now
        if self._tokens >= 1:
            self._tokens -= 1
            return True, self._tokens
        return False, self._tokens

    def _headers(self, left: float) -> dict[str, str]:
        if not self.announce:
            return {}
        return {"x-ratelimit-limit-requests": f"{self.rate * 60:g}",
                "x-ratelimit-remaining-requests": str(math.floor(left)),
                "x-ratelimit-reset-requests": openai_duration((self.burst - left) / self.rate)}

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        if not path.endswith("/chat/completions"):
            return Reply(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
        with self._lock:
            self.bodies.append(raw)
            admitted, left = self._take()
            if self.spent:
                self.refused += 1
                return Reply(429, {"error": {
                    "message": "You exceeded your current quota, please check your plan and "
                               "billing details.", "type": "insufficient_quota", "param": None,
                    "code": "insufficient_quota"}})
            if not admitted:
                self.refused += 1
            else:
                self._busy += 1
                self.max_busy = max(self.max_busy, self._busy)
        limit_headers = self._headers(left)
        if not admitted:
            wait = (1 - left) / self.rate
            return Reply(429, {"error": {
                "message": f"Rate limit reached for requests: limit {self.rate * 60:g} / min. "
                           f"Please try again in {openai_duration(wait)}.",
                "type": "requests", "param": None, "code": "rate_limit_exceeded"}},
                {"Retry-After": str(max(1, math.ceil(wait))),
                 "retry-after-ms": str(math.ceil(wait * 1000)), **limit_headers})
        try:
            time.sleep(self.latency)
            return Reply(200, self.completion(json.loads(raw)), limit_headers)
        finally:
            with self._lock:
                self._busy -= 1
                self.answered += 1
                self.done = time.monotonic()

    @staticmethod
    def completion(body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("logprobs"):
            return chat_envelope(body, {"role": "assistant", "content": JSON_ANSWER}, None)
        top = synthetic_top_logprobs(body)[: max(1, int(body.get("top_logprobs") or 1))]
        logprobs = {"content": [{
            "token": top[0][0], "logprob": top[0][1], "bytes": None,
            "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top]}]}
        return chat_envelope(body, {"role": "assistant", "content": top[0][0]}, logprobs)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            span = (self.last - self.first) if self.first is not None and self.last else 0.0
            busy = (max(self.done or 0.0, self.last or 0.0) - self.first
                    if self.first is not None else 0.0)
            return {"answered": self.answered, "refused": self.refused,
                    "max_busy": self.max_busy, "span": span, "busy": busy}

    @property
    def url(self) -> str:
        return f"{super().url}/v1"
