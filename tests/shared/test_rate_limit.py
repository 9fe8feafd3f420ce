"""A judge behind a rate limit: the limiter (shared/engine/backends/rate_limit.py) against the
rate-limited fake (tests/fakes/rate_limited.py, a token bucket that answers as OpenAI does), and
the reading of each provider's rate-limit headers (shared/engine/backends/rate_headers.py)."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fakes.rate_limited import RateLimitedFake, openai_duration
from faultproxy import FaultProxy

from shared import JudgeRequest, judge_config
from shared.cli.main import build_parser
from shared.engine.backends.pool import make_backend
from shared.engine.backends.rate_headers import duration_seconds, read_signals
from shared.engine.backends.rate_limit import MAX_WAIT, estimate_tokens
from shared.runs.ray_engine import worker_options

METRICS = ("l3score",)
BOUND_FACTOR = 1.15  # the run takes at most this times rows / rate


def rows(n: int) -> dict[str, list[str]]:
    return {"questions": [f"Question {i}: what is {i} plus {i}?" for i in range(n)],
            "predictions": [str(2 * i) for i in range(n)],
            "references": [str(2 * i + i % 2) for i in range(n)]}


def options(fake: RateLimitedFake, cache_dir: str, **more: Any) -> dict[str, Any]:
    return {"provider": "openai-compatible", "base_url": fake.url, "model": "rate-limited",
            "cache_dir": cache_dir, "show_progress": False, **more}


def ask(i: int) -> JudgeRequest:
    return JudgeRequest(messages=(("user", f"Is {i} even? Answer Yes or No."),), prompt_id="t")


def yes_no(config: Any, n: int, start: int = 0) -> dict[int, Any]:
    got: dict[int, Any] = {}
    make_backend(config).yes_no([ask(start + i) for i in range(n)], 2, got.__setitem__)
    return got


# ----------------------------------------------------------------------- the run


@pytest.mark.slow
def test_300_rows_through_a_3_per_second_limit_lose_none(metrics: dict[str, Any],
                                                          cache_dir: str) -> None:
    """A low-tier key: 3 requests a second, burst 3, 0.5 s latency, 300 l3score rows with the
    default 16 requests in flight. A client that spends its retries on each 429 loses about a
    third of the rows here; every row is measured, the judge is refused a handful of times at
    most, and the run takes at most 1.15x the bound (300 / 3 = 100 s)."""
    n, rate = 300, 3.0
    with RateLimitedFake(rate=rate, burst=3, latency=0.5) as fake:
        started = time.monotonic()
        result = metrics["l3score"].compute(**rows(n), **options(fake, cache_dir))
        elapsed = time.monotonic() - started
        stats = fake.stats()
    assert result["unmeasured"] == [], result["unmeasured"][:3]
    assert sum(score is not None for score in result["scores"]) == n
    assert stats["answered"] == n
    assert stats["refused"] <= 10, stats
    assert elapsed <= BOUND_FACTOR * n / rate, (elapsed, stats)


def test_a_limit_that_announces_nothing_loses_no_row(metrics: dict[str, Any],
                                                     cache_dir: str) -> None:
    """Only 429 and Retry-After, no x-ratelimit-* headers: the window backs off and grows, and
    every row is measured in about the bound."""
    n, rate = 60, 3.0
    with RateLimitedFake(rate=rate, burst=3, latency=0.5, announce=False) as fake:
        started = time.monotonic()
        result = metrics["l3score"].compute(**rows(n), **options(fake, cache_dir))
        elapsed = time.monotonic() - started
        stats = fake.stats()
    assert result["unmeasured"] == [], result["unmeasured"][:3]
    assert stats["answered"] == n and stats["refused"] > 0  # refusals happened, none was lost
    assert elapsed <= 1.5 * n / rate, (elapsed, stats)


def test_the_progress_bar_says_when_the_run_waits_on_a_rate_limit(
        metrics: dict[str, Any], cache_dir: str, capfd: pytest.CaptureFixture[str]) -> None:
    with RateLimitedFake(rate=2.0, burst=1, latency=0.2, announce=False) as fake:
        metrics["l3score"].compute(**rows(12), **options(fake, cache_dir, show_progress=True))
    assert "rate limit:" in capfd.readouterr().err


# ----------------------------------------------------------------- caps and the shared pace


def test_max_requests_per_minute_paces_the_requests_up_front() -> None:
    """A server that would take far more: the cap alone spaces the requests."""
    with RateLimitedFake(rate=1000, burst=1000) as fake:
        config = judge_config(provider="openai-compatible", base_url=fake.url, model="m",
                              max_requests_per_minute=600)  # 10 a second
        started = time.monotonic()
        got = yes_no(config, 21)
        elapsed = time.monotonic() - started
    assert all(outcome.ok for outcome in got.values())
    assert elapsed >= 20 / 10 * 0.95, elapsed
    assert fake.stats()["span"] >= 20 / 10 * 0.9


def test_max_tokens_per_minute_paces_by_the_estimated_tokens() -> None:
    with RateLimitedFake(rate=1000, burst=1000) as fake:
        config = judge_config(provider="openai-compatible", base_url=fake.url, model="m",
                              max_tokens_per_minute=6000)  # 100 tokens a second
        first = make_backend(config)
        started = time.monotonic()
        got = yes_no(config, 6)
        elapsed = time.monotonic() - started
    assert all(outcome.ok for outcome in got.values())
    # the first five requests' tokens must pass before the sixth starts
    before_last = sum(estimate_tokens(body) for body in fake.bodies[:5])
    assert before_last > 100  # more than a second's worth
    assert elapsed >= before_last / 100 * 0.95, (elapsed, before_last)
    assert first.limiter.token_rate() == pytest.approx(100.0)


def test_every_backend_of_one_judge_shares_one_pace(cache_dir: str) -> None:
    """Two configs of the same judge (a different time-out: two backends in the pool) sending
    at once from two threads, as two metrics or panel members would: one limiter, so together
    they stay within the limit instead of each taking all of it."""
    n, rate = 24, 4.0
    with RateLimitedFake(rate=rate, burst=2, latency=0.2) as fake:
        configs = [judge_config(provider="openai-compatible", base_url=fake.url, model="m",
                                timeout=t) for t in (30.0, 31.0)]
        backends = [make_backend(config) for config in configs]
        assert backends[0] is not backends[1] and backends[0].limiter is backends[1].limiter
        results: list[dict[int, Any]] = [{}, {}]
        threads = [threading.Thread(target=lambda k=k: results[k].update(
            yes_no(configs[k], n // 2, start=100 * k))) for k in range(2)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        stats = fake.stats()
    assert all(o.ok for result in results for o in result.values())
    assert stats["answered"] == n and stats["refused"] <= 2, stats
    assert elapsed <= n / rate + 2.5, elapsed  # the two probes and the last answer


# ------------------------------------------------------------ a judge that refuses for good


def test_a_judge_that_refuses_every_request_gives_each_up_after_its_retries() -> None:
    """Nothing but 429s: no progress, so each request ends after max_retries + 1 refusals
    (the SDK does not ask again what the limiter gave up), with the 429 as its reason."""
    with RateLimitedFake(rate=1000, burst=1) as upstream, \
            FaultProxy(upstream.url.removesuffix("/v1"), default="429") as proxy:
        config = judge_config(provider="openai-compatible", base_url=proxy.url, model="m",
                              max_retries=1)
        got = yes_no(config, 3)
    assert all(not o.ok and "429" in o.error for o in got.values()), got
    assert all("given up: refused 2 times in a row" in o.error for o in got.values()), got
    assert set(proxy.attempts().values()) == {2}


def test_a_spent_quota_is_given_up_at_once() -> None:
    with RateLimitedFake(rate=1000, burst=1000, spent=True) as fake:
        config = judge_config(provider="openai-compatible", base_url=fake.url, model="m")
        got = yes_no(config, 3)
    assert all("insufficient_quota" in o.error and "refuses for good" in o.error
               for o in got.values()), got
    assert fake.stats()["refused"] == 3  # each request sent once


def test_a_wait_longer_than_any_run_is_given_up_at_once() -> None:
    """A bucket that refills once in an hour (and does not announce it): the 429 asks for more
    than MAX_WAIT seconds."""
    with RateLimitedFake(rate=1 / 3600, burst=1, announce=False) as fake:
        config = judge_config(provider="openai-compatible", base_url=fake.url, model="m")
        started = time.monotonic()
        got = yes_no(config, 3)
        elapsed = time.monotonic() - started
    assert sum(o.ok for o in got.values()) == 1
    assert all("429" in o.error and f"longer than {MAX_WAIT:.0f} s" in o.error
               for o in got.values() if not o.ok)
    assert fake.stats()["refused"] == 2 and elapsed < 30


# ------------------------------------------------------------------ headers and options


def test_openai_headers() -> None:
    signals = read_signals({"x-ratelimit-limit-requests": "180",
                            "x-ratelimit-remaining-requests": "0",
                            "x-ratelimit-reset-requests": "6m0s",
                            "x-ratelimit-limit-tokens": "30000",
                            "x-ratelimit-remaining-tokens": "29000",
                            "x-ratelimit-reset-tokens": "250ms",
                            "retry-after-ms": "340", "retry-after": "1"})
    assert (signals.requests_per_minute, signals.requests_left, signals.requests_reset) == (
        180, 0, 360)
    assert (signals.tokens_per_minute, signals.tokens_left) == (30000, 29000)
    assert signals.tokens_reset == pytest.approx(0.25)
    assert signals.retry_after == pytest.approx(0.34)  # the finer of the two
    assert read_signals({"retry-after": "2"}).retry_after == 2


def test_anthropic_headers() -> None:
    now = time.time()
    reset = (datetime.fromtimestamp(now, UTC) + timedelta(seconds=12)).isoformat()
    signals = read_signals({"anthropic-ratelimit-requests-limit": "50",
                            "anthropic-ratelimit-requests-remaining": "3",
                            "anthropic-ratelimit-requests-reset": reset,
                            "anthropic-ratelimit-input-tokens-remaining": "0",
                            "anthropic-ratelimit-input-tokens-reset": reset,
                            "anthropic-ratelimit-output-tokens-remaining": "900",
                            "retry-after": "12"}, now=now)
    assert (signals.requests_per_minute, signals.requests_left) == (50, 3)
    assert signals.requests_reset == pytest.approx(12, abs=0.01)
    assert signals.tokens_left == 0 and signals.tokens_reset == pytest.approx(12, abs=0.01)
    assert signals.retry_after == 12


def test_gemini_retry_delay_and_a_spent_quota() -> None:
    gemini = (b'{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "details": [{"@type": '
              b'"type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]}}')
    assert read_signals({}, gemini).retry_after == 31
    quota = (b'{"error": {"message": "You exceeded your current quota", "type": '
             b'"insufficient_quota", "code": "insufficient_quota"}}')
    assert read_signals({}, quota).final.startswith("insufficient_quota")
    assert read_signals({}, b"<html>busy</html>").final is None


def test_durations_as_openai_writes_them() -> None:
    for text, seconds in (("1s", 1), ("250ms", 0.25), ("6m0s", 360), ("1h2m3.5s", 3723.5),
                          ("17", 17)):
        assert duration_seconds(text) == pytest.approx(seconds)
    assert duration_seconds("soon") is None and duration_seconds("1s and more") is None
    for seconds in (0.2, 1.0, 2.5, 90.0):  # the fake writes what the limiter reads
        assert duration_seconds(openai_duration(seconds)) == pytest.approx(seconds, rel=0.01)


def test_the_token_estimate_counts_the_answer_allowed() -> None:
    body = b'{"messages": [{"role": "user", "content": "' + b"x" * 400 + b'"}], "max_tokens": 50}'
    assert estimate_tokens(body) == pytest.approx(len(body) / 4 + 50)
    assert MAX_WAIT >= 60


def test_the_options_are_checked_and_on_the_command_line() -> None:
    config = judge_config(max_requests_per_minute=90, max_tokens_per_minute=40000)
    assert (config.max_requests_per_minute, config.max_tokens_per_minute) == (90.0, 40000.0)
    for bad in (0, -5, "fast", float("inf")):
        with pytest.raises((TypeError, ValueError), match="max_requests_per_minute"):
            judge_config(max_requests_per_minute=bad)
    args = build_parser().parse_args(["score", "x.jsonl", "--metric", "l3score",
                                      "--max-requests-per-minute", "120",
                                      "--max-tokens-per-minute", "90000"])
    assert (args.max_requests_per_minute, args.max_tokens_per_minute) == (120, 90000)


def test_ray_workers_split_the_caps() -> None:
    config = judge_config(provider="openai-compatible", base_url="http://127.0.0.1:9/v1",
                          model="m", max_requests_per_minute=120, max_tokens_per_minute=9000,
                          max_concurrency=8)
    workers, per_metric = worker_options(["l3score"], config, 4, {"l3score": {}})
    assert workers == 4
    assert per_metric["l3score"]["max_requests_per_minute"] == 30
    assert per_metric["l3score"]["max_tokens_per_minute"] == 2250
