"""A fake of Anthropic's Messages API (``POST /v1/messages``), written from Anthropic's public
API reference, in front of a real OpenAI-compatible server.

What it checks, as the API does: the ``anthropic-version`` header; the key, in ``x-api-key``
or ``Authorization: Bearer`` (the current SDKs send the latter); ``model``, ``max_tokens`` and
``messages`` (``user``/``assistant`` turns, text content as a string or text blocks), a
top-level ``system`` (a string or text blocks), ``tools`` (``name``, an object
``input_schema``) and ``tool_choice`` (``auto``, ``any``, ``tool`` with a known ``name``,
``none``); with API version ``2026-10-21`` it refuses ``temperature``, ``top_p`` and ``top_k``.
Errors are Anthropic's: ``{"type": "error", "error": {"type": ..., "message": ...}}`` with
400 ``invalid_request_error``, 401 ``authentication_error``, 429 ``rate_limit_error`` (with
``retry-after``), 500 ``api_error`` and 529 ``overloaded_error``.

The translation: the system text and turns become chat messages; a forced tool (``tool_choice``
``tool``, or ``any`` with one tool) becomes the upstream server's JSON-schema constraint
(``response_format`` ``{"type": "json_object", "schema": input_schema}``), and its answer the
``input`` of a ``tool_use`` block (``stop_reason`` ``tool_use``); text answers are a ``text``
block (``end_turn``, or ``max_tokens`` when cut). The stand-in model decodes greedily
(``temperature`` 0 upstream): the Messages API version the SDK speaks takes no sampling
parameters, how a model decodes is the provider's choice, and greedy decoding makes its answers
comparable with a temperature-0 OpenAI-compatible request to the same server. Usage is the
upstream ``prompt_tokens``/``completion_tokens`` as ``input_tokens``/``output_tokens``.
"""

from __future__ import annotations

import uuid
from typing import Any

from fakes.translating import Completion, Invalid, Reply, TranslatingFake, chat_messages

NEW_VERSION = "2026-10-21"
VERSIONS = ("2023-01-01", "2023-06-01", NEW_VERSION)
SAMPLING = ("temperature", "top_p", "top_k")


def error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"type": "error", "error": {"type": kind, "message": message}},
                 {"request-id": f"req_{uuid.uuid4().hex[:24]}", **(headers or {})})


def _text(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list) or not content:
        raise Invalid(f"{where}: content must be a string or a non-empty list of blocks")
    parts = []
    for block in content:
        if not isinstance(block, dict) or block.get("type") != "text" \
                or not isinstance(block.get("text"), str):
            raise Invalid(f"{where}: only text blocks are supported here")
        parts.append(block["text"])
    return "".join(parts)


class FakeAnthropic(TranslatingFake):
    def __init__(self, upstream: str, api_key: str, upstream_model: str = "smollm2",
                 faults: tuple[str, ...] = ()) -> None:
        super().__init__(upstream, faults)
        self.api_key = api_key
        self.upstream_model = upstream_model

    def fault_reply(self, fault: str) -> Reply:
        if fault == "529":
            return error(529, "overloaded_error", "Overloaded")
        if fault == "429":
            return error(429, "rate_limit_error", "Number of request tokens has exceeded your "
                         "per-minute rate limit", {"retry-after": "1"})
        if fault == "500":
            return error(500, "api_error", "Internal server error")
        if fault == "echo_key:401":  # a server that quotes the credential back
            return error(401, "authentication_error", f"invalid x-api-key: {self.api_key}")
        raise ValueError(f"unknown fault {fault!r}")

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        if path.split("?")[0] != "/v1/messages":
            return error(404, "not_found_error", f"Not found: {path}")
        version = headers.get("anthropic-version")
        if not version:
            return error(400, "invalid_request_error", "anthropic-version: header is required")
        if version not in VERSIONS:
            return error(400, "invalid_request_error", f"anthropic-version: {version!r} is not "
                         "a valid version")
        bearer = headers.get("authorization", "")
        key = headers.get("x-api-key") or (bearer[7:] if bearer.lower().startswith("bearer ")
                                           else None)
        if key != self.api_key:
            return error(401, "authentication_error", "invalid x-api-key")
        try:
            chat, forced = self.translate(body, version)
        except Invalid as invalid:
            return error(400, "invalid_request_error", str(invalid))
        completion = self.chat(chat)
        return Reply(200, self.message(body, completion, forced),
                     {"request-id": f"req_{uuid.uuid4().hex[:24]}"})

    def translate(self, body: Any, version: str) -> tuple[dict[str, Any], str | None]:
        """The upstream chat request for a Messages request, and the forced tool's name."""
        if not isinstance(body, dict):
            raise Invalid("the request body must be a JSON object")
        if not isinstance(body.get("model"), str) or not body["model"]:
            raise Invalid("model: Field required")
        max_tokens = body.get("max_tokens")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise Invalid("max_tokens: Field required (an integer >= 1)")
        if version == NEW_VERSION:
            for name in SAMPLING:
                if name in body:
                    raise Invalid(f"{name}: Extra inputs are not permitted")
        system = _text(body["system"], "system") if "system" in body else None
        messages = chat_messages(system, body.get("messages"), _text)
        tools = body.get("tools") or []
        by_name = {}
        for index, tool in enumerate(tools):
            schema = tool.get("input_schema") if isinstance(tool, dict) else None
            if not isinstance(tool.get("name"), str) or not isinstance(schema, dict) \
                    or schema.get("type") != "object":
                raise Invalid(f"tools.{index}: a name and an object input_schema are required")
            by_name[tool["name"]] = schema
        choice = body.get("tool_choice") or {"type": "auto"}
        forced = None
        if choice.get("type") == "tool":
            if choice.get("name") not in by_name:
                raise Invalid("tool_choice.name: no tool of that name in tools")
            forced = choice["name"]
        elif choice.get("type") == "any" and len(by_name) == 1:
            forced = next(iter(by_name))
        elif choice.get("type") not in ("auto", "any", "none"):
            raise Invalid("tool_choice.type: must be auto, any, tool or none")
        chat: dict[str, Any] = {"model": self.upstream_model, "messages": messages,
                                "max_tokens": max_tokens, "temperature": 0}
        if forced is not None:
            chat["response_format"] = {"type": "json_object", "schema": by_name[forced]}
        return chat, forced

    def message(self, body: dict[str, Any], completion: dict[str, Any],
                forced: str | None) -> dict[str, Any]:
        answer = Completion(completion)
        if forced is not None:
            content = [{"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:24]}",
                        "name": forced, "input": answer.tool_input()}]
        else:
            content = [{"type": "text", "text": answer.text}]
        return {"id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                "model": body["model"], "content": content,
                "stop_reason": answer.stop_reason(forced), "stop_sequence": None,
                "usage": {"input_tokens": answer.prompt_tokens,
                          "output_tokens": answer.completion_tokens,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
