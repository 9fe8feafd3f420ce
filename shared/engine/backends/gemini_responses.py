"""The Gemini API's side of the Gemini backend: the ``generationConfig`` each operation sends,
what a ``GenerateContentResponse`` answers (its text, the first token's top log-probabilities,
its token usage), which JSON-schema keywords ``responseJsonSchema`` enforces, and when and how
long to wait before asking again."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

from ...base.types import LabelAnswer, TokenUsage
from ..logprobs import sampled_answer
from .base import LogprobsUnavailable
from .registry import LOCAL
from .remote import MalformedResponse, top_pairs

#: The most top log-probabilities per token the Gemini API returns (``generationConfig.logprobs``:
#: "The number must be in the range of [0, 20]").
MAX_TOP_LOGPROBS = 20
#: The keywords ``responseJsonSchema`` supports (Gemini API reference, ``GenerationConfig``);
#: a schema using another one is sent as it is, but its answer is not taken as enforced.
ENFORCED_KEYWORDS = frozenset({
    "$id", "$defs", "$ref", "$anchor", "type", "format", "title", "description", "enum",
    "items", "prefixItems", "minItems", "maxItems", "minimum", "maximum", "anyOf", "oneOf",
    "properties", "additionalProperties", "required", "propertyOrdering",
})
#: HTTP statuses asked again: 408, 429 (``RESOURCE_EXHAUSTED``) and the 5xx overloads.
RETRIED_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
MAX_RETRY_DELAY = 60.0  # seconds: a longer Retry-After or retryDelay fails the request instead
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s\s*$")
#: generationConfig field (camelCase, on the wire) -> the SDK's GenerateContentConfig field.
SDK_FIELDS = {"temperature": "temperature", "topP": "top_p", "seed": "seed",
              "maxOutputTokens": "max_output_tokens", "responseLogprobs": "response_logprobs",
              "logprobs": "logprobs", "responseMimeType": "response_mime_type",
              "responseJsonSchema": "response_json_schema"}


def enforces(schema: Any) -> bool:
    """Whether Gemini's ``responseJsonSchema`` enforces every keyword of ``schema``."""
    if isinstance(schema, list):
        return all(enforces(item) for item in schema)
    if not isinstance(schema, dict):
        return True
    if not set(schema) <= ENFORCED_KEYWORDS:
        return False
    nested: list[Any] = []
    for key in ("properties", "$defs"):
        nested.extend((schema.get(key) or {}).values())
    for key in ("items", "prefixItems", "anyOf", "oneOf", "additionalProperties"):
        if key in schema and not isinstance(schema[key], bool):
            nested.append(schema[key])
    return all(enforces(item) for item in nested)


# ---------------------------------------------------------------- answers


def usage_of(response: Any) -> TokenUsage:
    """``usageMetadata``: prompt tokens (the cached ones included, and counted apart in
    ``cached_tokens``) and answer tokens (thinking tokens included: they are billed as
    output)."""
    usage = getattr(response, "usage_metadata", None)

    def count(name: str) -> int:
        return int(getattr(usage, name, 0) or 0)

    return TokenUsage(prompt_tokens=count("prompt_token_count"),
                      completion_tokens=count("candidates_token_count")
                      + count("thoughts_token_count"),
                      cached_tokens=count("cached_content_token_count"))


def _candidate(response: Any) -> Any:
    candidates = getattr(response, "candidates", None)
    if not isinstance(candidates, list) or not candidates:
        feedback = getattr(response, "prompt_feedback", None)
        blocked = getattr(feedback, "block_reason", None)
        if blocked:
            raise MalformedResponse(f"the prompt was blocked ({_name(blocked)})")
        raise MalformedResponse("no candidate in the answer")
    return candidates[0]


def _name(value: Any) -> str:
    return str(getattr(value, "value", None) or value)


def answer_text(response: Any) -> str:
    """The first candidate's text; :class:`MalformedResponse` when there is none."""
    candidate = _candidate(response)
    parts = getattr(getattr(candidate, "content", None), "parts", None) or []
    texts = [part.text for part in parts
             if isinstance(getattr(part, "text", None), str) and not getattr(part, "thought", None)]
    if texts:
        return "".join(texts)
    reason = getattr(candidate, "finish_reason", None)
    raise MalformedResponse(f"no answer text (finishReason={_name(reason) if reason else None})")


def named_label(response: Any, labels: Sequence[str]) -> LabelAnswer:
    """The label the first candidate's short written answer names (1.0, ``method``
    "sampled"); :class:`MalformedResponse` when it names none of ``labels``."""
    answer = sampled_answer(answer_text(response), labels)
    if not any(answer.probabilities.values()):
        raise MalformedResponse(f"the judge wrote none of {', '.join(labels)}: "
                                f"{(answer.text or '')[:80]!r}")
    return answer


def no_logprobs_message(model: str, host: str = "") -> str:
    where = f" at {host}" if host else ""
    return (f"the Gemini model {model!r}{where} returned no log-probabilities; a metric scored "
            "from the judge's first answer token needs them (responseLogprobs). Choose a model "
            f"that returns them, or the local backend (provider={LOCAL!r}).")


def first_token_top_logprobs(response: Any, model: str, host: str = ""
                             ) -> list[tuple[str, float]]:
    """``logprobsResult.topCandidates[0].candidates`` as ``(token, logprob)`` pairs, in the
    order given. :class:`LogprobsUnavailable` when the answer has none,
    :class:`MalformedResponse` when they are not log-probabilities."""
    result = getattr(_candidate(response), "logprobs_result", None)
    steps = getattr(result, "top_candidates", None) if result is not None else None
    entries = getattr(steps[0], "candidates", None) if steps else None
    if not entries:
        raise LogprobsUnavailable(no_logprobs_message(model, host))
    return top_pairs(entries, "token", "log_probability")


def mentions_logprobs(exc: Exception) -> bool:
    return "logprob" in str(getattr(exc, "message", None) or exc).lower()


# ---------------------------------------------------------------- retries


def server_delay(exc: Any) -> float | None:
    """The wait a refusal asks for: its ``Retry-After`` header (seconds), else the
    ``google.rpc.RetryInfo`` ``retryDelay`` of its error details (``"30s"``); ``None`` when it
    names none."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if value is not None:
        try:
            return max(0.0, float(value))
        except ValueError:
            pass
    body = getattr(exc, "details", None)
    error = body.get("error", body) if isinstance(body, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else []:
        if isinstance(detail, dict) and str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None


def backoff(attempt: int) -> float:
    """The wait before retry ``attempt + 1`` when the server names none: 0.5 s doubling, up to
    8 s, with up to 25 % jitter."""
    return min(8.0, 0.5 * 2 ** attempt) * (1 + random.random() / 4)
