"""Judge faults against the real llama.cpp server, through a fault-injecting proxy.

Every scenario runs l3score (the Yes/No log-probability path) and context_relevance (a
structured, schema-constrained path) with ``provider="openai-compatible"`` pointed at a
:class:`FaultProxy` in front of the ``llama_server`` fixture. For each: every sample ends scored
(after retries) or unmeasured with its reason; nothing escapes ``compute``; the headline is the
mean of the measured samples only and ``unmeasured`` lists the others; and the proxy, which
counts every HTTP request, sees no logical request more than ``1 + max_retries`` times.

Real answers are recorded once per session (``REPLAY``) and replayed by the proxy for identical
requests, so the many scenarios cost a handful of real completions on the one-thread server.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import load_metrics
from faultproxy import FaultProxy, SubprocessProxy, messages_key, synthetic_top_logprobs

from shared import prompts
from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.openai_compat import DEAD_AFTER
from shared.engine.logprobs import l3score_from_top_logprobs

pytestmark = pytest.mark.server

MAX_RETRIES = 2
REPLAY: dict[bytes, Any] = {}

L3_INPUTS = {
    "questions": ["What is the capital of France?", "How many legs does a spider have?",
                  "What colour is the sky on a clear day?"],
    "predictions": ["Paris", "Six", "Blue"],
    "references": ["Paris", "Eight", "Blue"],
}
CR_INPUTS = {
    "questions": ["What is the capital of France?", "How many legs does a spider have?"],
    "contexts": [["Paris is the capital of France."], ["Spiders have eight legs."]],
}
METRICS = {
    "l3score": ("L3Score", L3_INPUTS),
    "context_relevance": ("context_relevance", CR_INPUTS),
}

# fault -> whether the SDK retries it (a retried fault ends scored once the schedule passes)
RETRIED = {"429": True, "status:500": True, "status:503": True, "reset": True,
           "truncate": True, "hang": True, "not_json": False, "html": False,
           "bad_schema": False}
# faults that fail at the connection (no HTTP answer): they count towards a dead judge
CONNECTION_FAULTS = ("reset", "hang")


@pytest.fixture(scope="module", autouse=True)
def recorded(metrics: dict[str, Any], llama_server: str,
             tmp_path_factory: pytest.TempPathFactory) -> None:
    """Each metric's real answers, recorded once through a fault-free proxy (long time-out), so
    every scenario's passing requests are answered at once and a short ``timeout`` only
    measures the injected fault."""
    with FaultProxy(llama_server, replay=REPLAY) as proxy:
        for name in METRICS:
            cache = str(tmp_path_factory.mktemp("record-cache"))
            result = run(metrics, name, judge_options(proxy, cache, timeout=600.0))
            assert result["unmeasured"] == [], result["unmeasured"]


@pytest.fixture()
def proxy_factory(llama_server: str) -> Iterator[Any]:
    proxies: list[FaultProxy] = []

    def make(**kwargs: Any) -> FaultProxy:
        proxy = FaultProxy(llama_server, replay=REPLAY, **kwargs).start()
        proxies.append(proxy)
        return proxy

    yield make
    for proxy in proxies:
        proxy.stop()


def judge_options(proxy: FaultProxy | SubprocessProxy, cache_dir: str,
                  **overrides: Any) -> dict[str, Any]:
    return {
        "provider": "openai-compatible", "base_url": proxy.url, "model": "smollm2",
        "response_format": "json_object", "cache_dir": cache_dir, "max_retries": MAX_RETRIES,
        "timeout": 30.0, "max_concurrency": 4, "show_progress": False, **overrides,
    }


def check_result(result: dict[str, Any], headline: str,
                 n: int) -> tuple[list[int], dict[int, str]]:
    """The invariants of every judge result; returns (measured indices, unmeasured reasons)."""
    scores = result["scores"]
    assert len(scores) == n
    reasons = {u["index"]: u["reason"] for u in result["unmeasured"]}
    assert len(reasons) == len(result["unmeasured"]), "an index is listed twice as unmeasured"
    measured = []
    for i, score in enumerate(scores):
        if score is None:
            assert i in reasons, f"sample {i} has no score and no reason"
            assert isinstance(reasons[i], str) and reasons[i].strip()
        else:
            assert i not in reasons, f"sample {i} is scored and unmeasured"
            assert isinstance(score, (int, float)) and 0.0 <= score <= 1.0
            measured.append(i)
    if measured:
        expected = math.fsum(scores[i] for i in measured) / len(measured)
        assert result[headline] == pytest.approx(expected)
    else:
        assert result[headline] is None
    return measured, reasons


def check_retry_limit(proxy: FaultProxy, max_retries: int) -> None:
    attempts = proxy.attempts()
    assert attempts, "no request reached the proxy"
    worst = max(attempts.values())
    assert worst <= 1 + max_retries, f"a request was sent {worst} times (max_retries={max_retries})"


def run(metrics: dict[str, Any], name: str, options: dict[str, Any]) -> dict[str, Any]:
    headline, inputs = METRICS[name]
    return metrics[name].compute(**inputs, **options)


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("fault", list(RETRIED))
def test_first_two_requests_fail(metrics: dict[str, Any], proxy_factory: Any, cache_dir: str,
                                 name: str, fault: str) -> None:
    """The 1st and 2nd requests get the fault, the rest pass to the real server."""
    proxy = proxy_factory(schedule=[fault, fault])
    timeout = 2.0 if fault == "hang" else 30.0
    result = run(metrics, name, judge_options(proxy, cache_dir, timeout=timeout))
    headline, inputs = METRICS[name]
    n = len(next(iter(inputs.values())))
    measured, reasons = check_result(result, headline, n)
    check_retry_limit(proxy, MAX_RETRIES)
    faulted = {s.key for s in proxy.seen if s.fault == fault}
    assert proxy.faults()[fault] == 2
    if RETRIED[fault]:
        assert len(measured) == n, f"{fault}: samples not scored after retries: {reasons}"
        if fault == "429":  # Retry-After (1 s) is honoured before the retry
            for key in faulted:
                times = [s.arrived for s in proxy.seen if s.key == key]
                assert len(times) >= 2
                assert all(b - a >= 0.9 for a, b in zip(times, times[1:], strict=False))
    else:
        # not retried: the samples whose request got the fault are unmeasured with a reason
        assert 1 <= len(reasons) <= 2, reasons
        assert len(measured) == n - len(reasons)
        for key in faulted:
            assert proxy.attempts()[key] == 1
    assert result["usage"]["calls"] <= proxy.count


@pytest.mark.parametrize("name", list(METRICS))
@pytest.mark.parametrize("fault", ["429", "status:500", "status:503", "reset", "truncate",
                                   "hang", "not_json", "html", "bad_schema"])
def test_every_request_fails(metrics: dict[str, Any], proxy_factory: Any, cache_dir: str,
                             name: str, fault: str) -> None:
    """Every request gets the fault: every sample is unmeasured with its reason, the headline
    is None, and a retried fault is sent exactly 1 + max_retries times."""
    proxy = proxy_factory(default=fault)
    retries = 1 if fault in ("hang", "429") else MAX_RETRIES
    timeout = 1.0 if fault == "hang" else 30.0
    started = time.monotonic()
    result = run(metrics, name, judge_options(proxy, cache_dir, timeout=timeout,
                                              max_retries=retries))
    headline, inputs = METRICS[name]
    n = len(next(iter(inputs.values())))
    measured, reasons = check_result(result, headline, n)
    assert measured == []
    assert sorted(reasons) == list(range(n))
    check_retry_limit(proxy, retries)
    if fault in CONNECTION_FAULTS:
        # a dead judge: after DEAD_AFTER failed attempts in a row the rest is not sent (the
        # requests in flight at that moment may still reach the proxy)
        assert proxy.count <= DEAD_AFTER + n - 1, proxy.count
        assert any("unreachable" in r for r in reasons.values()) or proxy.count == n * (
            1 + retries), reasons
    elif RETRIED[fault]:
        assert set(proxy.attempts().values()) == {1 + retries}
    if fault.startswith("status:") or fault == "429":
        code = fault.split(":")[-1]
        assert all(code in reason for reason in reasons.values()), reasons
    if fault == "hang":
        assert all("1s" in r or "time" in r.lower() for r in reasons.values()), reasons
        assert time.monotonic() - started < 30


@pytest.mark.parametrize("name", list(METRICS))
def test_one_sample_always_fails(metrics: dict[str, Any], proxy_factory: Any, cache_dir: str,
                                 name: str) -> None:
    """Requests about spiders always get a 503; the aggregate is the mean of the others and
    the unmeasured list names that sample."""
    proxy = proxy_factory(rule=lambda _n, body: "status:503" if "spider" in str(
        body.get("messages")) else None)
    result = run(metrics, name, judge_options(proxy, cache_dir))
    headline, inputs = METRICS[name]
    n = len(next(iter(inputs.values())))
    measured, reasons = check_result(result, headline, n)
    assert list(reasons) == [1]
    assert "503" in reasons[1]
    assert measured == [i for i in range(n) if i != 1]
    spider = [s for s in proxy.seen if "spider" in s.prompt]
    assert len(spider) == 1 + MAX_RETRIES


def test_no_logprobs_is_a_clear_configuration_error(metrics: dict[str, Any], proxy_factory: Any,
                                                    cache_dir: str) -> None:
    """A server that returns no log-probabilities: l3score raises LogprobsUnavailable naming the
    model, after one request (not one per sample), and never reports a 0."""
    proxy = proxy_factory(default="no_logprobs")
    with pytest.raises(LogprobsUnavailable) as info:
        run(metrics, "l3score", judge_options(proxy, cache_dir))
    message = str(info.value)
    assert "smollm2" in message and "log-prob" in message
    assert proxy.count == 1
    assert proxy.seen[0].body.get("logprobs") is True
    assert proxy.seen[0].body.get("top_logprobs") == 5


def test_no_logprobs_does_not_matter_for_structured_metrics(
        metrics: dict[str, Any], proxy_factory: Any, cache_dir: str) -> None:
    proxy = proxy_factory(default="no_logprobs")
    result = run(metrics, "context_relevance", judge_options(proxy, cache_dir))
    measured, reasons = check_result(result, "context_relevance", 2)
    assert measured == [0, 1], reasons


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


RSS_GROWTH_LIMIT = 300 * 2**20  # bytes
STRESS_TIME_LIMIT = 120.0  # seconds; ~15 s on an idle 2-core machine


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc (Linux)")
def test_stress_2000_requests(metrics: dict[str, Any], llama_server: str,
                              cache_dir: str) -> None:
    """2,000 L3Score requests with max_concurrency=64.

    The proxy runs in a child process (so it does not compete with the client for the GIL).
    The first 3 requests are forwarded to the real llama.cpp server; the proxy answers the rest
    itself ("synthetic" mode: a valid chat completion with top-5 log-probabilities, after a
    10 ms pause), because 2,000 real completions on the one-thread server would take far too
    long. Checks: every request completes, once, and is scored with the answer the proxy gave
    for it; the proxy never sees more than 64 requests in flight; this process's resident memory
    grows by less than RSS_GROWTH_LIMIT (sampled every 20 ms); the run ends within
    STRESS_TIME_LIMIT (generous: the machine is shared).
    """
    n = 2000
    inputs = {
        "questions": [f"Question {i}: what is {i} plus {i}?" for i in range(n)],
        "predictions": [str(2 * i) for i in range(n)],
        "references": [str(2 * i + i % 2) for i in range(n)],
    }
    baseline = _rss_bytes()
    peak = baseline
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.wait(0.02):
            peak = max(peak, _rss_bytes())

    with SubprocessProxy(llama_server, schedule=["pass"] * 3, default="synthetic") as proxy:
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        started = time.monotonic()
        try:
            result = metrics["l3score"].compute(**inputs, **judge_options(
                proxy, cache_dir, max_concurrency=64, timeout=120.0))
        finally:
            done.set()
            sampler.join()
        elapsed = time.monotonic() - started
        stats = proxy.stats()

    measured, reasons = check_result(result, "L3Score", n)
    assert reasons == {} and len(measured) == n
    assert stats["count"] == n
    assert Counter(fault for fault, _ in stats["seen"]) == {"pass": 3, "synthetic": n - 3}
    assert 1 < stats["max_in_flight"] <= 64, stats["max_in_flight"]
    assert peak - baseline < RSS_GROWTH_LIMIT, f"RSS grew by {(peak - baseline) / 2**20:.0f} MiB"
    assert elapsed < STRESS_TIME_LIMIT, f"stress run took {elapsed:.1f}s"
    fault_of = dict((key, fault) for fault, key in stats["seen"])
    assert len(fault_of) == n  # every request sent once
    for i, (q, p, r) in enumerate(zip(*inputs.values(), strict=True)):
        messages = prompts.L3SCORE.request(question=q, gt=r, answer=p).as_openai_messages()
        if fault_of[messages_key(messages)] == "synthetic":
            expected = l3score_from_top_logprobs(synthetic_top_logprobs({"messages": messages}))
            assert result["scores"][i] == pytest.approx(expected), i


def test_logprobs_stopping_part_way_is_a_row_fault(metrics: dict[str, Any], proxy_factory: Any,
                                                   cache_dir: str) -> None:
    """The real server returns log-probabilities for the first question, then the proxy strips
    them from the answer about spiders: that row is unmeasured with the reason, the others are
    scored, and every good answer is in the cache (a rerun sends only the faulty one)."""
    strip = lambda _n, body: "no_logprobs" if "spider" in str(body.get("messages")) else None  # noqa: E731
    proxy = proxy_factory(rule=strip)
    result = run(metrics, "l3score", judge_options(proxy, cache_dir))
    measured, reasons = check_result(result, "L3Score", 3)
    assert measured == [0, 2] and list(reasons) == [1]
    assert "no log-probabilities" in reasons[1] and "smollm2" in reasons[1]
    # the first request was alone (the probe), the others went together after it
    assert proxy.seen[0].key != next(s.key for s in proxy.seen if "spider" in s.prompt)
    assert proxy.faults() == {"pass": 2, "no_logprobs": 1}
    # rerun against a fault-free proxy at the same address: the good answers are cached
    proxy.rule = None
    again = run(metrics, "l3score", judge_options(proxy, cache_dir))
    assert again["unmeasured"] == [] and again["usage"]["cache_hits"] == 2
    assert again["usage"]["calls"] == 1
    assert [s.fault for s in proxy.seen[3:]] == ["pass"]
    assert "spider" in proxy.seen[3].prompt
    assert again["scores"][0] == result["scores"][0] and again["scores"][2] == result["scores"][2]


BIAS_INPUTS = {"predictions": ["Paris is the capital of France.", "Spiders have eight legs.",
                               "The sky is blue on a clear day."]}


@pytest.mark.parametrize("fault", ["reset", "hang", "closed_port"])
def test_a_dead_judge_fails_fast(proxy_factory: Any, cache_dir: str, fault: str) -> None:
    """3 rows of l3score, then bias, against a judge that resets every connection, never
    answers, or is not listening, with the default retries (3): after DEAD_AFTER failed attempts
    in a row nothing more is sent, every row is unmeasured with one clear reason, and the whole
    run takes seconds. When the judge is back, the next call probes it and is scored."""
    loaded = load_metrics(__file__, ("l3score", "bias"))
    l3, bias = loaded["l3score"], loaded["bias"]
    proxy = proxy_factory(default="pass" if fault == "closed_port" else fault)
    if fault == "closed_port":
        from conftest import free_port

        url = f"http://127.0.0.1:{free_port()}/v1"
    else:
        url = proxy.url
    options = {"provider": "openai-compatible", "base_url": url, "model": "smollm2",
               "response_format": "json_object", "cache_dir": cache_dir, "show_progress": False,
               "timeout": 2.0 if fault == "hang" else 60.0}
    started = time.monotonic()
    first = l3.compute(**L3_INPUTS, **options)
    second = bias.compute(**BIAS_INPUTS, **options)
    elapsed = time.monotonic() - started
    for result, n in ((first, 3), (second, 3)):
        reasons = [u["reason"] for u in result["unmeasured"]]
        assert len(reasons) == n, result
        assert all(s is None for s in result["scores"])
        assert any("unreachable" in r and f"{DEAD_AFTER} attempts in a row" in r
                   for r in reasons), reasons
    if fault != "closed_port":
        # l3score: DEAD_AFTER attempts (its probe's), bias: one probe attempt
        assert proxy.count == DEAD_AFTER + 1, [s.fault for s in proxy.seen]
    # seconds, not the 4 x 60 s per request of the SDK's retries (hang: 3 x 2 s + back-off)
    assert elapsed < (20 if fault == "hang" else 10), elapsed
    if fault != "closed_port":
        proxy.default = "pass"
        back = l3.compute(**L3_INPUTS, **options)
        assert back["unmeasured"] == [], back["unmeasured"]
