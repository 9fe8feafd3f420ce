"""The Anthropic backend (the official ``anthropic`` SDK) against a fake of the Messages API
(``tests/fakes/anthropic.py``, written from Anthropic's public reference) that answers through
the real llama.cpp server (the ``llama_server`` fixture)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import evaluate
import pytest
from backend_cases import STATEMENTS, ask, collect
from fakes.anthropic import FakeAnthropic
from faultproxy import FaultProxy
from metric_examples import EXAMPLES, judge_options

from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.pool import make_backend, release_backend
from shared.engine.config import judge_config
from shared.kit.registry import metric_path

pytestmark = pytest.mark.server

KEY = "sk-ant-test-DO-NOT-LEAK-7c1e93"
EXPERIMENT = f"{Path(__file__).stem}-{os.getpid()}"


@pytest.fixture(scope="module")
def metrics() -> dict[str, evaluate.EvaluationModule]:
    return {name: evaluate.load(metric_path(name), experiment_id=EXPERIMENT)
            for name in ("faithfulness", "pairwise", "l3score")}


@pytest.fixture()
def fake(llama_server: str) -> Iterator[FakeAnthropic]:
    with FakeAnthropic(llama_server, KEY) as server:
        yield server


def options(fake: FakeAnthropic, cache_dir: str, **more: Any) -> dict[str, Any]:
    return {"provider": "anthropic", "base_url": fake.url, "api_key": KEY,
            "model": "claude-haiku-4-5", "cache_dir": cache_dir, "show_progress": False,
            **more}


def scores(result: dict[str, Any]) -> dict[str, Any]:
    """A result without what differs between two providers by design (usage, cost, the judge
    description)."""
    return {key: value for key, value in result.items()
            if key not in ("usage", "Cost", "judge", "dry_run")}


def assert_no_key(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    assert KEY not in text and KEY[8:] not in text, f"the API key leaked into {where}"


def test_a_structured_metric_gives_the_openai_compatible_numbers(
        metrics: dict[str, Any], fake: FakeAnthropic, llama_server: str, tmp_path: Path) -> None:
    inputs = EXAMPLES["faithfulness"]
    reference = metrics["faithfulness"].compute(
        **inputs, **judge_options(llama_server, str(tmp_path / "openai")))
    ours = metrics["faithfulness"].compute(**inputs, **options(fake, str(tmp_path / "claude")))
    assert scores(ours) == scores(reference)
    assert ours["usage"]["calls"] == fake.count > 0
    # priced at the list price of the model (USD per 1M tokens: 1.00 in, 5.00 out)
    usage = ours["usage"]
    assert ours["Cost"] == pytest.approx(
        (usage["prompt_tokens"] * 1.00 + usage["completion_tokens"] * 5.00) / 1e6, abs=1e-6)
    # the wire format: the version header, the key, one forced tool, no sampling parameters
    for seen in fake.received:
        assert seen.path == "/v1/messages" and seen.headers["anthropic-version"]
        body = seen.body
        assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] >= 1
        assert [t["name"] for t in body["tools"]] == [body["tool_choice"]["name"]]
        assert body["tool_choice"]["type"] == "tool"
        assert body["tools"][0]["input_schema"]["type"] == "object"
        assert not {"temperature", "top_p", "top_k"} & set(body)
        assert all(turn["role"] in ("user", "assistant") for turn in body["messages"])
    # a second run is answered from the call cache
    sent = fake.count
    again = metrics["faithfulness"].compute(**inputs, **options(fake, str(tmp_path / "claude")))
    assert fake.count == sent and again["usage"]["calls"] == 0
    assert scores(again) == scores(ours)


def test_pairwise_gives_the_written_label_as_the_openai_compatible_path(
        metrics: dict[str, Any], fake: FakeAnthropic, llama_server: str, tmp_path: Path) -> None:
    """No log-probabilities: the label the judge writes, read as the OpenAI-compatible backend
    reads it from a model without them (the same server behind a proxy that strips them)."""
    inputs = EXAMPLES["pairwise"]
    with FaultProxy(llama_server, default="no_logprobs") as proxy:
        reference = metrics["pairwise"].compute(
            **inputs, **judge_options(proxy.url, str(tmp_path / "openai")))
        reference_host = proxy.url.split("//")[1].split("/")[0]
    result = metrics["pairwise"].compute(**inputs, **options(fake, str(tmp_path / "claude")))
    assert fake.count >= 2
    for seen in fake.received:  # a short written answer: no tools
        assert "tools" not in seen.body and seen.body["max_tokens"] == 16
    host = fake.url.split("//")[1]
    assert repr(scores(result)).replace(host, "HOST") == \
        repr(scores(reference)).replace(reference_host, "HOST")


def test_g_eval_samples_ask_n_written_answers_per_sample(fake: FakeAnthropic,
                                                         tmp_path: Path) -> None:
    g_eval = evaluate.load(metric_path("g_eval"), experiment_id=EXPERIMENT)
    inputs = {**EXAMPLES["g_eval"], "samples": 3}
    result = g_eval.compute(**inputs, **options(fake, str(tmp_path / "cache")))
    n = len(inputs["predictions"])
    assert fake.count == 3 * n  # N requests per sample
    for seen in fake.received:  # short written answers, no sampling parameter
        assert seen.body["max_tokens"] == 16 and "temperature" not in seen.body
    for detail, score in zip(result["details"], result["scores"], strict=True):
        if score is not None:
            assert detail["score_method"] == "sampled" and detail["samples"] == 3
            named = [s for s in detail["sampled_scores"] if s is not None]
            assert detail["probabilities"] == {
                str(k): named.count(k) / len(named) for k in range(1, 6)}
    again = g_eval.compute(**inputs, **options(fake, str(tmp_path / "cache")))
    assert fake.count == 3 * n and again["usage"]["calls"] == 0


def test_l3score_refuses_before_any_request(metrics: dict[str, Any], fake: FakeAnthropic,
                                            cache_dir: str) -> None:
    with pytest.raises((LogprobsUnavailable, ValueError), match="log-probabilities"):
        metrics["l3score"].compute(**EXAMPLES["l3score"], **options(fake, cache_dir))
    assert fake.count == 0


def test_overload_and_rate_limit_are_retried(fake: FakeAnthropic) -> None:
    fake.add_faults("529", "429")
    config = judge_config(**options(fake, "unused", max_retries=2))
    judge = make_backend(config)
    try:
        started = time.monotonic()
        results = collect(judge.structured, [ask("List one fact about Paris as JSON.")],
                          STATEMENTS, 64)
        elapsed = time.monotonic() - started
    finally:
        release_backend(config)
    assert results[0].ok, results[0].error
    assert [seen.fault for seen in fake.received] == ["529", "429", None]
    assert fake.received[0].body == fake.received[2].body  # the same request, asked again
    assert elapsed >= 1.0  # the 429's retry-after: 1 was honoured


def test_a_fault_is_not_cached_and_is_asked_again(metrics: dict[str, Any], fake: FakeAnthropic,
                                                  cache_dir: str) -> None:
    inputs = {k: v[:1] for k, v in EXAMPLES["faithfulness"].items()}
    fake.add_faults("529")
    failed = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir,
                                                                 max_retries=0))
    assert fake.count == 1
    reason = failed["unmeasured"][0]["reason"]
    assert "529" in reason and "overloaded_error" in reason, reason
    later = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir, max_retries=0))
    assert fake.count > 1  # asked again: the fault was not cached
    assert all("529" not in u["reason"] for u in later["unmeasured"]), later["unmeasured"]


def test_the_key_appears_in_no_message_repr_or_cache_file(
        metrics: dict[str, Any], fake: FakeAnthropic, cache_dir: str) -> None:
    inputs = {k: v[:1] for k, v in EXAMPLES["faithfulness"].items()}
    fake.add_faults("echo_key:401")
    result = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir,
                                                                 max_retries=0))
    reason = result["unmeasured"][0]["reason"]
    assert "401" in reason and "authentication_error" in reason, reason
    assert_no_key("the result", repr(result))
    metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir))
    config = judge_config(**options(fake, cache_dir))
    judge = make_backend(config)
    assert_no_key("the backend's repr", repr(judge))
    assert_no_key("the config's repr", repr(config))
    files = [p for p in Path(cache_dir).rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert_no_key(str(path), path.read_bytes())
    # the key went out as the credential
    seen = fake.received[-1].headers
    assert KEY in (seen.get("x-api-key", ""), seen.get("authorization", "")[7:])


def test_a_wrong_key_is_an_authentication_error(fake: FakeAnthropic) -> None:
    config = judge_config(**{**options(fake, "unused"), "api_key": "sk-ant-wrong-key-000",
                             "max_retries": 0})
    judge = make_backend(config)
    try:
        results = collect(judge.structured, [ask("Say hi as JSON.")], STATEMENTS, 16)
    finally:
        release_backend(config)
    assert not results[0].ok and "HTTP 401" in results[0].error
    assert "sk-ant-wrong-key-000" not in results[0].error


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    with pytest.raises(ValueError) as raised:  # at configuration, before any request
        make_backend(judge_config(provider="anthropic", api_key=KEY,
                                  base_url="http://127.0.0.1:9"))
    message = str(raised.value)
    assert "\n" not in message and "pip install 'judge-metrics[anthropic]'" in message


def test_an_unreachable_judge_fails_fast() -> None:
    """Nothing listens at the endpoint: after DEAD_AFTER failed attempts the rest of the batch
    is not sent (the RemoteBackend plumbing, fed by the SDK's HTTP attempts)."""
    from conftest import free_port

    from shared.engine.backends.remote import DEAD_AFTER

    config = judge_config(provider="anthropic", api_key=KEY, max_retries=DEAD_AFTER,
                          base_url=f"http://127.0.0.1:{free_port()}", max_concurrency=1)
    judge = make_backend(config)
    try:
        results = collect(judge.structured, [ask(f"Question {n}?") for n in range(4)],
                          STATEMENTS, 16)
    finally:
        release_backend(config)
    reasons = [results[n].error or "" for n in range(4)]
    assert all("unreachable" in reason for reason in reasons[1:]), reasons
    assert f"{DEAD_AFTER} attempts in a row" in reasons[-1]
