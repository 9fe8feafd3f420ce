"""The Bedrock backend (``boto3``'s ``bedrock-runtime`` client) against a fake of the Converse
API (``tests/fakes/bedrock.py``, written from the Bedrock Runtime API reference) that answers
through the real llama.cpp server (the ``llama_server`` fixture). Requests are SigV4-signed with
dummy credentials (the fake checks the signature's form and scope, not its value)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import evaluate
import pytest
from backend_cases import STATEMENTS, ask, collect
from fakes.bedrock import FakeBedrock
from faultproxy import FaultProxy
from metric_examples import EXAMPLES, judge_options

from shared.engine.backends.base import LogprobsUnavailable
from shared.engine.backends.pool import make_backend, release_backend
from shared.engine.config import judge_config
from shared.kit.registry import metric_path

pytestmark = pytest.mark.server

ACCESS_KEY = "AKIAFAKETESTKEY00042"
SECRET_KEY = "fake/SECRET+access/key/DO-NOT-LEAK/0xb3d9"
BEARER = "ABSKfakeBedrockApiKey-DO-NOT-LEAK-51e2"
REGION = "eu-west-3"
MODEL = "global.anthropic.claude-haiku-4-5-20251001-v1:0"
EXPERIMENT = f"{Path(__file__).stem}-{os.getpid()}"


@pytest.fixture(autouse=True)
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Dummy credentials and a region in the environment, nothing from the user's files."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
                 "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_BEDROCK_RUNTIME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_REGION", REGION)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")  # AWS_REGION comes first
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


@pytest.fixture(scope="module")
def metrics() -> dict[str, evaluate.EvaluationModule]:
    return {name: evaluate.load(metric_path(name), experiment_id=EXPERIMENT)
            for name in ("faithfulness", "pairwise", "l3score")}


@pytest.fixture()
def fake(llama_server: str) -> Iterator[FakeBedrock]:
    with FakeBedrock(llama_server, ACCESS_KEY, REGION, bearer_token=BEARER) as server:
        yield server


def options(fake: FakeBedrock, cache_dir: str, **more: Any) -> dict[str, Any]:
    return {"provider": "bedrock", "base_url": fake.url, "model": MODEL,
            "cache_dir": cache_dir, "show_progress": False, **more}


def scores(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items()
            if key not in ("usage", "Cost", "judge", "dry_run")}


def assert_no_secret(where: str, text: str | bytes) -> None:
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for secret in (SECRET_KEY, BEARER, "DO-NOT-LEAK"):
        assert secret not in text, f"a credential leaked into {where}"



def test_g_eval_samples_ask_n_answers_at_temperature_1(fake: FakeBedrock,
                                                       tmp_path: Path) -> None:
    g_eval = evaluate.load(metric_path("g_eval"), experiment_id=EXPERIMENT)
    inputs = {**EXAMPLES["g_eval"], "samples": 3}
    result = g_eval.compute(**inputs, **options(fake, str(tmp_path / "cache")))
    n = len(inputs["predictions"])
    assert fake.count == 3 * n  # N requests per sample
    for seen in fake.received:
        assert seen.body["inferenceConfig"] == {"maxTokens": 16, "temperature": 1, "topP": 1}
    measured = [(d, s) for d, s in zip(result["details"], result["scores"], strict=True)
                if s is not None]
    assert measured, result["unmeasured"]
    for detail, _ in measured:
        assert detail["score_method"] == "sampled" and detail["samples"] == 3
        named = [s for s in detail["sampled_scores"] if s is not None]
        assert detail["probabilities"] == {
            str(k): named.count(k) / len(named) for k in range(1, 6)}
    again = g_eval.compute(**inputs, **options(fake, str(tmp_path / "cache")))
    assert fake.count == 3 * n and again["usage"]["calls"] == 0


def test_a_structured_metric_gives_the_openai_compatible_numbers(
        metrics: dict[str, Any], fake: FakeBedrock, llama_server: str, tmp_path: Path) -> None:
    inputs = EXAMPLES["faithfulness"]
    reference = metrics["faithfulness"].compute(
        **inputs, **judge_options(llama_server, str(tmp_path / "openai")))
    ours = metrics["faithfulness"].compute(**inputs, **options(fake, str(tmp_path / "bedrock")))
    assert scores(ours) == scores(reference)
    assert ours["usage"]["calls"] == fake.count > 0
    # priced at the list price of the model (USD per 1M tokens: 1.00 in, 5.00 out)
    usage = ours["usage"]
    assert ours["Cost"] == pytest.approx(
        (usage["prompt_tokens"] * 1.00 + usage["completion_tokens"] * 5.00) / 1e6, abs=1e-6)
    assert set(fake.model_ids()) == {MODEL}
    for seen in fake.received:  # SigV4 for bedrock in AWS_REGION, one forced tool, greedy
        assert seen.headers["authorization"].startswith(
            f"AWS4-HMAC-SHA256 Credential={ACCESS_KEY}/")
        assert f"/{REGION}/bedrock/aws4_request" in seen.headers["authorization"]
        config = seen.body["toolConfig"]
        [tool] = config["tools"]
        assert config["toolChoice"] == {"tool": {"name": tool["toolSpec"]["name"]}}
        assert tool["toolSpec"]["inputSchema"]["json"]["type"] == "object"
        assert seen.body["inferenceConfig"]["temperature"] == 0
    sent = fake.count
    again = metrics["faithfulness"].compute(**inputs, **options(fake, str(tmp_path / "bedrock")))
    assert fake.count == sent and again["usage"]["calls"] == 0
    assert scores(again) == scores(ours)


def test_pairwise_gives_the_written_label_as_the_openai_compatible_path(
        metrics: dict[str, Any], fake: FakeBedrock, llama_server: str, tmp_path: Path) -> None:
    inputs = EXAMPLES["pairwise"]
    with FaultProxy(llama_server, default="no_logprobs") as proxy:
        reference = metrics["pairwise"].compute(
            **inputs, **judge_options(proxy.url, str(tmp_path / "openai")))
        reference_host = proxy.url.split("//")[1].split("/")[0]
    result = metrics["pairwise"].compute(**inputs, **options(fake, str(tmp_path / "bedrock")))
    assert fake.count >= 2
    for seen in fake.received:
        assert "toolConfig" not in seen.body
        assert seen.body["inferenceConfig"] == {"maxTokens": 16, "temperature": 0}
    host = fake.url.split("//")[1]
    assert repr(scores(result)).replace(host, "HOST") == \
        repr(scores(reference)).replace(reference_host, "HOST")


def test_l3score_refuses_before_any_request(metrics: dict[str, Any], fake: FakeBedrock,
                                            cache_dir: str) -> None:
    with pytest.raises((LogprobsUnavailable, ValueError), match="log-probabilities"):
        metrics["l3score"].compute(**EXAMPLES["l3score"], **options(fake, cache_dir))
    assert fake.count == 0


def test_throttling_and_unavailable_are_retried(fake: FakeBedrock) -> None:
    fake.add_faults("429", "503")
    config = judge_config(**options(fake, "unused", max_retries=2))
    judge = make_backend(config)
    try:
        results = collect(judge.structured, [ask("List one fact about Paris as JSON.")],
                          STATEMENTS, 64)
    finally:
        release_backend(config)
    assert results[0].ok, results[0].error
    assert [seen.fault for seen in fake.received] == ["429", "503", None]
    assert fake.received[0].body == fake.received[2].body


def test_a_fault_is_not_cached_and_is_asked_again(metrics: dict[str, Any], fake: FakeBedrock,
                                                  cache_dir: str) -> None:
    inputs = {k: v[:1] for k, v in EXAMPLES["faithfulness"].items()}
    fake.add_faults("429")
    failed = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir,
                                                                 max_retries=0))
    assert fake.count == 1
    reason = failed["unmeasured"][0]["reason"]
    assert "HTTP 429" in reason and "ThrottlingException" in reason, reason
    later = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir, max_retries=0))
    assert fake.count > 1
    assert all("429" not in u["reason"] for u in later["unmeasured"]), later["unmeasured"]


def test_a_bedrock_api_key_is_sent_as_a_bearer_token_and_shown_nowhere(
        metrics: dict[str, Any], fake: FakeBedrock, cache_dir: str) -> None:
    inputs = {k: v[:1] for k, v in EXAMPLES["faithfulness"].items()}
    fake.add_faults("echo_key:403")
    result = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir, api_key=BEARER,
                                                                 max_retries=0))
    reason = result["unmeasured"][0]["reason"]
    assert "HTTP 403" in reason and "UnrecognizedClientException" in reason, reason
    assert_no_secret("the result", repr(result))
    metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir, api_key=BEARER))
    for seen in fake.received:
        assert seen.headers["authorization"] == f"Bearer {BEARER}"
    config = judge_config(**options(fake, cache_dir, api_key=BEARER))
    assert_no_secret("the backend's repr", repr(make_backend(config)))
    assert_no_secret("the config's repr", repr(config))
    for path in [p for p in Path(cache_dir).rglob("*") if p.is_file()]:
        assert_no_secret(str(path), path.read_bytes())


def test_the_secret_key_appears_in_no_message_or_cache_file(
        metrics: dict[str, Any], llama_server: str, cache_dir: str) -> None:
    with FakeBedrock(llama_server, ACCESS_KEY, REGION) as fake:
        inputs = {k: v[:1] for k, v in EXAMPLES["faithfulness"].items()}
        fake.add_faults("500")
        result = metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir,
                                                                     max_retries=0))
        metrics["faithfulness"].compute(**inputs, **options(fake, cache_dir))
        config = judge_config(**options(fake, cache_dir))
        assert_no_secret("the backend's repr", repr(make_backend(config)))
    assert "InternalServerException" in result["unmeasured"][0]["reason"]
    assert_no_secret("the result", repr(result))
    files = [p for p in Path(cache_dir).rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert_no_secret(str(path), path.read_bytes())


def test_no_region_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    config = judge_config(provider="bedrock", model=MODEL, max_concurrency=3)
    with pytest.raises(ValueError, match="AWS_REGION") as raised:
        make_backend(config)
    assert "\n" not in str(raised.value)


def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "boto3", None)
    with pytest.raises(ValueError) as raised:  # at configuration, before any request
        make_backend(judge_config(provider="bedrock", model=MODEL,
                                  base_url="http://127.0.0.1:9"))
    message = str(raised.value)
    assert "\n" not in message and "pip install 'judge-metrics[bedrock]'" in message


def test_an_unreachable_judge_fails_fast(cache_dir: str) -> None:
    """Nothing listens at the endpoint: after DEAD_AFTER failed attempts the rest of the batch
    is not sent (the RemoteBackend plumbing, fed by botocore's attempts)."""
    from conftest import free_port

    from shared.engine.backends.remote import DEAD_AFTER

    config = judge_config(provider="bedrock", model=MODEL, max_retries=DEAD_AFTER,
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
