"""Judge backend for OpenAI-compatible chat-completion servers, through the ``openai`` SDK.

Every provider whose registry entry names this backend (OpenAI, DeepSeek, xAI, Hugging Face's
router, the presets, and ``openai-compatible``: any ``base_url``). What a server can do is its
provider's ``Capabilities`` (``shared.engine.backends.registry``), the structured-output style
overridable by the ``response_format`` judge option; nothing is detected from the server.

The async plumbing (the shared event loop, the concurrency bound, the dead judge that fails
fast) is :class:`.remote.RemoteBackend`'s. Retries (408/409, 5xx, connection errors,
time-outs) and the per-request time-out are the SDK's own ``max_retries``/``timeout``; a 429 is
the rate limiter's (:mod:`.rate_limit`). The transport is :mod:`.openai_transport`, the reading
of answers :mod:`.openai_responses`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...base.types import JudgeRequest, Outcome
from ..config import JudgeConfig
from ..distinct import without_unique_items
from ..logprobs import LABEL_TOP_LOGPROBS
from .base import SAMPLED_MAX_TOKENS, SEED, LogprobsUnavailable, ResultCallback
from .openai_responses import (
    first_token_top_logprobs,
    is_strict_compatible,
    mentions_logprobs,
    message_text,
    no_logprobs_message,
    usage_of,
    written_label,
)
from .remote import DEAD_AFTER, MAX_PROBES, RemoteBackend, host_of

__all__ = ["DEAD_AFTER", "MAX_PROBES", "SEED", "OpenAICompatBackend", "host_of"]

#: Structured-output styles (the ``response_format`` judge option, ``RESPONSE_FORMATS``).
#: ``json_schema``: ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM, xAI);
#: ``json_object``: ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server);
#: ``json_object_plain``: ``{"type": "json_object"}`` without a schema (DeepSeek);
#: ``none``: no ``response_format`` at all.
CONSTRAINED_FORMATS = frozenset({"json_schema", "json_object"})
NO_KEY = "not-needed"  # the SDK needs some key; servers without authentication ignore it


# ---------------------------------------------------------------- the backend


class OpenAICompatBackend(RemoteBackend):
    """A judge behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    kind = "openai-compatible"
    batch_url = "/v1/chat/completions"  # a batch line's url and the batch's endpoint
    read_text = staticmethod(message_text)
    read_usage = staticmethod(usage_of)
    read_top_logprobs = staticmethod(first_token_top_logprobs)

    def __init__(self, config: JudgeConfig) -> None:
        super().__init__(config)
        style = config.resolved_response_format() or "none"
        self.response_format = style
        self.constrained = style in CONSTRAINED_FORMATS
        capabilities = self.capabilities
        self.seed = SEED if capabilities.seed else None
        self.top_logprobs = capabilities.top_logprobs
        self._client = self.new_client(config.resolved_api_key() or NO_KEY, self.base_url,
                                       self.http_client())
        # label requests: a provider without log-probabilities writes the label at once
        self._logprobs_missing = not capabilities.logprobs
        if config.batch:
            from .openai_batches import OpenAIBatches

            self.use_batch_api(OpenAIBatches(self._client, self.batch_url))

    def new_client(self, api_key: str, base_url: str | None, http: Any) -> Any:
        """The ``openai`` SDK client requests go through (Azure's backend takes its own)."""
        import openai

        return openai.AsyncOpenAI(api_key=api_key, base_url=base_url, timeout=self.timeout,
                                  max_retries=self.max_retries, http_client=http)

    def __repr__(self) -> str:
        return (
            f"OpenAICompatBackend(provider={self.provider!r}, model={self.model!r}, "
            f"host={self.host!r}, response_format={self.response_format!r})"
        )

    # -- configuration

    def uses_api_key(self, api_key: str | None) -> bool:
        import hmac

        return hmac.compare_digest(str(self._client.api_key).encode("utf-8"),
                                   (api_key or NO_KEY).encode("utf-8"))

    def sampling_params(self, operation: str) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": 0, "top_p": 1}
        if self.seed is not None:
            params["seed"] = self.seed
        if operation == "yes_no":
            params.update({"logprobs": True, self.max_tokens_field: 1})
        elif operation == "labels":
            top = min(LABEL_TOP_LOGPROBS, self.top_logprobs) or LABEL_TOP_LOGPROBS
            params.update({"logprobs": True, self.max_tokens_field: 1, "top_logprobs": top})
        elif operation == "structured":
            params["response_format"] = self.response_format
        elif operation == "label_samples":
            params.update({"temperature": 1, self.max_tokens_field: SAMPLED_MAX_TOKENS})
        else:
            raise ValueError(f"unknown operation {operation!r}")
        return params

    def response_format_body(self, json_schema: dict[str, Any]) -> dict[str, Any] | None:
        """The ``response_format`` request field for ``json_schema`` in this backend's style,
        without ``uniqueItems``: OpenAI's strict structured outputs list no such keyword (the
        runner drops repeated items instead: :mod:`shared.engine.distinct`)."""
        json_schema = without_unique_items(json_schema)
        if self.response_format == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_answer",
                    "schema": json_schema,
                    "strict": is_strict_compatible(json_schema),
                },
            }
        if self.response_format == "json_object":
            return {"type": "json_object", "schema": json_schema}
        if self.response_format == "json_object_plain":
            return {"type": "json_object"}
        return None

    # -- operations

    def yes_no(
        self, requests: Sequence[JudgeRequest], top_k: int, on_result: ResultCallback
    ) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        if not self.top_logprobs:
            raise LogprobsUnavailable(
                f"provider={self.provider!r} returns no log-probabilities; a metric scored from "
                "the judge's Yes/No log-probabilities needs a provider that does")
        self._yes_no(requests, {**self.sampling_params("yes_no"), "top_logprobs": top_k},
                     on_result)

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """Each label's probability in the first token's top-20 list; from a model that has
        never returned log-probabilities, the label its short written answer names (1.0,
        ``method`` "sampled"; all 0.0 when it names none)."""
        self._label_probabilities(requests, labels, ("logprobs", "top_logprobs"), written_label,
                                  on_result)

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        params = self.sampling_params("structured")
        params.pop("response_format")
        params[self.max_tokens_field] = max_tokens
        response_format = self.response_format_body(json_schema)
        if response_format is not None:
            params["response_format"] = response_format

        def read(response: Any) -> Outcome:
            return Outcome(value=message_text(response), usage=usage_of(response),
                           constrained=self.constrained)

        async def one(request: JudgeRequest) -> Outcome:
            return await self._answer(lambda: self._request(request, params), read, usage_of)

        self._run(requests, one, on_result, probe_first=False)

    def close(self) -> None:
        client = self._client
        self._close_quietly(lambda: client.close())

    # -- plumbing

    async def _request(self, request: JudgeRequest, params: dict[str, Any]) -> Any:
        import openai

        if self.batcher is not None:
            return await self.batcher.ask(
                {"model": self.model, "messages": request.as_openai_messages(), **params})
        try:
            return await self._client.chat.completions.create(
                model=self.model, messages=request.as_openai_messages(), **params
            )
        except openai.BadRequestError as exc:
            if params.get("logprobs") and mentions_logprobs(exc):
                raise LogprobsUnavailable(
                    f"{no_logprobs_message(self.model, self.host)} (the server said: "
                    f"{self._redact(str(exc.message))})"
                ) from None
            raise

    def secrets(self) -> list[str]:
        return [str(self._client.api_key or "")]

    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request."""
        import openai

        if isinstance(exc, openai.APIStatusError):
            text = f"HTTP {exc.status_code} from {self.host}: {exc.message}"
        else:
            text = self._sdk_failure(exc, openai.APITimeoutError,
                                     openai.APIConnectionError)
        return self._redact(" ".join(text.split()))
