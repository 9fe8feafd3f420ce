"""The provider registry: each entry is read by the option checks, docs and defaults."""

from __future__ import annotations

import dataclasses

import pytest

from shared import judge_config
from shared.engine import config
from shared.engine.backends import registry
from shared.engine.backends.registry import PROVIDERS


def _remote(where) -> str:
    return next(name for name, p in PROVIDERS.items() if name != registry.LOCAL and where(p))


def test_every_entry_is_well_formed() -> None:
    for name, provider in PROVIDERS.items():
        caps = provider.capabilities
        module, _, cls = provider.backend.partition(":")
        assert module and cls, name
        assert provider.title, name
        assert (caps.top_logprobs > 0) == caps.logprobs, name
        assert 0 < caps.batch_discount <= 1, name
        # no default endpoint: one is needed, unless the SDK finds it (bedrock: by region)
        assert provider.needs_base_url == (provider.base_url is None
                                           and name not in (registry.LOCAL, "bedrock"))
        assert not provider.needs_key or provider.key_env, name
        assert (provider.extra is None) == (provider.sdk is None), name


def test_option_docs_and_choices_are_derived() -> None:
    docs = {option.name: option for option in config.JUDGE_OPTIONS}
    assert docs["provider"].choices == tuple(PROVIDERS)
    for name in PROVIDERS:
        assert f'"{name}"' in docs["provider"].doc
    for variable in registry.key_variables():
        assert variable in docs["api_key"].doc
    for name in registry.provider_names(lambda p: p.needs_base_url):
        assert name in docs["base_url"].doc


def test_a_provider_that_needs_a_key_names_its_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    name = _remote(lambda p: p.needs_key and not p.needs_base_url and p.sdk is None)
    for variable in PROVIDERS[name].key_env:
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(ValueError, match=PROVIDERS[name].key_env[0]):
        judge_config(provider=name)
    monkeypatch.setenv(PROVIDERS[name].key_env[-1], "sk-from-env")
    assert judge_config(provider=name).resolved_api_key() == "sk-from-env"
    assert judge_config(provider=name, api_key="sk-given").resolved_api_key() == "sk-given"


def test_a_provider_without_a_default_endpoint_needs_base_url() -> None:
    name = _remote(lambda p: p.needs_base_url)
    with pytest.raises(ValueError, match="needs base_url"):
        judge_config(provider=name, model="m", api_key="k")
    assert judge_config(provider=name, model="m", base_url="http://127.0.0.1:9/v1")


def test_a_missing_sdk_is_one_line_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    name = _remote(lambda p: not p.needs_base_url)
    entry = dataclasses.replace(PROVIDERS[name], sdk="no_such_sdk_module.sub", extra="nosuch")
    monkeypatch.setitem(PROVIDERS, name, entry)
    with pytest.raises(ValueError) as refused:
        judge_config(provider=name, api_key="k", model="m")
    message = str(refused.value)
    assert "\n" not in message
    assert message == (f"provider={name!r} needs the no_such_sdk_module.sub SDK: "
                       "pip install 'judge-metrics[nosuch]'")


def test_capability_queries() -> None:
    with_logprobs = registry.with_capability("logprobs")
    assert with_logprobs == tuple(n for n, p in PROVIDERS.items() if p.capabilities.logprobs)
    assert registry.with_capability("batch", "openai") == tuple(
        n for n, p in PROVIDERS.items() if p.capabilities.batch == "openai")


def test_generated_provider_tables_are_up_to_date() -> None:
    from shared.kit.registry import METRICS, available
    from shared.tools import cards, provider_tables

    assert cards.write_cards(check=True) == []
    assert not cards.write_backends_doc(check=True)
    text = cards.BACKENDS_DOC.read_text(encoding="utf-8")
    for name, provider in PROVIDERS.items():
        assert f"| `{name}` ({provider.title}" in text
    with_tables = [n for n in available() if METRICS[n].judge
                   and provider_tables.START in cards.card_path(n).read_text(encoding="utf-8")]
    assert len(with_tables) >= 11
    for name in with_tables:
        card = cards.card_path(name).read_text(encoding="utf-8")
        rows = [line for line in card.split(provider_tables.START)[1].split(
            provider_tables.END)[0].splitlines() if line.startswith("| `")]
        assert [row.split("`")[1] for row in rows] == list(PROVIDERS)


def test_a_card_says_which_providers_a_metric_needs() -> None:
    from shared.tools import provider_tables

    requires = [("top_logprobs", 5)]
    table = provider_tables.card_table(requires)
    for name in PROVIDERS:
        row = next(line for line in table.splitlines() if line.startswith(f"| `{name}`"))
        able = name in registry.providers_with("top_logprobs", 5)
        assert row.endswith("| yes |") == able, row


def test_l3score_refuses_a_provider_without_top_logprobs_before_any_request() -> None:
    import evaluate
    from faultproxy import FaultProxy

    from shared.kit.registry import metric_path

    l3score = evaluate.load(metric_path("l3score"))
    able = registry.providers_with("top_logprobs", 5)
    unable = [n for n in PROVIDERS if n not in able and not PROVIDERS[n].needs_base_url
              and PROVIDERS[n].sdk is None]
    assert unable, "every provider has top-5 log-probabilities: nothing to refuse"
    inputs = {"questions": ["q?"], "predictions": ["a"], "references": ["a"]}
    with FaultProxy(None, default="synthetic") as proxy:
        for name in unable:
            with pytest.raises(ValueError) as refused:
                l3score.compute(**inputs, provider=name, base_url=proxy.url, api_key="k",
                                model="m", use_cache=False, show_progress=False)
            message = str(refused.value)
            assert "top-5 log-probabilities" in message and f"provider={name!r}" in message
            assert message.endswith(", ".join(able))
        assert proxy.seen == []
        # a provider that has them is not refused (the synthetic answer carries them)
        done = l3score.compute(**inputs, provider="openai-compatible", base_url=proxy.url,
                               model="m", use_cache=False, show_progress=False)
        assert done["unmeasured"] == [] and len(proxy.seen) == 1


def test_exact_needs_the_full_distribution() -> None:
    import evaluate

    from shared.kit.registry import metric_path

    full = registry.providers_with("full_distribution")
    assert full == (registry.LOCAL,)
    name = _remote(lambda p: p.capabilities.top_logprobs >= 5 and not p.needs_base_url
                   and p.sdk is None)
    with pytest.raises(ValueError, match="full next-token distribution.*providers that do: "
                       + registry.LOCAL):
        evaluate.load(metric_path("l3score")).compute(
            questions=["q?"], predictions=["a"], references=["a"], exact=True,
            provider=name, api_key="k", base_url="http://127.0.0.1:9/v1", use_cache=False)


def test_a_provider_without_logprobs_is_never_sent_them() -> None:
    from faultproxy import FaultProxy

    from shared import JudgeRequest, get_judge
    from shared.engine.backends.base import LogprobsUnavailable

    name = _remote(lambda p: not p.capabilities.logprobs and p.sdk is None)
    request = JudgeRequest(messages=(("user", "Is 2 > 1? Answer 1 or 2."),), prompt_id="t@1")
    with FaultProxy(None, default="synthetic") as proxy:
        judge = get_judge(judge_config(provider=name, base_url=proxy.url, api_key="k",
                                       model="m", use_cache=False, show_progress=False))
        with pytest.raises(LogprobsUnavailable):
            judge.yes_no([request], top_k=5)
        assert proxy.seen == []
        judge.label_probabilities([request], ["1", "2"])
        assert len(proxy.seen) == 1
        assert "logprobs" not in proxy.seen[0].body and "top_logprobs" not in proxy.seen[0].body


def test_the_provider_of_a_key_without_a_provider_is_decided_once() -> None:
    """``provider_of`` decides it; the configuration, the embedded-judge notes and the compare
    report's judge all ask it (an API key alone means the key-only default)."""
    from shared.analysis.comparison import judge_description

    assert config.provider_of(None) == registry.LOCAL
    assert config.provider_of(None, "k") == registry.KEY_ONLY_DEFAULT
    assert config.provider_of("vllm", "k") == "vllm"
    assert judge_config(api_key="k").provider == registry.KEY_ONLY_DEFAULT
    assert judge_config().is_embedded and not judge_config(api_key="k").is_embedded
    assert not judge_config(judges=[{}, {}]).is_embedded  # a panel is no embedded judge
    assert judge_description({"api_key": "k"})["provider"] == registry.KEY_ONLY_DEFAULT
    assert judge_description({})["embedded_default"]
