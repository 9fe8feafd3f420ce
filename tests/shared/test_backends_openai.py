"""The OpenAI-compatible judge backend against a real llama-cpp-python server (the
``llama_server`` fixture), with ``tests/faultproxy.py`` in between where a test needs to see or
disturb the traffic."""

from __future__ import annotations

import asyncio
import json
import math
import threading
import time

import jsonschema
import openai
import pytest
from backend_cases import STATEMENTS, VERDICTS, YES_NO, ask, collect
from conftest import free_port
from faultproxy import RETRY_AFTER, FaultProxy

from shared.base.types import Outcome, YesNoAnswer
from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.openai_compat import SEED, OpenAICompatBackend
from shared.engine.backends.openai_responses import first_token_top_logprobs, is_strict_compatible
from shared.engine.backends.pool import backend_key, make_backend
from shared.engine.config import JudgeConfig, judge_config

pytestmark = pytest.mark.server

SECRET = "sk-test-DO-NOT-LEAK-4f9a2c"
# llama-cpp-python's grammar ignores minimum/maximum (see docs/BACKENDS.md), so the server's
# 1-5 score is an enum; the local backend's test uses minimum/maximum.
SCORE = {
    "type": "object",
    "properties": {"score": {"type": "integer", "enum": [1, 2, 3, 4, 5]}},
    "required": ["score"],
    "additionalProperties": False,
}


def backend(url: str, **options: object) -> OpenAICompatBackend:
    options = {"response_format": "json_object", "api_key": SECRET, **options}
    made = make_backend(judge_config(provider="openai-compatible", base_url=url, model="smollm2",
                                     **options))
    assert isinstance(made, OpenAICompatBackend)
    return made


def test_yes_no_returns_top5_with_deterministic_settings(llama_server: str) -> None:
    with FaultProxy(llama_server) as proxy:
        judge = backend(proxy.url)
        results = collect(judge.yes_no, [ask(f"Is Paris the capital of France? {YES_NO}")], 5)
    assert list(results) == [0]
    outcome = results[0]
    assert outcome.ok, outcome.error
    answer = outcome.value
    assert isinstance(answer, YesNoAnswer)
    assert len(answer.top) == 5
    assert all(isinstance(token, str) and logprob <= 0.0 for token, logprob in answer.top)
    assert [lp for _, lp in answer.top] == sorted((lp for _, lp in answer.top), reverse=True)
    assert sum(math.exp(lp) for _, lp in answer.top) <= 1.0 + 1e-6
    assert {"Yes", "No"} & {token for token, _ in answer.top}
    assert answer.p_yes is None and answer.p_no is None  # only top-k over HTTP
    assert outcome.usage.prompt_tokens > 0 and outcome.usage.completion_tokens == 1
    body = proxy.seen[0].body
    assert body["temperature"] == 0 and body["top_p"] == 1 and body["seed"] == SEED
    assert body["logprobs"] is True and body["top_logprobs"] == 5 and body["max_tokens"] == 1
    headers = {name.lower(): value for name, value in proxy.seen[0].headers.items()}
    assert headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("schema", "prompt"),
    [
        (STATEMENTS, "Split into short statements, as JSON with a 'statements' list: "
                     "Paris is the capital of France. It has 2 million inhabitants."),
        (VERDICTS, "For each of the 3 statements say yes if it is true, else no, as JSON "
                   "with a 'verdicts' list: 1. Water is wet. 2. Fire is cold. 3. Ice is cold."),
        (SCORE, "Rate from 1 to 5 how well 'Paris' answers 'What is the capital of France?'. "
                "Reply as JSON with a 'score'."),
    ],
    ids=["statements", "verdicts", "score"],
)
def test_structured_answers_are_schema_valid(llama_server: str, schema: dict,
                                             prompt: str) -> None:
    judge = backend(llama_server)
    assert judge.constrained
    results = collect(judge.structured, [ask(prompt)], schema, 120)
    outcome = results[0]
    assert outcome.ok, outcome.error
    assert isinstance(outcome.value, str)
    jsonschema.validate(json.loads(outcome.value), schema)
    assert outcome.usage.completion_tokens > 0


def test_response_format_styles_shape_the_request(llama_server: str) -> None:
    """What each structured-output style sends (answers from the proxy, so a style the llama
    server rejects can be shown too)."""
    sent = {}
    with FaultProxy(llama_server, default="synthetic") as proxy:
        for style in ("json_schema", "json_object", "json_object_plain", "none"):
            judge = backend(proxy.url, response_format=style)
            results = collect(judge.structured, [ask(f"style {style}")], SCORE, 16)
            assert results[0].ok, results[0].error
            sent[style] = proxy.seen[-1].body.get("response_format")
            assert judge.constrained == (style in ("json_schema", "json_object"))
            assert results[0].constrained == judge.constrained  # told with each answer
    assert sent["json_schema"] == {
        "type": "json_schema",
        "json_schema": {"name": "judge_answer", "schema": SCORE, "strict": True},
    }
    assert sent["json_object"] == {"type": "json_object", "schema": SCORE}
    assert sent["json_object_plain"] == {"type": "json_object"}
    assert sent["none"] is None


def test_strict_only_for_schemas_openai_accepts() -> None:
    assert is_strict_compatible(STATEMENTS) and is_strict_compatible(VERDICTS)
    loose = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    assert not is_strict_compatible(loose)
    nested = {"type": "object", "properties": {"x": loose}, "required": ["x"],
              "additionalProperties": False}
    assert not is_strict_compatible(nested)
    # strict mode takes no prefixItems: the verdict lists' per-position item numbers
    numbered = {**VERDICTS, "properties": {"verdicts": {
        "type": "array", "prefixItems": [VERDICTS["properties"]["verdicts"]["items"]]}}}
    assert not is_strict_compatible(numbered)


def test_missing_logprobs_are_detected_on_a_real_response(llama_server: str) -> None:
    """llama-cpp-python returns log-probabilities only when top_logprobs is sent: a real
    completion without them must be recognised."""
    client = openai.OpenAI(base_url=llama_server, api_key="none")
    try:
        response = client.chat.completions.create(
            model="smollm2", messages=[{"role": "user", "content": f"Is ice cold? {YES_NO}"}],
            max_tokens=1, temperature=0, logprobs=True,
        )
    finally:
        client.close()
    assert response.choices[0].logprobs is None
    with pytest.raises(LogprobsUnavailable, match=r"'smollm2'.*no log-probabilities.*Yes/No"):
        first_token_top_logprobs(response, "smollm2", "127.0.0.1")


def test_yes_no_raises_after_one_call_when_the_model_gives_no_logprobs(llama_server: str) -> None:
    with FaultProxy(llama_server, default="no_logprobs") as proxy:
        judge = backend(proxy.url, max_concurrency=4)
        requests = [ask(f"Is {n} a prime number? {YES_NO}") for n in range(5)]
        with pytest.raises(LogprobsUnavailable, match="smollm2"):
            judge.yes_no(requests, 5, lambda index, outcome: None)
        assert proxy.count == 1  # a probe call, not the whole batch


class CountingBackend(OpenAICompatBackend):
    """The real backend, counting the requests it is waiting for (test-side instrumentation)."""

    def __init__(self, config: JudgeConfig) -> None:
        super().__init__(config)
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0

    async def _watched(self, one, request):  # type: ignore[no-untyped-def]
        self._count(+1)
        try:
            return await super()._watched(one, request)
        finally:
            self._count(-1)

    def _count(self, delta: int) -> None:
        with self.lock:
            self.in_flight += delta
            self.max_in_flight = max(self.max_in_flight, self.in_flight)


def test_concurrency_is_bounded_and_results_stream_to_the_caller(llama_server: str) -> None:
    with FaultProxy(llama_server) as proxy:
        judge = CountingBackend(judge_config(provider="openai-compatible", base_url=proxy.url,
                                             model="smollm2", api_key=SECRET, max_concurrency=2))
        requests = [ask(f"Is {n} an even number? {YES_NO}") for n in range(4)]
        caller = threading.current_thread()
        arrivals: list[tuple[int, int]] = []  # (index, requests still in flight then)

        def on_result(index: int, outcome: Outcome) -> None:
            assert threading.current_thread() is caller
            assert outcome.ok, outcome.error
            arrivals.append((index, judge.in_flight))

        try:
            judge.yes_no(requests, 5, on_result)
        finally:
            judge.close()
    assert sorted(index for index, _ in arrivals) == list(range(4))
    assert proxy.count == 4
    assert proxy.max_in_flight == 2  # the server answers one at a time, so the bound is reached
    assert judge.max_in_flight == 2 and judge.in_flight == 0
    # results stream: some reached the caller while other requests were still running
    assert any(running >= 1 for _, running in arrivals[:-1])


def test_works_inside_a_running_event_loop(llama_server: str) -> None:
    judge = backend(llama_server)

    async def notebook_cell() -> dict[int, Outcome]:
        return collect(judge.yes_no, [ask(f"Is Paris the capital of France? {YES_NO}")], 3)

    results = asyncio.run(notebook_cell())
    assert results[0].ok, results[0].error
    assert len(results[0].value.top) == 3


def test_429_is_retried_after_retry_after(llama_server: str) -> None:
    with FaultProxy(llama_server, schedule=["429"]) as proxy:
        judge = backend(proxy.url, max_retries=2)
        start = time.monotonic()
        results = collect(judge.yes_no, [ask(f"Is Paris the capital of France? {YES_NO}")], 5)
        elapsed = time.monotonic() - start
    assert results[0].ok, results[0].error
    assert proxy.faults() == {"429": 1, "pass": 1}
    assert elapsed >= RETRY_AFTER * 0.9


def test_failures_become_readable_errors_without_the_key(llama_server: str) -> None:
    with FaultProxy(llama_server, default="status:503") as proxy:
        judge = backend(proxy.url, max_retries=1)
        results = collect(judge.structured, [ask("anything")], SCORE, 8)
        assert proxy.count == 2  # one retry
    assert "HTTP 503" in results[0].error and "injected fault 503" in results[0].error

    with FaultProxy(llama_server, default="hang") as proxy:
        judge = backend(proxy.url, max_retries=0, timeout=1.0)
        results = collect(judge.yes_no, [ask("hang")], 5)
        proxy.stop()
    assert "within 1s" in results[0].error

    port = free_port()  # nothing listens there
    judge = backend(f"http://127.0.0.1:{port}/v1", max_retries=0, timeout=2.0)
    results = collect(judge.yes_no, [ask("nobody home")], 5)
    assert "connection to 127.0.0.1" in results[0].error

    with FaultProxy(llama_server, default="bad_schema") as proxy:
        results = collect(backend(proxy.url).yes_no, [ask("bad")], 5)
    assert "malformed" in results[0].error

    for text in (results[0].error, repr(judge), str(backend_key(judge_config(
            provider="openai-compatible", base_url=llama_server, model="smollm2",
            api_key=SECRET)))):
        assert SECRET not in text


def test_make_backend_reuses_backends_per_settings(llama_server: str) -> None:
    config = judge_config(provider="openai-compatible", base_url=llama_server, model="smollm2",
                          api_key=SECRET)
    first = make_backend(config)
    assert make_backend(judge_config(provider="openai-compatible", base_url=llama_server,
                                     model="smollm2", api_key=SECRET)) is first
    other_key = make_backend(judge_config(provider="openai-compatible", base_url=llama_server,
                                          model="smollm2", api_key="sk-other"))
    assert other_key is not first and other_key.uses_api_key("sk-other")
    assert first.uses_api_key(SECRET)
    assert first.kind == "openai-compatible" and first.host == llama_server.split("/")[2]
    assert first.endpoint == llama_server  # the call-cache key part: the whole URL
    assert SECRET not in repr(first) and SECRET not in str(backend_key(config))
    assert first.sampling_params("yes_no") == {
        "temperature": 0, "top_p": 1, "seed": SEED, "logprobs": True, "max_tokens": 1}


def test_endpoint_of_normalises_and_drops_credentials() -> None:
    from shared.engine.config import endpoint_of

    assert endpoint_of("HTTP://Example.COM:80/v1/") == "http://example.com/v1"
    assert endpoint_of("https://example.com:443/v1") == "https://example.com/v1"
    assert endpoint_of("http://example.com:8080/route/v1") == "http://example.com:8080/route/v1"
    assert endpoint_of("http://u:p@example.com/v1") == "http://example.com/v1"
    assert endpoint_of("http://[::1]:8000/v1") == "http://[::1]:8000/v1"
    assert endpoint_of("http://h/v1") != endpoint_of("http://h/other/v1")
