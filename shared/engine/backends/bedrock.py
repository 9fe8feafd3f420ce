"""Judge backend for Amazon Bedrock's Converse API (``POST /model/{modelId}/converse``), through
``boto3``'s ``bedrock-runtime`` client (the ``bedrock`` extra).

- Credentials: the standard AWS chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/
  ``AWS_SESSION_TOKEN``, ``AWS_PROFILE``, an instance role, ...; requests are SigV4-signed) or a
  Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``, read by botocore itself; or the ``api_key``
  judge option, sent as ``Authorization: Bearer``). Region: ``AWS_REGION`` or
  ``AWS_DEFAULT_REGION`` (boto3's own lookup). ``base_url`` is boto3's ``endpoint_url``.
- Structured answers come from a forced tool: ``toolConfig`` offers one tool whose
  ``inputSchema`` is the answer's schema and ``toolChoice`` names it; the answer is that
  ``toolUse`` block's ``input``, written back as JSON text (not decode-time constrained:
  ``Outcome.constrained`` is False, so a broken answer gets the runner's one repair).
- Converse returns no log-probabilities: :meth:`BedrockBackend.yes_no` raises
  :class:`~.base.LogprobsUnavailable` before any request; label requests read the label the
  judge writes (``method`` "sampled").
- Greedy decoding is asked for with ``inferenceConfig.temperature`` 0.
- Retries: botocore's ``standard`` retry mode, ``total_max_attempts`` = ``max_retries`` + 1
  (throttling such as ``ThrottlingException``/429, 5xx, connection errors), with
  ``connect_timeout``/``read_timeout`` = ``timeout``.
- boto3 is synchronous: each call runs in a thread pool of ``max_concurrency`` workers, awaited
  from :class:`.remote.RemoteBackend`'s event loop (the concurrency bound, dead judge and
  redaction are its plumbing); every HTTP attempt's fate feeds the liveness count through
  botocore's ``needs-retry`` event.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any

from ...base.types import JudgeRequest, Outcome, TokenUsage
from .base import SAMPLED_MAX_TOKENS, ResultCallback
from .openai_transport import event_loop
from .remote import MalformedResponse, require_sdk
from .written import WrittenAnswerBackend, usage_with_cache

if TYPE_CHECKING:
    from ..config import JudgeConfig

#: The name of the one tool a structured request offers and forces.
TOOL_NAME = "judge_answer"
_EVENT = "bedrock-runtime.Converse"


def usage_of(response: Any) -> TokenUsage:
    """A Converse reply's token usage; cache reads and writes count as prompt tokens (Converse
    reports them apart from ``inputTokens``)."""
    usage = response.get("usage") if isinstance(response, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    return usage_with_cache(lambda name: usage.get(name, 0), "inputTokens", "outputTokens",
                            "cacheReadInputTokens", "cacheWriteInputTokens")


def _blocks(response: Any) -> list[Any]:
    output = response.get("output") if isinstance(response, dict) else None
    message = output.get("message") if isinstance(output, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        raise MalformedResponse("not a Converse answer (no output.message.content)")
    return [block for block in content if isinstance(block, dict)]


def message_text(response: Any) -> str:
    texts = [block["text"] for block in _blocks(response) if isinstance(block.get("text"), str)]
    if not any(texts):
        raise MalformedResponse(f"no answer text (stopReason={response.get('stopReason')!r})")
    return "".join(texts)


def tool_input(response: Any, name: str = TOOL_NAME) -> str:
    """The ``input`` of the reply's ``toolUse`` block for tool ``name``, as JSON text."""
    for block in _blocks(response):
        use = block.get("toolUse")
        if isinstance(use, dict) and use.get("name") == name:
            if not isinstance(use.get("input"), dict):
                raise MalformedResponse(f"the {name} tool call's input is not an object")
            return json.dumps(use["input"], ensure_ascii=False)
    raise MalformedResponse(
        f"no {name} tool call in the answer (stopReason={response.get('stopReason')!r})")


def converse_messages(request: JudgeRequest) -> tuple[list[dict[str, str]],
                                                      list[dict[str, Any]]]:
    """The request's ``system`` blocks and its user/assistant ``messages``, Converse-shaped."""
    system = [{"text": content} for role, content in request.messages if role == "system"]
    turns = [{"role": role, "content": [{"text": content}]}
             for role, content in request.messages if role != "system"]
    return system, turns


class BedrockBackend(WrittenAnswerBackend):
    """A model behind Amazon Bedrock's Converse API."""

    kind = "bedrock-converse"  # the protocol (a call-cache key part)
    constrained = False
    read_text = staticmethod(message_text)
    read_usage = staticmethod(usage_of)

    def __init__(self, config: JudgeConfig) -> None:
        boto3 = require_sdk(config.provider)
        import botocore.exceptions
        from botocore.config import Config

        super().__init__(config)
        self._api_key = config.api_key or None
        settings = Config(
            retries={"mode": "standard", "total_max_attempts": self.max_retries + 1},
            connect_timeout=self.timeout, read_timeout=self.timeout,
            max_pool_connections=self.max_concurrency,
            **({"signature_version": botocore.UNSIGNED} if self._api_key else {}))
        self._session = boto3.session.Session()
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or None
        try:
            self._client = self._session.client("bedrock-runtime", region_name=region,
                                                endpoint_url=self.base_url, config=settings)
        except botocore.exceptions.NoRegionError:
            raise ValueError(f"provider={config.provider!r} needs an AWS region: set AWS_REGION "
                             "(or AWS_DEFAULT_REGION)") from None
        self.region = self._client.meta.region_name
        if not self.host:
            self.host = self._client.meta.endpoint_url.split("://", 1)[-1].rstrip("/")
        events = self._client.meta.events
        events.register_first(f"needs-retry.{_EVENT}", self._attempted)
        if self._api_key:
            events.register(f"before-send.{_EVENT}", self._bearer)
        self._pool = ThreadPoolExecutor(max_workers=self.max_concurrency,
                                        thread_name_prefix="judge-metrics-bedrock")

    def __repr__(self) -> str:
        return (f"BedrockBackend(provider={self.provider!r}, model={self.model!r}, "
                f"region={self.region!r}, host={self.host!r})")

    def uses_api_key(self, api_key: str | None) -> bool:
        import hmac

        return hmac.compare_digest((self._api_key or "").encode("utf-8"),
                                   (api_key or "").encode("utf-8"))

    def secrets(self) -> list[str]:
        found = [self._api_key or ""]
        credentials = self._session.get_credentials()
        if credentials is not None:
            frozen = credentials.get_frozen_credentials()
            found += [frozen.secret_key or "", frozen.token or "", frozen.access_key or ""]
        return found

    def sampling_params(self, operation: str) -> dict[str, Any]:
        if operation == "yes_no":
            return {"logprobs": False}
        if operation == "labels":
            return {"temperature": 0, "written": True, self.max_tokens_field: SAMPLED_MAX_TOKENS}
        if operation == "structured":
            return {"temperature": 0, "toolChoice": "tool"}
        if operation == "label_samples":  # no seed in the Converse API
            return {"temperature": 1, "topP": 1, "written": True,
                    self.max_tokens_field: SAMPLED_MAX_TOKENS}
        raise ValueError(f"unknown operation {operation!r}")

    # -- operations (yes_no and the labels: WrittenAnswerBackend's)

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        tools = {"tools": [{"toolSpec": {"name": TOOL_NAME, "description": "Give the answer.",
                                         "inputSchema": {"json": json_schema}}}],
                 "toolChoice": {"tool": {"name": TOOL_NAME}}}

        async def one(request: JudgeRequest) -> Outcome:
            return await self._answer(
                lambda: self._converse(request, max_tokens, toolConfig=tools),
                lambda response: Outcome(value=tool_input(response), usage=usage_of(response),
                                         constrained=False),
                usage_of)

        self._run(requests, one, on_result, probe_first=False)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        try:
            self._client.close()
        except Exception:  # closing is best effort
            pass

    # -- the request, its attempts and its errors

    async def _write(self, request: JudgeRequest, sampled: bool) -> Any:
        """A short written answer: greedy, or sampled at temperature 1 (top-p 1; the Converse
        API takes no seed)."""
        return await self._converse(request, SAMPLED_MAX_TOKENS, temperature=1 if sampled else 0)

    async def _converse(self, request: JudgeRequest, max_tokens: int, temperature: float = 0,
                        **fields: Any) -> Any:
        system, turns = converse_messages(request)
        settings: dict[str, Any] = {self.max_tokens_field: max_tokens, "temperature": temperature}
        if temperature:
            settings["topP"] = 1
        call = partial(self._client.converse, modelId=self.model, messages=turns,
                       inferenceConfig=settings, **fields)
        if system:
            call = partial(call, system=system)
        return await asyncio.get_running_loop().run_in_executor(self._pool, call)

    def _bearer(self, request: Any, **_: Any) -> None:
        request.headers["Authorization"] = f"Bearer {self._api_key}"

    def _attempted(self, response: Any = None, caught_exception: Any = None,
                   **_: Any) -> None:
        """botocore's ``needs-retry`` hook, in a pool thread: count the attempt's fate on the
        event loop (an exception with no HTTP answer is a connection failure or a time-out)."""
        from botocore.exceptions import ConnectionError as NoConnection
        from botocore.exceptions import HTTPClientError

        loop = event_loop().loop
        if caught_exception is not None and isinstance(caught_exception,
                                                       (NoConnection, HTTPClientError)):
            loop.call_soon_threadsafe(self._liveness.failed, caught_exception)
        elif response is not None:
            loop.call_soon_threadsafe(self._liveness.answered)

    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request: the HTTP status and the service's
        error code and message where it sent them."""
        from botocore.exceptions import (
            ClientError,
            ConnectionError,
            HTTPClientError,
            NoCredentialsError,
        )

        tries = f"{self.max_retries + 1} attempt(s)"
        if isinstance(exc, ClientError):
            error = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", "?")
            text = (f"HTTP {status} from {self.host}: {error.get('Code', 'error')}: "
                    f"{error.get('Message', '')}")
        elif isinstance(exc, (ConnectionError, HTTPClientError)):
            text = f"connection to {self.host} failed ({tries}): {type(exc).__name__}: {exc}"
        elif isinstance(exc, NoCredentialsError):
            text = ("no AWS credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
                    "AWS_PROFILE, or a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK)")
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self._redact(" ".join(text.split()))
