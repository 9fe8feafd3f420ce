"""Price table and offline cost estimates (pure arithmetic, no network)."""

from __future__ import annotations

import math

import pytest

from shared import JudgeRequest, estimate_cost, get_judge, judge_config
from shared.engine.pricing import (
    PRICES,
    PRICES_AS_OF,
    cost_of,
    estimate_prompt_tokens,
    price_per_million,
)


def test_prices_are_dated_and_cover_each_remote_provider():
    from shared.engine.backends.registry import LOCAL, PROVIDERS

    priced = {name for name, p in PROVIDERS.items() if p.prices and name != LOCAL}
    assert priced and set(PRICES_AS_OF) == priced  # every priced provider says when
    for stamp in PRICES_AS_OF.values():
        year, month = stamp.split("-")
        assert len(year) == 4 and 1 <= int(month) <= 12, stamp
    for provider in ("openai", "deepseek", "xai"):
        assert PRICES[provider], provider
        for model, (price_in, price_out) in PRICES[provider].items():
            assert 0 < price_in <= price_out, model


def test_published_gpt_4o_mini_price():
    # OpenAI's list price: $0.15 per 1M input tokens, $0.60 per 1M output tokens.
    assert cost_of("openai", "gpt-4o-mini", 1_000_000, 1_000_000) == pytest.approx(0.75)
    assert cost_of("openai", "gpt-4o-mini", 2_000, 10) == pytest.approx(
        (2_000 * 0.15 + 10 * 0.60) / 1e6
    )


def test_dated_snapshots_share_their_family_price():
    assert price_per_million("openai", "gpt-4o-mini-2024-07-18") == PRICES["openai"]["gpt-4o-mini"]
    assert price_per_million("openai", "gpt-4o-2024-08-06") == PRICES["openai"]["gpt-4o"]
    assert price_per_million("xai", "grok-3-mini-latest") == PRICES["xai"]["grok-3-mini"]
    # a longer family name is not taken for a snapshot of a shorter one
    assert price_per_million("openai", "gpt-4o-mini") != price_per_million("openai", "gpt-4o")


def test_unknown_is_none_and_local_is_free():
    assert cost_of("openai", "no-such-model", 10, 10) is None
    assert cost_of("deepseek", None, 10, 10) is None
    assert cost_of("local", None, 10_000, 10_000) == 0.0
    assert cost_of("openai-compatible", "smollm2", 10, 10) is None
    assert cost_of("openai-compatible", "gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)


def test_estimate_cost_uses_the_documented_heuristic():
    text = "x" * 401  # ceil(401 / 4) = 101 tokens, + 4 per message + 3 for the reply
    request = JudgeRequest(messages=(("system", "abcd"), ("user", text)), prompt_id="t@1")
    assert estimate_prompt_tokens(request) == (4 + 1) + (4 + 101) + 3
    assert estimate_prompt_tokens(text) == 4 + 101 + 3
    assert estimate_prompt_tokens([{"role": "user", "content": text}]) == 4 + 101 + 3

    plan = estimate_cost([request, text], "openai", "gpt-4o-mini", completion_tokens_per_request=3)
    assert plan["requests"] == 2
    assert plan["prompt_tokens"] == estimate_prompt_tokens(request) + estimate_prompt_tokens(text)
    assert plan["completion_tokens"] == 6
    assert plan["cost"] == pytest.approx(cost_of("openai", "gpt-4o-mini", plan["prompt_tokens"], 6))
    assert math.isfinite(plan["cost"]) and plan["cost"] > 0


def test_estimate_cost_defaults_and_errors():
    # model=None: the provider's default model (openai -> gpt-4o-mini) is priced
    default = estimate_cost(["hi"], "openai")["cost"]
    assert default == estimate_cost(["hi"], "openai", "gpt-4o-mini")["cost"]
    assert estimate_cost(["hi"], "local")["cost"] == 0.0
    assert estimate_cost(["hi"], "openai-compatible", "my-model")["cost"] is None
    assert estimate_cost([], "openai")["requests"] == 0
    with pytest.raises(ValueError, match="provider"):
        estimate_cost(["hi"], "nope")
    with pytest.raises(ValueError, match="completion_tokens_per_request"):
        estimate_cost(["hi"], "openai", completion_tokens_per_request=-1)


def test_judge_cost_follows_its_usage():
    priced = get_judge(judge_config(provider="openai", api_key="sk-test", model="gpt-4o-mini"))
    priced.usage.prompt_tokens, priced.usage.completion_tokens = 1_000_000, 1_000_000
    assert priced.cost == pytest.approx(0.75)

    unknown = get_judge(judge_config(provider="openai", api_key="sk-test", model="my-finetune"))
    unknown.usage.prompt_tokens = 10
    assert unknown.cost is None

    assert get_judge(judge_config(provider="local")).cost == 0.0


def test_prices_come_from_the_registry_entries():
    from shared.engine.backends.registry import PROVIDERS

    for name, table in PRICES.items():
        for model, (price_in, price_out) in table.items():
            entry = PROVIDERS[name].prices[model]
            assert (entry.input, entry.output) == (price_in, price_out)
            assert entry.cached_input is None or 0 <= entry.cached_input < entry.input


def test_cached_prompt_tokens_are_priced_at_the_cached_rate():
    from shared.engine.pricing import model_price

    price = model_price("openai", "gpt-4o-mini-2024-07-18")
    assert price is not None and price.cached_input is not None
    mixed = cost_of("openai", "gpt-4o-mini", 1_000, 10, cached_tokens=600)
    assert mixed == pytest.approx((400 * price.input + 600 * price.cached_input
                                   + 10 * price.output) / 1e6)
    assert mixed < cost_of("openai", "gpt-4o-mini", 1_000, 10)
    # no published cached rate: cached tokens cost as other input
    assert cost_of("openai", "gpt-4", 1_000, 0, cached_tokens=1_000) == cost_of(
        "openai", "gpt-4", 1_000, 0)


def test_batched_tokens_are_priced_at_the_batch_discount():
    from shared.engine.backends.registry import PROVIDERS
    from shared.engine.pricing import batch_price_per_million

    discount = PROVIDERS["openai"].capabilities.batch_discount
    sync = price_per_million("openai", "gpt-4o")
    assert batch_price_per_million("openai", "gpt-4o") == pytest.approx(
        (sync[0] * discount, sync[1] * discount))
    assert cost_of("openai", "gpt-4o", 1_000, 100, batch=True) == pytest.approx(
        cost_of("openai", "gpt-4o", 1_000, 100) * discount)
    # a provider without a batch API has no batch price
    no_batch = next(n for n, p in PROVIDERS.items() if p.prices and p.capabilities.batch is None
                    and "*" not in p.prices)
    model = next(iter(PROVIDERS[no_batch].prices))
    assert batch_price_per_million(no_batch, model) is None
    assert cost_of(no_batch, model, 10, 10, batch=True) is None
