"""Cached prompt tokens read from usage payloads shaped as each provider reports them, and
priced at the provider's cached-input rate (a cache write at 1.25x the input price)."""

from __future__ import annotations

import pytest

from shared.base.types import JudgeRequest
from shared.engine.backends import anthropic_messages, bedrock, openai_responses
from shared.engine.backends.registry import PROVIDERS
from shared.engine.config import judge_config
from shared.engine.pricing import CACHE_WRITE_FACTOR, cost_of, model_price
from shared.engine.runner import get_judge


def test_openai_prompt_tokens_details() -> None:
    from openai.types.chat import ChatCompletion

    reply = ChatCompletion.model_validate({
        "id": "c", "object": "chat.completion", "created": 0, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "Yes"}}],
        "usage": {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                  "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0}}})
    usage = openai_responses.usage_of(reply)
    assert (usage.prompt_tokens, usage.cached_tokens) == (2006, 1920)
    # a server that reports no details (llama.cpp) caches nothing
    bare = ChatCompletion.model_validate({**reply.model_dump(), "usage": {
        "prompt_tokens": 10, "completion_tokens": 1, "total_tokens": 11}})
    assert openai_responses.usage_of(bare).cached_tokens == 0


def test_anthropic_cache_read_and_creation() -> None:
    from anthropic.types import Message

    reply = Message.model_validate({
        "id": "m", "type": "message", "role": "assistant", "model": "claude-haiku-4-5",
        "content": [{"type": "text", "text": "Yes"}], "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 21, "output_tokens": 5, "cache_read_input_tokens": 1800,
                  "cache_creation_input_tokens": 200}})
    usage = anthropic_messages.usage_of(reply)
    assert usage.prompt_tokens == 21 + 1800 + 200
    assert (usage.cached_tokens, usage.cache_write_tokens) == (1800, 200)


def test_bedrock_converse_cache_counts() -> None:
    usage = bedrock.usage_of({"usage": {"inputTokens": 30, "outputTokens": 4, "totalTokens": 34,
                                        "cacheReadInputTokens": 1000,
                                        "cacheWriteInputTokens": 50}})
    assert (usage.prompt_tokens, usage.cached_tokens, usage.cache_write_tokens) == (
        1080, 1000, 50)


@pytest.mark.parametrize(("provider", "model"), [("openai", "gpt-4o-mini"),
                                                 ("anthropic", "claude-haiku-4-5"),
                                                 ("gemini", "gemini-3.5-flash")])
def test_cached_tokens_are_priced_at_the_cached_rate(provider: str, model: str) -> None:
    price = model_price(provider, model)
    assert price is not None and price.cached_input is not None
    cost = cost_of(provider, model, 2000, 100, cached_tokens=1500, cache_write_tokens=200)
    reference = (300 * price.input + 1500 * price.cached_input
                 + 200 * price.input * CACHE_WRITE_FACTOR + 100 * price.output) / 1e6
    assert cost == pytest.approx(reference)
    assert cost < cost_of(provider, model, 2000, 100) or price.cached_input >= price.input
    batch = cost_of(provider, model, 2000, 100, cached_tokens=1500, batch=True)
    assert batch == pytest.approx(
        cost_of(provider, model, 2000, 100, cached_tokens=1500)
        * PROVIDERS[provider].capabilities.batch_discount)


def test_the_judge_counts_cached_tokens_and_the_saving() -> None:
    from shared.base.types import TokenUsage

    judge = get_judge(judge_config(provider="openai", api_key="sk-test", model="gpt-4o-mini"))
    judge.count_call(TokenUsage(2000, 10, cached_tokens=1024))
    assert judge.usage.as_dict()["cached_prompt_tokens"] == 1024
    price = model_price("openai", "gpt-4o-mini")
    assert judge.cache_saving == pytest.approx(1024 * (price.input - price.cached_input) / 1e6)


def test_anthropic_marks_the_fixed_prefix_for_the_cache() -> None:
    backend = anthropic_messages.AnthropicBackend(
        judge_config(provider="anthropic", api_key="sk-ant-x", base_url="http://127.0.0.1:9"))
    params = backend.message_params(JudgeRequest(
        (("system", "fixed instructions"), ("user", "row text")), "p"), max_tokens=5)
    assert params["system"] == [{"type": "text", "text": "fixed instructions",
                                 "cache_control": {"type": "ephemeral"}}]
    assert params["messages"] == [{"role": "user", "content": "row text"}]


def test_gemini_cached_content_token_count() -> None:
    from google.genai import types

    from shared.engine.backends import gemini_responses

    reply = types.GenerateContentResponse.model_validate({"usageMetadata": {
        "promptTokenCount": 1500, "candidatesTokenCount": 12, "cachedContentTokenCount": 1024,
        "totalTokenCount": 1512}})
    usage = gemini_responses.usage_of(reply)
    assert (usage.prompt_tokens, usage.cached_tokens) == (1500, 1024)
    judge = get_judge(judge_config(provider="openai", api_key="sk-test", model="gpt-4o-mini"))
    judge.count_call(usage)
    assert judge.usage.as_dict()["cached_prompt_tokens"] == 1024
