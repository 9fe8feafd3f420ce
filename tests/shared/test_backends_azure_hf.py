"""Azure OpenAI and Hugging Face Inference Providers, each against a local fake of its wire
format (written from the provider's public API reference: ``tests/fakes/``) in front of the
real llama.cpp server, with the official ``openai`` SDK as the client: the same numbers as the
plain OpenAI-compatible path to the same server, no request on a second run, and the key in no
output, log, cache file or repr."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import evaluate
import pytest
from fakes.azure_openai import FakeAzureOpenAI
from fakes.hf_router import FakeHFRouter

from shared import judge_config
from shared.engine.backends import azure_openai
from shared.engine.backends.registry import PROVIDERS
from shared.kit.registry import metric_path

pytestmark = pytest.mark.server

KEY = "azure-SECRET-0123456789abcdef"
TOKEN = "hf_SECRETtoken0123456789"
UPSTREAM_MODEL = "smollm2"
L3 = {"questions": ["What is the capital of France?", "How many legs does a spider have?"],
      "predictions": ["Paris", "Eight"], "references": ["Paris", "Six"]}
CR = {"questions": ["What is the capital of France?"],
      "contexts": [["Paris is the capital of France."]]}


@pytest.fixture(scope="module")
def metrics() -> dict[str, Any]:
    return {name: evaluate.load(metric_path(name)) for name in ("l3score", "context_relevance")}


def common(cache_dir: str) -> dict[str, Any]:
    return {"response_format": "json_object", "cache_dir": cache_dir, "max_retries": 0,
            "show_progress": False}


def scores(result: dict[str, Any]) -> list[Any]:
    assert result["unmeasured"] == [], result["unmeasured"]
    return result["scores"]


def reference(metrics: dict[str, Any], llama_server: str, name: str, inputs: dict[str, Any],
              cache_dir: str) -> list[Any]:
    """The metric's scores through the plain OpenAI-compatible path to the same server."""
    return scores(metrics[name].compute(
        **inputs, provider="openai-compatible", base_url=llama_server, model=UPSTREAM_MODEL,
        **common(cache_dir)))


def assert_nowhere(secret: str, *texts: str, folder: str) -> None:
    for text in texts:
        assert secret not in text
    files = [p for p in Path(folder).rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert secret.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("route", ["deployments", "v1"])
def test_azure_gives_the_openai_compatible_numbers(
        metrics: dict[str, Any], llama_server: str, tmp_path: Path, route: str,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
    monkeypatch.delenv("AZURE_OPENAI_ENDPOINT", raising=False)
    expected = {name: reference(metrics, llama_server, name, inputs, str(tmp_path / "ref"))
                for name, inputs in (("l3score", L3), ("context_relevance", CR))}
    cache = str(tmp_path / "azure")
    with FakeAzureOpenAI(llama_server, KEY, {"judge-deployment": UPSTREAM_MODEL}) as azure:
        base_url = azure.url + ("/openai/v1" if route == "v1" else "")
        options = {"provider": "azure", "base_url": base_url, "model": "judge-deployment",
                   **common(cache)}
        got = {name: metrics[name].compute(**inputs, **options)
               for name, inputs in (("l3score", L3), ("context_relevance", CR))}
        assert {name: scores(result) for name, result in got.items()} == expected
        sent = azure.count
        assert sent >= len(L3["questions"]) + len(CR["questions"])
        # what the SDK sent is Azure's wire format: the route, the api-version, the key header
        if route == "deployments":
            assert all(r.path.startswith("/openai/deployments/judge-deployment/chat/completions?")
                       for r in azure.received)
            assert set(azure.api_versions()) == {azure_openai.API_VERSION}
            assert all(r.headers.get("api-key") == KEY for r in azure.received)
        else:
            assert {r.path for r in azure.received} == {"/openai/v1/chat/completions"}
            assert all(r.body["model"] == "judge-deployment" for r in azure.received)
        # the max-tokens field is the provider's (OpenAI's reasoning models refuse max_tokens)
        field = PROVIDERS["azure"].capabilities.max_tokens_field
        assert all(field in r.body for r in azure.received)
        # a second run is answered from the cache
        again = {name: metrics[name].compute(**inputs, **options)
                 for name, inputs in (("l3score", L3), ("context_relevance", CR))}
        assert azure.count == sent
        assert {n: scores(r) for n, r in again.items()} == expected
    config = judge_config(provider="azure", base_url=base_url, model="judge-deployment")
    assert_nowhere(KEY, json.dumps(got, default=repr), json.dumps(again, default=repr),
                   caplog.text, repr(config), folder=cache)


def test_azure_api_version_and_endpoint_from_the_environment(
        llama_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        metrics: dict[str, Any]) -> None:
    with FakeAzureOpenAI(llama_server, KEY, {"d": UPSTREAM_MODEL}) as azure:
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", azure.url)
        monkeypatch.setenv("OPENAI_API_VERSION", "2025-04-01-preview")
        result = metrics["l3score"].compute(**{k: v[:1] for k, v in L3.items()},
                                            provider="azure", model="d", api_key=KEY,
                                            **common(str(tmp_path)))
        assert result["unmeasured"] == []
        assert azure.api_versions() == ["2025-04-01-preview"]


def test_azure_needs_its_endpoint_and_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="needs base_url.*AZURE_OPENAI_ENDPOINT"):
        judge_config(provider="azure", model="d", api_key=KEY)
    with pytest.raises(ValueError, match="AZURE_OPENAI_API_KEY"):
        judge_config(provider="azure", model="d", base_url="https://r.openai.azure.com")


def test_a_wrong_azure_key_is_a_fault_that_names_no_key(
        llama_server: str, tmp_path: Path, metrics: dict[str, Any]) -> None:
    wrong = "azure-WRONG-9876543210"
    with FakeAzureOpenAI(llama_server, KEY, {"d": UPSTREAM_MODEL}) as azure:
        result = metrics["context_relevance"].compute(
            **CR, provider="azure", base_url=azure.url, model="d", api_key=wrong,
            **common(str(tmp_path)))
        assert azure.count == 1
    reason = result["unmeasured"][0]["reason"]
    assert "401" in reason and wrong not in json.dumps(result, default=repr)


def test_huggingface_gives_the_openai_compatible_numbers(
        metrics: dict[str, Any], llama_server: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # as on a Space: nothing else is set
    expected = reference(metrics, llama_server, "l3score", L3, str(tmp_path / "ref"))
    hub_id = PROVIDERS["huggingface"].default_model
    cache = str(tmp_path / "hf")
    with FakeHFRouter(llama_server, TOKEN, {hub_id: UPSTREAM_MODEL}) as router:
        # the router's root is http://HOST:PORT/v1; the default model, the key from HF_TOKEN
        options = {"provider": "huggingface", "base_url": f"{router.url}/v1", **common(cache)}
        got = metrics["l3score"].compute(**L3, **options)
        assert scores(got) == expected
        sent = router.count
        assert sent == len(L3["questions"])
        assert all(r.headers["authorization"] == f"Bearer {TOKEN}" for r in router.received)
        assert all(r.body["model"] == hub_id for r in router.received)
        again = metrics["l3score"].compute(**L3, **options)
        assert router.count == sent and scores(again) == expected
    assert_nowhere(TOKEN, json.dumps(got, default=repr), caplog.text,
                   repr(judge_config(provider="huggingface")), folder=cache)


def test_huggingface_needs_no_setup_beyond_hf_token(monkeypatch: pytest.MonkeyPatch) -> None:
    from shared.demo.inputs import judge_hints, judge_options

    for name in PROVIDERS["huggingface"].key_env:
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="HF_TOKEN"):
        judge_config(provider="huggingface")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    config = judge_config(**judge_options({"provider": "huggingface", "api_key": ""}))
    assert config.resolved_api_key() == TOKEN
    assert config.resolved_base_url() == PROVIDERS["huggingface"].base_url
    assert config.resolved_model() == PROVIDERS["huggingface"].default_model
    assert "HF_TOKEN" in judge_hints("huggingface")["api_key"]
