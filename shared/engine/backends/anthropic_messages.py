"""Judge backend for Anthropic's Messages API (``POST /v1/messages``), through the official
``anthropic`` SDK (the ``anthropic`` extra).

- Structured answers come from a forced tool call: the schema is the input schema of the one
  tool offered (``tools=[{"name", "input_schema"}]``, ``tool_choice={"type": "tool", "name"}``)
  and the answer is that ``tool_use`` block's ``input``, written back as JSON text for the
  runner to validate. The tool is not ``strict``, so the decoding does not enforce the schema
  (``Outcome.constrained`` is False): an answer that breaks it gets the runner's one repair.
- The Messages API returns no log-probabilities: :meth:`AnthropicBackend.yes_no` raises
  :class:`~.base.LogprobsUnavailable` before any request, and label requests (g_eval, pairwise)
  read the label the judge writes (``method`` "sampled"), as the OpenAI-compatible backend does
  for a model without log-probabilities.
- No sampling parameters are sent: the API version the SDK speaks takes no ``temperature``,
  ``top_p`` or ``top_k`` (it refuses them, even at their defaults).
- Token usage: ``usage.input_tokens``/``output_tokens``; prompt-cache reads
  (``cache_read_input_tokens``) and writes (``cache_creation_input_tokens``) are counted
  outside ``input_tokens`` by the API and are added to the prompt tokens here.
- Retries (529 ``overloaded_error``, other 5xx, 408/409, connection errors, time-outs) and the
  per-request time-out are the SDK's own ``max_retries``/``timeout``; a 429 is the rate
  limiter's (:mod:`.rate_limit`), which reads ``anthropic-ratelimit-*`` and ``retry-after``.
  The plumbing (event loop, concurrency bound, dead judge) is :class:`.remote.RemoteBackend`'s.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...base.types import JudgeRequest, Outcome, TokenUsage
from .base import SAMPLED_MAX_TOKENS, ResultCallback
from .remote import MalformedResponse, require_sdk
from .written import WrittenAnswerBackend, usage_with_cache

if TYPE_CHECKING:
    from ..config import JudgeConfig

#: The name of the one tool a structured request offers and forces.
TOOL_NAME = "judge_answer"


def usage_of(message: Any) -> TokenUsage:
    """A Messages API reply's token usage; cache reads and writes count as prompt tokens (the
    API reports them apart from ``input_tokens``)."""
    usage = getattr(message, "usage", None)
    return usage_with_cache(lambda name: getattr(usage, name, None), "input_tokens",
                            "output_tokens", "cache_read_input_tokens",
                            "cache_creation_input_tokens")


def _blocks(message: Any) -> list[Any]:
    content = getattr(message, "content", None)
    if getattr(message, "type", "message") != "message" or not isinstance(content, list):
        raise MalformedResponse(f"not a message (got {type(message).__name__})")
    return content


def message_text(message: Any) -> str:
    """The text blocks of a reply, joined; :class:`MalformedResponse` when it has none."""
    texts = [getattr(block, "text", "") for block in _blocks(message)
             if getattr(block, "type", None) == "text"]
    if not any(texts):
        raise MalformedResponse(
            f"no answer text (stop_reason={getattr(message, 'stop_reason', None)!r})")
    return "".join(texts)


def tool_input(message: Any, name: str = TOOL_NAME) -> str:
    """The ``input`` of the reply's ``tool_use`` block for tool ``name``, as JSON text."""
    for block in _blocks(message):
        if getattr(block, "type", None) == "tool_use" and getattr(block, "name", None) == name:
            value = getattr(block, "input", None)
            if not isinstance(value, dict):
                raise MalformedResponse(f"the {name} tool call's input is not an object")
            return json.dumps(value, ensure_ascii=False)
    raise MalformedResponse(f"no {name} tool call in the answer "
                            f"(stop_reason={getattr(message, 'stop_reason', None)!r})")


def split_system(request: JudgeRequest) -> tuple[str | None, list[dict[str, str]]]:
    """The request's system text (the Messages API takes it apart from the turns) and its
    user/assistant turns."""
    system = [content for role, content in request.messages if role == "system"]
    turns = [{"role": role, "content": content} for role, content in request.messages
             if role != "system"]
    return ("\n\n".join(system) if system else None), turns


class AnthropicBackend(WrittenAnswerBackend):
    """A Claude model behind Anthropic's Messages API."""

    kind = "anthropic-messages"  # the protocol (a call-cache key part)
    constrained = False
    read_text = staticmethod(message_text)
    read_usage = staticmethod(usage_of)

    def __init__(self, config: JudgeConfig) -> None:
        anthropic = require_sdk(config.provider)
        super().__init__(config)
        self._client = anthropic.AsyncAnthropic(
            api_key=config.resolved_api_key(),
            base_url=self.base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=self.http_client(anthropic.DefaultAsyncHttpxClient),
        )
        if config.batch:
            from .anthropic_batches import AnthropicBatches

            self.use_batch_api(AnthropicBatches(self._client))

    def __repr__(self) -> str:
        return (f"AnthropicBackend(provider={self.provider!r}, model={self.model!r}, "
                f"host={self.host!r})")

    def uses_api_key(self, api_key: str | None) -> bool:
        import hmac

        return hmac.compare_digest(str(self._client.api_key or "").encode("utf-8"),
                                   (api_key or "").encode("utf-8"))

    def secrets(self) -> list[str]:
        return [str(self._client.api_key or "")]

    def sampling_params(self, operation: str) -> dict[str, Any]:
        if operation == "yes_no":
            return {"logprobs": False}
        if operation == "labels":
            return {"written": True, "max_tokens": SAMPLED_MAX_TOKENS}
        if operation == "structured":
            return {"tool_choice": "tool"}
        if operation == "label_samples":  # the API's own sampling: temperature 1, no seed
            return {"written": True, "max_tokens": SAMPLED_MAX_TOKENS}
        raise ValueError(f"unknown operation {operation!r}")

    # -- operations (yes_no and the labels: WrittenAnswerBackend's)

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        tool = {"name": TOOL_NAME, "description": "Give the answer.",
                "input_schema": json_schema}
        choice = {"type": "tool", "name": TOOL_NAME}

        async def one(request: JudgeRequest) -> Outcome:
            return await self._answer(
                lambda: self._create(request, max_tokens=max_tokens, tools=[tool],
                                     tool_choice=choice),
                lambda message: Outcome(value=tool_input(message), usage=usage_of(message),
                                        constrained=False),
                usage_of)

        self._run(requests, one, on_result, probe_first=False)

    def close(self) -> None:
        client = self._client
        self._close_quietly(lambda: client.close())

    # -- the request and its errors

    def message_params(self, request: JudgeRequest, **params: Any) -> dict[str, Any]:
        """The Messages API parameters of ``request`` (what a Message Batches request's
        ``params`` holds too): the model, the system text, the turns and ``params``."""
        system, turns = split_system(request)
        if system is not None:  # the fixed instructions: a prompt-cache breakpoint after them
            params["system"] = [{"type": "text", "text": system,
                                 "cache_control": {"type": "ephemeral"}}]
        return {"model": self.model, "messages": turns, **params}

    async def _write(self, request: JudgeRequest, sampled: bool) -> Any:
        """A short written answer; sampled or not, at the API's own sampling (temperature 1;
        it takes no seed and, in the version the SDK speaks, no temperature)."""
        return await self._create(request, max_tokens=SAMPLED_MAX_TOKENS)

    async def _create(self, request: JudgeRequest, **params: Any) -> Any:
        if self.batcher is not None:
            return await self.batcher.ask(self.message_params(request, **params))
        return await self._client.messages.create(**self.message_params(request, **params))

    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request: the HTTP status and the API's own
        error type and message where it sent them."""
        import anthropic

        if isinstance(exc, anthropic.APIStatusError):
            body = getattr(exc, "body", None)
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, dict) and error.get("message"):
                detail = f"{error.get('type', 'error')}: {error['message']}"
            else:
                detail = str(exc.message)
            text = f"HTTP {exc.status_code} from {self.host}: {detail}"
        else:
            text = self._sdk_failure(exc, anthropic.APITimeoutError,
                                     anthropic.APIConnectionError)
        return self._redact(" ".join(text.split()))
