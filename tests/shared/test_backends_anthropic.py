"""The Anthropic backend (the official ``anthropic`` SDK) against a fake of the Messages API
(``tests/fakes/anthropic.py``, written from Anthropic's public reference) that answers through
the real llama.cpp server (the ``llama_server`` fixture): the checks every native protocol
passes (``tests/native_checks.py``), and what is Anthropic's own."""

from __future__ import annotations

import pytest
from backend_cases import STATEMENTS, ask, collect
from fakes.anthropic import FakeAnthropic
from fakes.translating import Received
from native_checks import NativeProtocolChecks

from shared.engine.backends.pool import make_backend, release_backend
from shared.engine.config import judge_config

pytestmark = pytest.mark.server

KEY = "sk-ant-test-DO-NOT-LEAK-7c1e93"


class TestMessagesAPI(NativeProtocolChecks):
    settings = {"provider": "anthropic", "api_key": KEY, "model": "claude-haiku-4-5"}
    secrets = (KEY, KEY[8:])
    price = (1.00, 5.00)
    retried = ("529", "429")
    retry_waits = True  # the 429's retry-after: 1
    unsaved = ("529", "529", "overloaded_error")
    echoing = ("echo_key:401", "401", "authentication_error")
    sdk = "anthropic"
    extra = "anthropic"

    def start(self, upstream: str) -> FakeAnthropic:
        return FakeAnthropic(upstream, KEY)

    def check_structured(self, seen: Received) -> None:
        """The version header, the key, one forced tool, no sampling parameters."""
        assert seen.path == "/v1/messages" and seen.headers["anthropic-version"]
        body = seen.body
        assert body["model"] == "claude-haiku-4-5" and body["max_tokens"] >= 1
        assert [t["name"] for t in body["tools"]] == [body["tool_choice"]["name"]]
        assert body["tool_choice"]["type"] == "tool"
        assert body["tools"][0]["input_schema"]["type"] == "object"
        assert not {"temperature", "top_p", "top_k"} & set(body)
        assert all(turn["role"] in ("user", "assistant") for turn in body["messages"])

    def check_written(self, seen: Received) -> None:
        assert "tools" not in seen.body and seen.body["max_tokens"] == 16

    def check_sampled(self, seen: Received) -> None:
        """Short written answers, no sampling parameter."""
        assert seen.body["max_tokens"] == 16 and "temperature" not in seen.body

    def check_credential(self, seen: Received) -> None:
        assert KEY in (seen.headers.get("x-api-key", ""),
                       seen.headers.get("authorization", "")[7:])

    def test_a_wrong_key_is_an_authentication_error(self, fake: FakeAnthropic) -> None:
        config = judge_config(**{**self.options(fake, "unused"),
                                 "api_key": "sk-ant-wrong-key-000", "max_retries": 0})
        judge = make_backend(config)
        try:
            results = collect(judge.structured, [ask("Say hi as JSON.")], STATEMENTS, 16)
        finally:
            release_backend(config)
        assert not results[0].ok and "HTTP 401" in results[0].error
        assert "sk-ant-wrong-key-000" not in results[0].error
