"""What a provider's answer says about its rate limit, read once for every protocol.

:func:`read_signals` turns one HTTP answer's headers (and, for a refusal, its body) into
:class:`RateSignals`, which :class:`.rate_limit.RateLimiter` acts on. Read, as each provider
documents them:

- ``retry-after-ms`` (milliseconds, as OpenAI sends it) and ``retry-after`` (seconds or an
  HTTP date; every provider);
- OpenAI's ``x-ratelimit-limit-requests`` / ``-remaining-requests`` / ``-reset-requests`` and
  their ``-tokens`` twins: the limits are per minute, a reset a duration such as ``"1s"``,
  ``"250ms"`` or ``"6m0s"`` (the time until the limit is back to full);
- Anthropic's ``anthropic-ratelimit-requests-limit`` / ``-remaining`` / ``-reset`` and the
  ``-tokens-``, ``-input-tokens-`` and ``-output-tokens-`` ones: limits per minute, a reset an
  RFC 3339 time;
- Gemini's ``google.rpc.RetryInfo`` ``retryDelay`` (``"30s"``) in a refusal's error details.

A refusal that no wait will lift (OpenAI's ``insufficient_quota``: the account's credit is
spent) is named in :attr:`RateSignals.final`.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime

__all__ = ["RateSignals", "duration_seconds", "read_signals"]

_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_RETRY_DELAY = re.compile(r"^\s*(\d+(?:\.\d+)?)s\s*$")
#: Error codes of a refusal that waiting does not lift.
_FINAL_CODES = ("insufficient_quota", "billing_hard_limit_reached")


@dataclass
class RateSignals:
    """One answer's rate-limit figures; ``None`` where the answer does not say.

    ``retry_after``: the wait it asks for, in seconds. ``requests_per_minute`` /
    ``tokens_per_minute``: the limits. ``requests_left`` / ``tokens_left``: what is left of
    them now, ``requests_reset`` / ``tokens_reset``: seconds until they are full again.
    ``final``: why no wait will help (the provider's own words), or ``None``."""

    retry_after: float | None = None
    requests_per_minute: float | None = None
    requests_left: float | None = None
    requests_reset: float | None = None
    tokens_per_minute: float | None = None
    tokens_left: float | None = None
    tokens_reset: float | None = None
    final: str | None = None


def duration_seconds(text: str) -> float | None:
    """``"1s"``, ``"250ms"``, ``"6m0s"``, ``"1h2m3.5s"`` or a bare number of seconds, in seconds;
    ``None`` when it is none of these."""
    text = text.strip()
    try:
        value = float(text)
    except ValueError:
        parts = _DURATION_PART.findall(text)
        if not parts or "".join(n + u for n, u in parts) != text:
            return None
        scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
        return sum(float(n) * scale[u] for n, u in parts)
    return value if math.isfinite(value) and value >= 0 else None


def _seconds_until(text: str, now: float) -> float | None:
    """An RFC 3339 time (Anthropic's resets) as seconds from ``now`` (Unix time), at least 0."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        return None
    return max(0.0, moment.timestamp() - now)


def _retry_after(headers: Mapping[str, str], now: float) -> float | None:
    millis = headers.get("retry-after-ms")
    if millis is not None:
        value = duration_seconds(millis)
        if value is not None:
            return value / 1000.0
    text = headers.get("retry-after")
    if text is None:
        return None
    value = duration_seconds(text)
    if value is not None:
        return value
    try:  # an HTTP date
        return max(0.0, parsedate_to_datetime(text).timestamp() - now)
    except (TypeError, ValueError):
        return None


def _number(headers: Mapping[str, str], name: str) -> float | None:
    text = headers.get(name)
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _reset(headers: Mapping[str, str], name: str, now: float) -> float | None:
    text = headers.get(name)
    if text is None:
        return None
    value = duration_seconds(text)
    return value if value is not None else _seconds_until(text, now)


def _body_signals(body: bytes) -> tuple[float | None, str | None]:
    """A refusal body's Gemini ``retryDelay`` and the code of a refusal no wait lifts."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, None
    if isinstance(data, list) and data:  # some Google front ends wrap the error in a list
        data = data[0]
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None, None
    final = None
    for field in ("code", "type"):
        if error.get(field) in _FINAL_CODES:
            final = f"{error[field]}: {str(error.get('message', ''))[:200]}"
    delay = None
    details = error.get("details")
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _RETRY_DELAY.match(str(detail.get("retryDelay", "")))
            if match:
                delay = float(match.group(1))
    return delay, final


def read_signals(headers: Mapping[str, str], body: bytes | None = None,
                 now: float | None = None) -> RateSignals:
    """The rate-limit figures of one answer: its ``headers`` (a case-insensitive mapping, as
    httpx gives them) and, for a refusal, its ``body``. ``now``: Unix time (tests)."""
    now = time.time() if now is None else now
    signals = RateSignals(retry_after=_retry_after(headers, now))
    for prefix in ("x-ratelimit-", "anthropic-ratelimit-"):
        openai_style = prefix == "x-ratelimit-"
        for kind in ("requests", "tokens"):
            names = ((f"{prefix}limit-{kind}", f"{prefix}remaining-{kind}",
                      f"{prefix}reset-{kind}") if openai_style else
                     (f"{prefix}{kind}-limit", f"{prefix}{kind}-remaining",
                      f"{prefix}{kind}-reset"))
            limit, left = _number(headers, names[0]), _number(headers, names[1])
            reset = _reset(headers, names[2], now)
            if limit is None and left is None and reset is None:
                continue
            setattr(signals, f"{kind}_per_minute", limit)
            setattr(signals, f"{kind}_left", left)
            setattr(signals, f"{kind}_reset", reset)
    if signals.tokens_left is None:  # Anthropic: input and output tokens apart
        for kind in ("input-tokens", "output-tokens"):
            left = _number(headers, f"anthropic-ratelimit-{kind}-remaining")
            if left is not None and (signals.tokens_left is None or left < signals.tokens_left):
                signals.tokens_left = left
                signals.tokens_reset = _reset(headers, f"anthropic-ratelimit-{kind}-reset", now)
    if body:
        delay, signals.final = _body_signals(body)
        if signals.retry_after is None:
            signals.retry_after = delay
    return signals
