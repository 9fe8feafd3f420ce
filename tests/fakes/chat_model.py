"""A loopback chat model for the trace tests: an OpenAI-compatible ``POST /v1/chat/completions``
whose replies follow fixed rules, tool calls included, and that records every request body and
the message it answered with (``exchanges``), so a test checks the rows read from the traces
against what was really sent and received.

Rules: a request that offers tools and ends with a user message gets a ``get_weather`` call for
Paris; a request that ends with a tool result gets the weather sentence; any other request gets
the answer ``ANSWERS`` gives its last user message (``"I do not know."`` otherwise)."""

from __future__ import annotations

import json
import threading
from typing import Any

from fakes.translating import LocalServer, Reply

ANSWERS = {
    "What is the capital of France?": "Paris is the capital of France.",
    "When was the Eiffel Tower completed?": "The Eiffel Tower was completed in 1889.",
}
WEATHER = "It is sunny and 21 C in Paris."


def reply_to(body: dict[str, Any]) -> dict[str, Any]:
    last = body["messages"][-1]
    if body.get("tools") and last["role"] == "user":
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": "call_weather_1", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": "Paris"})}}]}
    if last["role"] == "tool":
        return {"role": "assistant", "content": WEATHER}
    question = next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")
    return {"role": "assistant", "content": ANSWERS.get(question, "I do not know.")}


class ChatModel(LocalServer):
    def __init__(self) -> None:
        self.exchanges: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self._lock = threading.Lock()

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        body = json.loads(raw)
        message = reply_to(body)
        with self._lock:
            self.exchanges.append((body, message))
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return Reply(200, {
            "id": f"chatcmpl-{len(self.exchanges)}", "object": "chat.completion", "created": 1,
            "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10 * len(body["messages"]), "completion_tokens": 7,
                      "total_tokens": 10 * len(body["messages"]) + 7}})

    @property
    def url(self) -> str:
        return f"{super().url}/v1"
