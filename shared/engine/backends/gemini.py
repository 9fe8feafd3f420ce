"""Judge backend for the Gemini API (``models.generateContent``), through Google's ``google-genai``
SDK (the ``gemini`` extra).

Requests go to ``{base_url}/v1beta/models/{model}:generateContent`` with the key in the
``x-goog-api-key`` header. Structured answers are constrained by ``responseJsonSchema`` with
``responseMimeType: application/json``; first-token log-probabilities come from
``responseLogprobs`` and ``logprobs`` (``logprobsResult.topCandidates[0].candidates``), so
Yes/No scoring (l3score) and label probabilities (g_eval, pairwise) work as on an OpenAI-
compatible server. Temperature 0 with a fixed ``seed``. Token usage from ``usageMetadata``
(cached prompt tokens apart, thinking tokens as answer tokens).

Retries: 408, 5xx, connection failures and time-outs are asked again up to ``max_retries``
times, after the wait the refusal names (a ``Retry-After`` header or the ``RetryInfo``
``retryDelay`` of the error body, at most :data:`MAX_RETRY_DELAY`), else after an exponential
back-off. A 429 ``RESOURCE_EXHAUSTED`` is the rate limiter's (:mod:`.rate_limit`, in the
transport): one that reaches this loop was given up there. The SDK's own ``HttpRetryOptions``
are left off: their wait is a fixed exponential schedule that ignores both signals. The
concurrency bound, the dead judge and the redaction of every reason are
:class:`~.remote.RemoteBackend`'s.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...base.types import JudgeRequest, Outcome
from ..distinct import without_unique_items
from ..logprobs import LABEL_TOP_LOGPROBS
from .base import SAMPLED_MAX_TOKENS, SEED, LogprobsUnavailable, ResultCallback
from .gemini_responses import (
    MAX_RETRY_DELAY,
    MAX_TOP_LOGPROBS,
    RETRIED_STATUSES,
    SDK_FIELDS,
    answer_text,
    backoff,
    enforces,
    first_token_top_logprobs,
    mentions_logprobs,
    named_label,
    no_logprobs_message,
    server_delay,
    usage_of,
)
from .remote import RemoteBackend, require_sdk

if TYPE_CHECKING:
    from ..config import JudgeConfig

#: Models whose name holds this (Gemini's Flash and Flash-Lite models, the default among them)
#: are asked for minimal thinking (``thinkingConfig.thinkingLevel``): a judge's one-token or
#: short JSON answer needs none, and on Gemini 3 models thought tokens count against
#: ``maxOutputTokens``, so a one-token read would be spent thinking. Pro models cannot think
#: that little; their thoughts share the answer's token limit.
MINIMAL_THINKING = "flash"
API_VERSION = "v1beta"


class GeminiBackend(RemoteBackend):
    """A judge behind the Gemini API."""

    kind = "gemini-generate-content"  # the protocol (a call-cache key part)
    constrained = True
    read_text = staticmethod(answer_text)
    read_usage = staticmethod(usage_of)
    read_top_logprobs = staticmethod(first_token_top_logprobs)

    def __init__(self, config: JudgeConfig) -> None:
        import httpx

        genai = require_sdk(config.provider)
        from google.genai import types

        self._types = types
        super().__init__(config)
        self._api_key = config.resolved_api_key() or ""
        options: dict[str, Any] = {
            "api_version": API_VERSION, "timeout": int(self.timeout * 1000),
            "httpx_async_client": self.http_client(httpx.AsyncClient)}
        if self.base_url:
            options["base_url"] = self.base_url
        self._client = genai.Client(api_key=self._api_key,
                                    http_options=self._types.HttpOptions(**options))
        if config.batch:
            from .gemini_batches import GeminiBatches

            self.use_batch_api(GeminiBatches(self._client))

    def __repr__(self) -> str:
        return f"GeminiBackend(model={self.model!r}, host={self.host!r})"

    # -- configuration

    def uses_api_key(self, api_key: str | None) -> bool:
        import hmac

        return hmac.compare_digest(self._api_key.encode("utf-8"),
                                   (api_key or "").encode("utf-8"))

    def sampling_params(self, operation: str) -> dict[str, Any]:
        """The ``generationConfig`` of ``operation`` (Gemini's field names), the schema and
        the top-k of a Yes/No reading aside."""
        params: dict[str, Any] = {"temperature": 0, "topP": 1, "seed": SEED}
        if MINIMAL_THINKING in self.model.lower():
            params["thinkingConfig"] = {"thinkingLevel": "MINIMAL"}
        if operation == "yes_no":
            params.update({"responseLogprobs": True, self.max_tokens_field: 1})
        elif operation == "labels":
            params.update({"responseLogprobs": True, self.max_tokens_field: 1,
                           "logprobs": min(LABEL_TOP_LOGPROBS, MAX_TOP_LOGPROBS)})
        elif operation == "structured":
            params["responseMimeType"] = "application/json"
        elif operation == "label_samples":
            params.update({"temperature": 1, self.max_tokens_field: SAMPLED_MAX_TOKENS})
        else:
            raise ValueError(f"unknown operation {operation!r}")
        return params

    # -- operations

    def yes_no(self, requests: Sequence[JudgeRequest], top_k: int,
               on_result: ResultCallback) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= \
                MAX_TOP_LOGPROBS:
            raise ValueError(f"top_k must be an int from 1 to {MAX_TOP_LOGPROBS} (the most "
                             f"the Gemini API returns), got {top_k!r}")
        self._yes_no(requests, {**self.sampling_params("yes_no"), "logprobs": top_k}, on_result)

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """Each label's probability in the first token's top-20 list; from a model that has
        never returned log-probabilities, the label its short written answer names (1.0,
        ``method`` "sampled"); an answer naming none is unusable."""
        self._label_probabilities(requests, labels, ("responseLogprobs", "logprobs"),
                                  named_label, on_result)

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        params = {**self.sampling_params("structured"), self.max_tokens_field: max_tokens,
                  "responseJsonSchema": without_unique_items(json_schema)}
        constrained = enforces(json_schema)  # uniqueItems is not in Gemini's subset

        def read(response: Any) -> Outcome:
            return Outcome(value=answer_text(response), usage=usage_of(response),
                           constrained=constrained)

        async def one(request: JudgeRequest) -> Outcome:
            return await self._answer(lambda: self._request(request, params), read, usage_of)

        self._run(requests, one, on_result, probe_first=False)

    def close(self) -> None:
        client = self._client
        self._close_quietly(lambda: client.aio.aclose())

    # -- plumbing

    def content_request(self, request: JudgeRequest, params: dict[str, Any]) -> dict[str, Any]:
        """The ``generate_content`` keyword arguments of ``request`` with ``params`` as its
        ``generationConfig``, as plain JSON (the SDK's field names): ``model``, ``contents``
        (the turns; assistant turns are ``model``) and ``config`` (the system messages as its
        ``system_instruction``). A synchronous call sends them as they are; a batch item
        (:mod:`.gemini_batches`) is its ``contents`` and ``config``, the batch's model its
        ``model``."""
        system = [text for role, text in request.messages if role == "system"]
        contents = [{"role": "model" if role == "assistant" else "user", "parts": [{"text": text}]}
                    for role, text in request.messages if role != "system"]
        config: dict[str, Any] = {SDK_FIELDS[name]: value for name, value in params.items()
                                  if name != "thinkingConfig"}
        if "thinkingConfig" in params:
            config["thinking_config"] = {
                "thinking_level": params["thinkingConfig"]["thinkingLevel"]}
        if system:
            config["system_instruction"] = "\n\n".join(system)
        return {"model": self.model, "contents": contents, "config": config}

    async def _request(self, request: JudgeRequest, params: dict[str, Any]) -> Any:
        """One ``generateContent`` call with ``params`` as its ``generationConfig``, asked again
        on a refusal or fault worth retrying (module docstring); with ``batch=True``, one item
        of the round's batch."""
        from google.genai import errors

        call = self.content_request(request, params)
        if self.batcher is not None:
            return await self.batcher.ask(call)
        for attempt in itertools.count():
            try:
                return await self._client.aio.models.generate_content(**call)
            except errors.APIError as exc:
                if exc.code == 400 and params.get("responseLogprobs") and mentions_logprobs(exc):
                    raise LogprobsUnavailable(
                        f"{no_logprobs_message(self.model, self.host)} (the server said: "
                        f"{self._redact(str(exc.message))})") from None
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            except Exception as exc:
                delay = self._retry_delay(exc, attempt)
                if delay is None:
                    raise
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")

    def _retry_delay(self, exc: Exception, attempt: int) -> float | None:
        """How long to wait before asking again after ``exc`` on ``attempt`` (0-based), or
        ``None``: do not ask again."""
        import httpx
        from google.genai import errors

        if attempt >= self.max_retries or self._liveness.dead:
            return None
        if isinstance(exc, errors.APIError):
            if exc.code not in RETRIED_STATUSES or exc.code == 429:  # 429: the transport's
                return None
            named = server_delay(exc)
            if named is not None:
                return named if named <= MAX_RETRY_DELAY else None
            return backoff(attempt)
        if isinstance(exc, (httpx.TimeoutException, httpx.TransportError)):
            return backoff(attempt)
        return None

    def secrets(self) -> list[str]:
        return [self._api_key]

    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request."""
        import httpx
        from google.genai import errors

        tries = f"{self.max_retries + 1} attempt(s)"
        if isinstance(exc, errors.APIError):
            text = f"HTTP {exc.code} {exc.status or ''} from {self.host}: {exc.message}"
            if exc.code in RETRIED_STATUSES:
                text += f" ({tries})"
        elif isinstance(exc, httpx.TimeoutException):
            text = f"no answer from {self.host} within {self.timeout:g}s ({tries})"
        elif isinstance(exc, httpx.TransportError):
            text = f"connection to {self.host} failed ({tries}): {type(exc).__name__}: {exc}"
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self._redact(" ".join(text.split()))

