"""What judge calls cost: a price table per provider and model, and a dry-run estimate.

Prices are list prices in USD per 1M tokens (standard tier; input at the cache-miss rate, no
batch discount), as the providers published them in August 2025 (``PRICES_AS_OF``). Providers
change prices: check their pricing pages before relying on a number, and add models here.

An unknown model costs ``None`` (unknown, not free). The local provider costs ``0.0``. Provider
``"openai-compatible"`` (a vLLM, llama.cpp, Ollama or LiteLLM server) is priced only when its
model name is in one of the tables below, e.g. a proxy in front of ``gpt-4o-mini``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

from ..base.types import JudgeRequest
from .config import PROVIDERS

PRICES_AS_OF = "2025-08"

# provider -> model -> (USD per 1M input tokens, USD per 1M output tokens)
PRICES: dict[str, dict[str, tuple[float, float]]] = {
    "openai": {
        "gpt-5": (1.25, 10.00),
        "gpt-5-mini": (0.25, 2.00),
        "gpt-5-nano": (0.05, 0.40),
        "gpt-4.1": (2.00, 8.00),
        "gpt-4.1-mini": (0.40, 1.60),
        "gpt-4.1-nano": (0.10, 0.40),
        "gpt-4o": (2.50, 10.00),
        "gpt-4o-mini": (0.15, 0.60),
        "gpt-4-turbo": (10.00, 30.00),
        "gpt-4": (30.00, 60.00),
        "gpt-3.5-turbo": (0.50, 1.50),
        "o1": (15.00, 60.00),
        "o3": (2.00, 8.00),
        "o3-mini": (1.10, 4.40),
        "o4-mini": (1.10, 4.40),
    },
    "deepseek": {
        "deepseek-chat": (0.27, 1.10),
        "deepseek-reasoner": (0.55, 2.19),
    },
    "xai": {
        "grok-4": (3.00, 15.00),
        "grok-3": (3.00, 15.00),
        "grok-3-mini": (0.30, 0.50),
        "grok-2": (2.00, 10.00),
    },
}

# Dated snapshots and aliases share their family's price: gpt-4o-mini-2024-07-18, grok-4-0709,
# grok-3-latest, grok-3-mini-beta.
_SNAPSHOT_SUFFIX = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4}|latest|beta)$")

# The chat format adds a few tokens per message (role, separators) and a few to prime the reply.
TOKENS_PER_MESSAGE = 4
TOKENS_PER_REPLY = 3
CHARS_PER_TOKEN = 4


def _lookup(table: dict[str, tuple[float, float]], model: str) -> tuple[float, float] | None:
    name = model.strip().lower()
    while True:
        if name in table:
            return table[name]
        shorter = _SNAPSHOT_SUFFIX.sub("", name)
        if shorter == name:
            return None
        name = shorter


def price_per_million(provider: str, model: str | None) -> tuple[float, float] | None:
    """``(input, output)`` USD per 1M tokens, ``(0.0, 0.0)`` for the local provider, or ``None``
    when the price is unknown."""
    if provider == "local":
        return (0.0, 0.0)
    if not model:
        return None
    if provider == "openai-compatible":
        for table in PRICES.values():
            price = _lookup(table, model)
            if price is not None:
                return price
        return None
    table = PRICES.get(provider)
    return _lookup(table, model) if table else None


def cost_of(
    provider: str, model: str | None, prompt_tokens: int, completion_tokens: int
) -> float | None:
    """USD for that many tokens, or ``None`` when the provider/model price is unknown."""
    price = price_per_million(provider, model)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000


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
    provider: str = "local",
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
