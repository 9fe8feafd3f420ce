"""A stand-in for the Gemini API on 127.0.0.1, answering with a real model.

Written from Google's public Gemini API reference (``models.generateContent``), not from any
client: it serves ``POST /v1beta/models/{model}:generateContent`` with the key in the
``x-goog-api-key`` header (or the ``key`` query parameter), reads the request's ``contents``,
``systemInstruction`` and ``generationConfig`` (``temperature``, ``topP``, ``seed``,
``maxOutputTokens``, ``responseMimeType`` with ``responseJsonSchema`` or ``responseSchema``,
``responseLogprobs`` and ``logprobs``, which the reference bounds to [0, 20],
``thinkingConfig.thinkingLevel``), and translates the
request into an OpenAI chat completion for an upstream OpenAI-compatible server (the real
llama.cpp server of the ``llama_server`` fixture). The upstream answer comes back as a
``GenerateContentResponse``: ``candidates[0].content.parts[0].text``, ``finishReason``,
``logprobsResult`` (``topCandidates[i].candidates[j]`` with ``token`` and ``logProbability``, and
``chosenCandidates``), ``usageMetadata`` (``promptTokenCount``, ``candidatesTokenCount``,
``totalTokenCount``), ``modelVersion``, ``responseId``.

Errors have the reference's shape, ``{"error": {"code", "message", "status", "details"}}``:
a wrong or missing key is 400 ``INVALID_ARGUMENT``, and so is ``responseLogprobs`` to a model
named in ``no_logprobs`` (as for a model that does not return them); ``fail(n, 429)`` makes the
next ``n`` requests 429 ``RESOURCE_EXHAUSTED`` carrying a ``google.rpc.RetryInfo``
``retryDelay`` (and a ``Retry-After`` header), ``fail(n, 503)`` 503 ``UNAVAILABLE``. Every
request is recorded in ``seen`` (path, headers, body, status), the faults too.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlparse

from .translating import LocalServer, Reply, chat_completion

ROUTE = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")
MAX_LOGPROBS = 20  # the reference: "The number must be in the range of [0, 20]"
RETRY_DELAY_SECONDS = 1
STATUS_NAMES = {400: "INVALID_ARGUMENT", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED",
                500: "INTERNAL", 503: "UNAVAILABLE"}
THINKING_LEVELS = ("MINIMAL", "LOW", "MEDIUM", "HIGH")
FINISH_REASONS = {"stop": "STOP", "length": "MAX_TOKENS"}


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int


class FakeGemini(LocalServer):
    """``with FakeGemini(upstream_base_url, api_key) as server: server.url`` (the root a Gemini
    client takes as its base URL)."""

    content_type = "application/json; charset=UTF-8"

    def __init__(self, upstream: str, api_key: str, upstream_model: str = "smollm2",
                 no_logprobs: frozenset[str] = frozenset()) -> None:
        self.upstream = upstream.rstrip("/")
        self.no_logprobs = no_logprobs  # models that refuse responseLogprobs
        self.api_key = api_key
        self.upstream_model = upstream_model
        self.seen: list[Seen] = []
        self._faults: list[int] = []
        self._lock = threading.Lock()

    # -- control

    def fail(self, times: int, status: int = 429) -> None:
        """Answer the next ``times`` requests with the error ``status``."""
        with self._lock:
            self._faults.extend([status] * times)

    @property
    def count(self) -> int:
        return len(self.seen)

    # -- one request

    def respond(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Reply:
        parsed = urlparse(target)
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {}
        reply = self.answer(parsed.path, parsed.query, headers, body)
        with self._lock:
            self.seen.append(Seen(parsed.path, headers, body, reply.status))
        return reply

    def answer(self, path: str, query: str, headers: dict[str, str],
               body: dict[str, Any]) -> Reply:
        key = headers.get("x-goog-api-key") or (parse_qs(query).get("key") or [None])[0]
        if key != self.api_key:
            return error(400, "API key not valid. Please pass a valid API key.")
        route = ROUTE.match(path)
        if route is None:
            return error(404, f"Method not found: {path}")
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
        if fault is not None:
            return error(fault, "Resource has been exhausted (e.g. check quota)."
                         if fault == 429 else "The service is currently unavailable.")
        config = body.get("generationConfig") or {}
        if route.group(1) in self.no_logprobs and config.get("responseLogprobs"):
            return error(400, f"Logprobs is not enabled for models/{route.group(1)}")
        try:
            chat = to_chat_completion(body, self.upstream_model)
        except ValueError as exc:
            return error(400, str(exc))
        completion = chat_completion(self.upstream, chat)
        return Reply(200, to_generate_content_response(completion, route.group(1)))


def error(status: int, message: str) -> Reply:
    """The reference's error body; a 429 says when to retry (``RetryInfo`` and
    ``Retry-After``)."""
    details: list[dict[str, Any]] = []
    extra: dict[str, str] = {}
    if status == 429:
        details.append({"@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": f"{RETRY_DELAY_SECONDS}s"})
        extra["Retry-After"] = str(RETRY_DELAY_SECONDS)
    return Reply(status, {"error": {"code": status, "message": message,
                                    "status": STATUS_NAMES.get(status, "UNKNOWN"),
                                    "details": details}}, extra)


def _text_of(content: dict[str, Any]) -> str:
    return "".join(part.get("text", "") for part in content.get("parts") or [])


def to_chat_completion(body: dict[str, Any], model: str) -> dict[str, Any]:
    """The OpenAI chat completion request a ``GenerateContentRequest`` asks for."""
    messages = []
    system = body.get("systemInstruction")
    if system:
        messages.append({"role": "system", "content": _text_of(system)})
    for content in body.get("contents") or []:
        role = {"user": "user", "model": "assistant"}.get(content.get("role", "user"))
        if role is None:
            raise ValueError(f"Please use a valid role: user, model. Got {content.get('role')}")
        messages.append({"role": role, "content": _text_of(content)})
    if not messages or messages[-1]["role"] != "user":
        raise ValueError("contents must end with a user turn")
    config = body.get("generationConfig") or {}
    chat: dict[str, Any] = {"model": model, "messages": messages}
    for ours, theirs in (("temperature", "temperature"), ("topP", "top_p"), ("seed", "seed"),
                         ("maxOutputTokens", "max_tokens")):
        if ours in config:
            chat[theirs] = config[ours]
    schema = config.get("responseJsonSchema", config.get("responseSchema"))
    if "responseJsonSchema" in config and "responseSchema" in config:
        raise ValueError("responseJsonSchema and responseSchema cannot both be set")
    if schema is not None:
        if config.get("responseMimeType") != "application/json":
            raise ValueError("a response schema needs responseMimeType application/json")
        chat["response_format"] = {"type": "json_object", "schema": schema}
    elif config.get("responseMimeType") == "application/json":
        chat["response_format"] = {"type": "json_object"}
    # protobuf's JSON mapping takes a field by its lowerCamelCase name or its proto name
    thinking_config = config.get("thinkingConfig") or config.get("thinking_config") or {}
    thinking = thinking_config.get("thinkingLevel", thinking_config.get("thinking_level"))
    if thinking is not None and thinking not in THINKING_LEVELS:
        raise ValueError(f"Invalid value at 'generation_config.thinking_config.thinking_level' "
                         f"({thinking!r})")  # the stand-in model does not think either way
    if "logprobs" in config and not config.get("responseLogprobs"):
        raise ValueError("logprobs is only valid if responseLogprobs is true")
    if config.get("responseLogprobs"):
        top = config.get("logprobs", 0)
        if not isinstance(top, int) or not 0 <= top <= MAX_LOGPROBS:
            raise ValueError(f"logprobs must be in the range [0, {MAX_LOGPROBS}], got {top}")
        chat["logprobs"] = True
        chat["top_logprobs"] = top
    return chat


def to_generate_content_response(completion: dict[str, Any], model: str) -> dict[str, Any]:
    """The ``GenerateContentResponse`` of an OpenAI chat completion."""
    choice = completion["choices"][0]
    candidate: dict[str, Any] = {
        "content": {"parts": [{"text": choice["message"].get("content") or ""}],
                    "role": "model"},
        "finishReason": FINISH_REASONS.get(choice.get("finish_reason"), "OTHER"),
        "index": 0,
    }
    steps = (choice.get("logprobs") or {}).get("content")
    if steps:
        candidate["logprobsResult"] = {
            "topCandidates": [{"candidates": [
                {"token": entry["token"], "logProbability": entry["logprob"]}
                for entry in step.get("top_logprobs") or []]} for step in steps],
            "chosenCandidates": [{"token": step["token"], "logProbability": step["logprob"]}
                                 for step in steps],
            "logProbabilitySum": sum(step["logprob"] for step in steps),
        }
        candidate["avgLogprobs"] = candidate["logprobsResult"]["logProbabilitySum"] / len(steps)
    usage = completion.get("usage") or {}
    prompt, answer = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
    return {
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": answer,
                          "totalTokenCount": prompt + answer,
                          "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]},
        "modelVersion": model,
        "responseId": uuid.uuid4().hex[:22],
    }
