"""What an OpenAI-compatible server answers: the token usage, the first token's top
log-probabilities, the message text, and whether OpenAI's strict structured outputs take a
schema."""

from __future__ import annotations

from typing import Any

from ...base.types import LabelAnswer, TokenUsage
from ..logprobs import sampled_label
from .base import LogprobsUnavailable
from .registry import LOCAL
from .remote import MalformedResponse, top_pairs


def usage_of(response: Any) -> TokenUsage:
    usage = getattr(response, "usage", None)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = details.get("cached_tokens") if isinstance(details, dict) else getattr(
        details, "cached_tokens", 0)
    return TokenUsage(
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        cached_tokens=int(cached or 0) if isinstance(cached, int) else 0,
    )


def no_logprobs_message(model: str, host: str = "") -> str:
    where = f" at {host}" if host else ""
    return (
        f"the judge model {model!r}{where} returned no log-probabilities; a metric scored from "
        "the judge's Yes/No log-probabilities needs the first answer token's top "
        "log-probabilities (reasoning models do not return them). Choose a model that does "
        "(e.g. gpt-4o-mini, deepseek-chat, a vLLM or llama.cpp server) or the local backend "
        f"(provider={LOCAL!r})."
    )


def first_token_top_logprobs(response: Any, model: str, host: str = "") -> list[tuple[str, float]]:
    """The first generated token's ``(token, logprob)`` list, in the order the API gives it.

    Raises :class:`LogprobsUnavailable` when a well-formed completion carries no top
    log-probabilities, :class:`MalformedResponse` when the reply is not a chat completion or
    its log-probabilities are not numbers.
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse(f"not a chat completion (got {type(response).__name__})")
    logprobs = getattr(choices[0], "logprobs", None)
    content = getattr(logprobs, "content", None) if logprobs is not None else None
    if not content:
        raise LogprobsUnavailable(no_logprobs_message(model, host))
    entries = getattr(content[0], "top_logprobs", None)
    if not entries:
        raise LogprobsUnavailable(no_logprobs_message(model, host))
    return top_pairs(entries, "token", "logprob")


def message_text(response: Any) -> str:
    """The first choice's message content; ``MalformedResponse`` when there is none."""
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse(f"not a chat completion (got {type(response).__name__})")
    message = getattr(choices[0], "message", None)
    content = getattr(message, "content", None)
    if isinstance(content, str):
        return content
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise MalformedResponse(f"the model refused: {refusal}")
    reason = getattr(choices[0], "finish_reason", None)
    raise MalformedResponse(f"no answer text (finish_reason={reason!r})")


def mentions_logprobs(exc: Exception) -> bool:
    return "logprob" in str(getattr(exc, "message", None) or exc).lower()


def is_strict_compatible(schema: Any) -> bool:
    """Whether OpenAI's strict structured outputs accept ``schema``: every object lists all its
    properties as required and forbids additional ones, and uses no ``prefixItems`` (the
    verdict lists' per-position item numbers), which strict mode does not take. Otherwise the
    schema is sent with ``strict: false`` (a hint to OpenAI; vLLM constrains either way)."""
    if not isinstance(schema, dict):
        return True
    if "prefixItems" in schema:
        return False
    types = schema.get("type")
    is_object = types == "object" or (isinstance(types, list) and "object" in types)
    if is_object or "properties" in schema:
        properties = schema.get("properties") or {}
        if schema.get("additionalProperties") is not False:
            return False
        if set(schema.get("required") or []) != set(properties):
            return False
    subschemas: list[Any] = []
    for key in ("properties", "$defs", "definitions"):
        subschemas.extend((schema.get(key) or {}).values())
    for key in ("anyOf", "allOf", "oneOf", "prefixItems"):
        subschemas.extend(schema.get(key) or [])
    for key in ("items", "not", "if", "then", "else"):
        if key in schema:
            subschemas.append(schema[key])
    return all(is_strict_compatible(sub) for sub in subschemas)


def written_label(response: Any, labels: list[str] | tuple[str, ...]) -> LabelAnswer:
    """The label a model without log-probabilities wrote (probability 1.0, ``method``
    "sampled"); see :func:`label_written`."""
    return label_written(message_text(response), labels)


def label_written(text: str, labels: list[str] | tuple[str, ...]) -> LabelAnswer:
    """The label a judge's written answer ``text`` names (probability 1.0, ``method``
    "sampled", read by :func:`shared.engine.logprobs.sampled_label`), whatever the protocol;
    an answer naming none of ``labels`` gives every label 0.0, an answer the judge runner
    refuses (cached like any refused answer, asked again with ``retry_unmeasured``)."""
    label = sampled_label(text, labels)
    return LabelAnswer({k: float(k == label) for k in labels}, "sampled", text)
