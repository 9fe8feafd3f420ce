"""What judge calls cost: each provider's prices (its registry entry's ``prices``) and a dry-run
estimate.

Prices are list prices in USD per 1M tokens (standard tier; input at the cache-miss rate, cached
input where the provider publishes a price for it; batched requests at the provider's
``batch_discount``), as the providers published them (``PRICES_AS_OF``: the month, per
provider; each registry entry's ``prices_as_of``). Providers change
prices: check their pricing pages before relying on a number, and add models to the registry.

An unknown model costs ``None`` (unknown, not free). The local provider costs ``0.0``. A provider
with no price table of its own (``"openai-compatible"``, a vLLM or Ollama server, an Azure
deployment, a router) is priced only when its model name is in another provider's table, e.g. a
proxy in front of ``gpt-4o-mini``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..base.types import JudgeRequest
from .backends.registry import LOCAL, ModelPrice
from .config import PROVIDERS

#: provider -> the month (``YYYY-MM``) its prices were published, for every provider with prices
PRICES_AS_OF: dict[str, str] = {name: provider.prices_as_of for name, provider in PROVIDERS.items()
                                if provider.prices and provider.prices_as_of}

#: provider -> model -> (USD per 1M input tokens, USD per 1M output tokens), from the registry.
PRICES: dict[str, dict[str, tuple[float, float]]] = {
    name: {model: (price.input, price.output) for model, price in provider.prices.items()}
    for name, provider in PROVIDERS.items()
    if provider.prices and "*" not in provider.prices
}

# Dated snapshots and aliases share their family's price: gpt-4o-mini-2024-07-18, grok-4-0709,
# grok-3-latest, grok-3-mini-beta.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4}|latest|beta)$")

# The chat format adds a few tokens per message (role, separators) and a few to prime the reply.
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REPLY = 3
CHARS_PER_TOKEN = 4


def _lookup(table: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    name = model.strip().lower()
    while True:
        if name in table:
            return table[name]
        shorter = _SNAPSHOT_SUFFIX.sub("", name)
        if shorter == name:
            return None
        name = shorter


def model_price(provider: str, model: str | None) -> ModelPrice | None:
    """The :class:`~shared.engine.backends.registry.ModelPrice` of ``model`` on ``provider``, or
    ``None`` when it is unknown."""
    entry = PROVIDERS.get(provider)
    if entry is None:
        return None
    if "*" in entry.prices:
        return entry.prices["*"]
    if not model:
        return None
    if entry.prices:
        return _lookup(entry.prices, model)
    for other in PROVIDERS.values():
        if other.prices and "*" not in other.prices:
            price = _lookup(other.prices, model)
            if price is not None:
                return price
    return None


def price_per_million(provider: str, model: str | None) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens, ``(0.0, 0.0)`` for the local provider, or ``None``
    when the price is unknown."""
    price = model_price(provider, model)
    return None if price is None else (price.input, price.output)


def batch_price_per_million(provider: str, model: str | None) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens sent through the provider's batch API: the
    synchronous price times its ``batch_discount``; ``None`` when the price is unknown or the
    provider has no batch API."""
    price = model_price(provider, model)
    capabilities = PROVIDERS[provider].capabilities if provider in PROVIDERS else None
    if price is None or capabilities is None or capabilities.batch is None:
        return None
    discount = capabilities.batch_discount
    return (price.input * discount, price.output * discount)


#: What a prompt-cache write costs per token, as a multiple of the input price (Anthropic's and
#: Bedrock's 5-minute cache).
CACHE_WRITE_FACTOR = 1.25


def cost_of(
    provider: str, model: str | None, prompt_tokens: int, completion_tokens: int,
    *, cached_tokens: int = 0, cache_write_tokens: int = 0, batch: bool = False,
) -> float | None:
    """USD for that many tokens, or ``None`` when the provider/model price is unknown.

    ``cached_tokens``: how many of the ``prompt_tokens`` were read from the provider's prompt
    cache (priced at its cached-input rate where one is published, else as other input).
    ``batch``: the tokens went through the batch API (priced at ``batch_discount``; ``None``
    when the provider has none)."""
    price = model_price(provider, model)
    if price is None:
        return None
    factor = 1.0
    if batch:
        capabilities = PROVIDERS[provider].capabilities
        if capabilities.batch is None:
            return None
        factor = capabilities.batch_discount
    cached = min(max(cached_tokens, 0), prompt_tokens)
    written = min(max(cache_write_tokens, 0), prompt_tokens - cached)
    cached_rate = price.input if price.cached_input is None else price.cached_input
    usd = ((prompt_tokens - cached - written) * price.input + cached * cached_rate
           + written * price.input * CACHE_WRITE_FACTOR + completion_tokens * price.output)
    return usd * factor / 1_000_000


def estimate_prompt_tokens(request: JudgeRequest | str | Sequence[Any]) -> int:
    """Prompt tokens of one request, estimated without a tokenizer or network.

    Heuristic: ``ceil(characters / 4)`` per message (about right for English text with OpenAI's
    tokenizers) plus 4 tokens per message and 3 for the reply. Expect it to be off by
    10-30% on other languages, code or heavy punctuation.
    """
    if isinstance(request, JudgeRequest):
        contents = [content for _, content in request.messages]
    elif isinstance(request, str):
        contents = [request]
    else:
        contents = [m["content"] if isinstance(m, dict) else m[1] for m in request]
    return TOKENS_PER_REPLY + sum(
        TOKENS_PER_MESSAGE + math.ceil(len(content) / CHARS_PER_TOKEN) for content in contents
    )


def estimate_cost(
    requests: Iterable[JudgeRequest | str | Sequence[Any]],
    provider: str = LOCAL,
    model: str | None = None,
    completion_tokens_per_request: int = 1,
) -> dict[str, Any]:
    """What sending ``requests`` would cost, computed offline.

    ``requests``: :class:`~shared.base.types.JudgeRequest` objects, prompt strings, or OpenAI-style
    message lists. ``model=None`` means the provider's default model.
    ``completion_tokens_per_request``: the answer length you expect (1 for a Yes/No
    log-probability call; the ``max_tokens`` of a structured call gives an upper bound).

    Returns ``{"requests", "prompt_tokens", "completion_tokens", "cost"}``; ``cost`` is USD, or
    ``None`` when the provider/model price is unknown.
    """
    if provider not in PROVIDERS:
        raise ValueError(f"provider={provider!r} is not supported; choose one of {list(PROVIDERS)}")
    if (
        isinstance(completion_tokens_per_request, bool)
        or not isinstance(completion_tokens_per_request, int)
        or completion_tokens_per_request < 0
    ):
        raise ValueError(
            "completion_tokens_per_request must be an int >= 0, got "
            f"{completion_tokens_per_request!r}"
        )
    model = model or PROVIDERS[provider].default_model
    count = prompt_tokens = 0
    for request in requests:
        count += 1
        prompt_tokens += estimate_prompt_tokens(request)
    completion_tokens = count * completion_tokens_per_request
    return {
        "requests": count,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "cost": cost_of(provider, model, prompt_tokens, completion_tokens),
    }
