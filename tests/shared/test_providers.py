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
