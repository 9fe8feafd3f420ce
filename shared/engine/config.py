"""The judge's configuration: :class:`JudgeConfig` (the fields of the judge options declared in
:mod:`.judge_options`), the one converter of judge options to it (:func:`judge_config`), a
panel's per-judge configs, and the rules between options.

Each option is checked once, by its declaration (``Option.validate``: type, range, choices, a
custom check), when a :class:`JudgeConfig` is made; ``_validate`` adds only the rules between
options (what a provider needs). Backends trust the config they are given. Every
:class:`JudgeConfig` made from a dict of options is made by :func:`judge_config` (a test of
tests/shared/test_judge_carrier.py fails on any other)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ..base.options import refuse_unknown
from ..base.redaction import redact
from .backends.registry import KEY_ONLY_DEFAULT, LOCAL, Capabilities, require
from .endpoints import BASE_URL_EXAMPLE, check_base_url, endpoint_of
from .judge_options import (
    DEFAULTS,
    JUDGE_OPTION_NAMES,
    JUDGE_OPTIONS,
    PANEL_AGGREGATES,
    PANEL_OPTION_NAMES,
    PROVIDER_BOUND_OPTION_NAMES,
    PROVIDERS,
    RESPONSE_FORMATS,
    RUN_OPTION_NAMES,
)

# the names imported from here before the declarations had a module of their own
__all__ = ["JUDGE_OPTIONS", "JUDGE_OPTION_NAMES", "PANEL_AGGREGATES", "PANEL_OPTION_NAMES",
           "PROVIDERS", "PROVIDER_BOUND_OPTION_NAMES", "RESPONSE_FORMATS", "RUN_OPTION_NAMES",
           "JudgeConfig", "check_base_url", "check_sdk", "endpoint_of", "judge_config",
           "judge_configs", "judge_options_of", "provider_of"]


@dataclass
class JudgeConfig:
    """Where and how to call the judge (the fields and defaults of ``JUDGE_OPTIONS``).
    ``api_key`` never enters a repr, a log or a cache key."""

    provider: str = DEFAULTS["provider"]
    model: str | None = DEFAULTS["model"]
    api_key: str | None = field(default=DEFAULTS["api_key"], repr=False)
    base_url: str | None = DEFAULTS["base_url"]
    max_concurrency: int = DEFAULTS["max_concurrency"]
    use_cache: bool = DEFAULTS["use_cache"]
    cache_dir: str | None = DEFAULTS["cache_dir"]
    show_progress: bool = DEFAULTS["show_progress"]
    timeout: float = DEFAULTS["timeout"]
    max_retries: int = DEFAULTS["max_retries"]
    max_requests_per_minute: float | None = DEFAULTS["max_requests_per_minute"]
    max_tokens_per_minute: float | None = DEFAULTS["max_tokens_per_minute"]
    response_format: str | None = DEFAULTS["response_format"]
    device: str | None = DEFAULTS["device"]
    batch_size: int = DEFAULTS["batch_size"]
    dry_run: bool = DEFAULTS["dry_run"]
    batch: bool = DEFAULTS["batch"]
    retry_unmeasured: bool = DEFAULTS["retry_unmeasured"]
    judges: tuple[dict[str, Any], ...] | None = field(default=DEFAULTS["judges"], repr=False)
    panel_aggregate: str = DEFAULTS["panel_aggregate"]

    def __post_init__(self) -> None:
        for option in JUDGE_OPTIONS:
            setattr(self, option.name, option.validate(getattr(self, option.name)))
        _validate(self)

    def __repr__(self) -> str:
        """Every field but the API key; the base URL through the redaction step (its query may
        hold a token)."""
        shown = {f.name: getattr(self, f.name) for f in fields(self) if f.repr}
        if shown.get("base_url"):
            shown["base_url"] = redact(shown["base_url"])
        if self.judges:  # each judge as its own config shows it: no key
            shown["judges"] = judge_configs(self)
        return f"JudgeConfig({', '.join(f'{name}={value!r}' for name, value in shown.items())})"

    def resolved_api_key(self) -> str | None:
        if self.api_key:
            return self.api_key
        return PROVIDERS[self.provider].api_key_from_env()

    def resolved_base_url(self) -> str | None:
        return self.base_url or PROVIDERS[self.provider].default_base_url()

    def resolved_model(self) -> str | None:
        return self.model or PROVIDERS[self.provider].default_model

    def capabilities(self) -> Capabilities:
        """What this judge can do: its provider's capabilities, as its model has them (a
        provider's models can differ: ``Provider.models``)."""
        return PROVIDERS[self.provider].capabilities_of(self.resolved_model())

    def require(self, capability: str, purpose: str, minimum: bool | int = True) -> None:
        """Refuse (one-line ``ValueError``, before any request) a judge whose provider or model
        lacks ``capability``: :func:`.backends.registry.require`."""
        require(self.provider, capability, purpose, minimum, self.resolved_model())

    def resolved_response_format(self) -> str | None:
        return self.response_format or self.capabilities().structured

    def backend_settings(self) -> dict[str, Any]:
        """Every option a backend is built from (all but the runner's ``RUN_OPTION_NAMES``), the
        provider's defaults filled in; the API key left out (never a key of anything)."""
        resolved = {"model": self.resolved_model(), "base_url": self.resolved_base_url(),
                    "response_format": self.resolved_response_format()}
        return {f.name: resolved.get(f.name, getattr(self, f.name)) for f in fields(self)
                if f.name not in RUN_OPTION_NAMES | PANEL_OPTION_NAMES and f.name != "api_key"}

    @property
    def is_embedded(self) -> bool:
        """The embedded default judge (the local provider, no model named), one judge, not a
        panel: the one predicate of the notes, reports and demo that speak of it."""
        return self.provider == LOCAL and not self.model and not self.judges

    def options(self) -> dict[str, Any]:
        """The judge options that make this config again through :func:`judge_config`: every
        option off its default (the provider too, unless :func:`provider_of` would choose it
        from the rest): what a run hands each metric's ``compute``, which converts them back;
        a metric's own judge options (``--option l3score.model=...``) go on top of them."""
        given = {f.name: getattr(self, f.name) for f in fields(self)
                 if f.name != "provider" and getattr(self, f.name) != DEFAULTS[f.name]}
        if given.get("judges") is not None:
            given["judges"] = [dict(entry) for entry in given["judges"]]
        if self.provider != provider_of(None, given.get("api_key")):
            given["provider"] = self.provider
        return given


def provider_of(provider: str | None, api_key: str | None = None) -> str:
    """The provider a judge's options select, decided here once: ``provider``; without one, as
    in the L3Score card, ``"openai"`` when an ``api_key`` is given, else the embedded judge."""
    return provider or (KEY_ONLY_DEFAULT if api_key else LOCAL)


def judge_config(options: Mapping[str, Any] | None = None, /, **more: Any) -> JudgeConfig:
    """The one converter of judge options to a :class:`JudgeConfig` (checked as it is made):
    every front end's judge (the CLI's arguments, the demo's fields, the integrations' keyword
    arguments, ``compute(**kwargs)``, ``score_dataset(**options)``) is made here, from a dict
    (``options``), keyword arguments (``more``) or both.

    ``None`` means the default. ``provider`` defaults to ``"local"``; as in the L3Score card, an
    ``api_key`` with no provider means ``"openai"``. An option that is no judge option is an
    :class:`~shared.base.errors.UnknownOptionError` naming the nearest one; a bad value a
    ``ValueError``/``TypeError`` naming the option."""
    given = {**(options or {}), **more}
    refuse_unknown("the judge", given, JUDGE_OPTION_NAMES)
    given = {k: v for k, v in given.items() if v is not None}
    given["provider"] = provider_of(given.get("provider"), given.get("api_key"))
    return JudgeConfig(**given)


def judge_options_of(options: Mapping[str, Any]) -> dict[str, Any]:
    """The judge options among ``options`` (a metric's, the embedding's and the judge's mixed,
    as ``compute`` and a run take them): the one filter by the judge options' names."""
    return {name: value for name, value in options.items() if name in JUDGE_OPTION_NAMES}


def judge_configs(config: JudgeConfig) -> list[JudgeConfig]:
    """The config of each judge of ``config``'s panel, in the order of ``judges`` (``[config]``
    without a panel). A judge takes every top-level option it does not set, except the
    provider-bound ones (``PROVIDER_BOUND_OPTION_NAMES``), which it takes only when it names no
    provider or the top level's. Raises ``TypeError``/``ValueError`` naming ``judges[i]``."""
    if not config.judges:
        return [config]
    top = {f.name: getattr(config, f.name) for f in fields(config)
           if f.name not in PANEL_OPTION_NAMES}
    configs = []
    for index, entry in enumerate(config.judges):
        options = dict(top)
        if entry.get("provider", config.provider) != config.provider:
            for name in PROVIDER_BOUND_OPTION_NAMES:
                options.pop(name)
        options.update(entry)
        try:
            configs.append(judge_config(**options))
        except (TypeError, ValueError) as error:
            raise type(error)(f"judges[{index}]: {error}") from None
    return configs


def _validate(config: JudgeConfig) -> None:
    """The rules between options (each option alone is checked by its declaration), all read
    from the provider's registry entry."""
    if config.judges:  # the top level only gives defaults: each judge is checked in full
        judge_configs(config)
        return
    name, provider = config.provider, PROVIDERS[config.provider]
    if config.batch and provider.capabilities.batch is None:
        having = [n for n, p in PROVIDERS.items() if p.capabilities.batch is not None]
        raise ValueError(f"provider={name!r} has no batch API; batch=True needs one of "
                         f"{', '.join(having)}")
    if name == LOCAL:
        _check_local_model(config.model)
        return
    check_sdk(name)
    if provider.needs_base_url and not config.resolved_base_url():
        also = f" or set {provider.base_url_env}" if provider.base_url_env else ""
        raise ValueError(f"provider={name!r} needs base_url (e.g. {BASE_URL_EXAMPLE}){also}")
    if not config.base_url and config.resolved_base_url():  # from the environment or registry
        try:
            check_base_url(config.resolved_base_url() or "")
        except ValueError as error:
            source = provider.base_url_env or "the provider's default"
            raise ValueError(f"{source}: {error}") from None
    if provider.needs_key and not (config.resolved_api_key() or "").strip():
        blank = " (the key given is blank)" if config.resolved_api_key() else ""
        raise ValueError(f"provider={name!r} needs an API key{blank}: pass api_key=... or set "
                         f"{provider.key_env[0]}")
    if not config.resolved_model():
        raise ValueError(f"provider={name!r} needs model=... (the judge model's name)")
    from .backends.classes import backend_class

    backend_class(name).check_config(config)


def check_sdk(name: str) -> None:
    """Refuse ``provider=name`` when its SDK is not installed: one line naming the pip extra."""
    provider = PROVIDERS[name]
    if provider.sdk is None or _importable(provider.sdk):
        return
    install = f"pip install 'judge-metrics[{provider.extra}]'" if provider.extra else \
        f"pip install {provider.sdk.split('.')[0]}"
    raise ValueError(f"provider={name!r} needs the {provider.sdk} SDK: {install}")


def _importable(module: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, a broken install
        return False


def _check_local_model(model: str | None) -> None:
    """A local ``model`` written as a path (a ``.gguf`` name, an absolute or ``./`` path) must
    exist: found now, not after the other metrics of a batch have run. A hub id is looked up
    when the model loads (in the local Hugging Face cache only)."""
    if model is None:
        return
    from pathlib import Path

    path = Path(model).expanduser()
    looks_like_path = (path.suffix.lower() == ".gguf" or path.is_absolute()
                       or model.startswith((".", "~")))
    if looks_like_path and not path.exists():
        raise ValueError(f"model={model!r}: no such model file or folder")
