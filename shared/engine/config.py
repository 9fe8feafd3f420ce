"""Judge options shared by every judge metric: their declarations (``JUDGE_OPTIONS``), the
:class:`JudgeConfig` they fill, and its validation.

Each option is checked once, by its declaration (``Option.validate``: type, range, choices, a
custom check), when a :class:`JudgeConfig` is made; ``_validate`` adds only the rules between
options (what a provider needs). Backends trust the config they are given."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any
from urllib.parse import urlparse, urlsplit

from ..base.options import Option
from ..base.redaction import has_userinfo, redact
from .backends import registry
from .backends.registry import KEY_ONLY_DEFAULT, LOCAL, Capabilities, Provider, require

#: The providers (name -> backend class, defaults, capabilities, prices), from the registry.
PROVIDERS: dict[str, Provider] = registry.PROVIDERS

#: Structured-output styles (the ``response_format`` judge option); see
#: ``shared.engine.backends.openai_compat`` for the request field each one sends.
RESPONSE_FORMATS = ("json_schema", "json_object", "json_object_plain", "none")
_BASE_URL_EXAMPLE = "'http://127.0.0.1:8000/v1'"

#: How a panel's per-sample score is made from its judges' scores (``panel_aggregate``).
PANEL_AGGREGATES = ("mean", "median", "majority")
#: The options of a whole panel, never of one of its judges.
PANEL_OPTION_NAMES = frozenset({"judges", "panel_aggregate"})
#: The options a judge of a panel inherits from the top level only when it names the top
#: level's provider (or none): another provider's key must never reach this one's endpoint.
PROVIDER_BOUND_OPTION_NAMES = ("model", "api_key", "base_url")

def _provider_doc() -> str:
    names = ", ".join(f'"{name}"' + (f" ({p.title})" if name == LOCAL else "")
                      for name, p in PROVIDERS.items())
    return (f"the judge's provider (the cards' provider table): {names}; an api_key given "
            f'without a provider means "{KEY_ONLY_DEFAULT}"')


def _model_doc() -> str:
    defaults = ", ".join(f"{p.default_model} ({name})" for name, p in PROVIDERS.items()
                         if p.default_model)
    required = ", ".join(name for name, p in PROVIDERS.items()
                         if not p.default_model and name != LOCAL)
    return (f"the judge model; default: {defaults}, the embedded SmolLM2-135M-Instruct ({LOCAL}); "
            f"for {LOCAL} also a model folder, a cached Hub id or a .gguf file; required for "
            f"{required}")


def _api_key_doc() -> str:
    return ("the provider's API key; better: its environment variable ("
            + ", ".join(registry.key_variables()) + ")")


def _base_url_doc() -> str:
    needed = ", ".join(registry.provider_names(lambda p: p.needs_base_url))
    return (f"the server's URL (the root its official SDK takes), to reach a proxy or a test "
            f"server; default: the provider's; required for {needed} (e.g. "
            f'"http://127.0.0.1:8000/v1")')


def _base_url_option(name: str, value: Any) -> str | None:
    if value is not None:
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a string, got {type(value).__name__}")
        check_base_url(value)
    return value


def _judges_option(name: str, value: Any) -> tuple[dict[str, Any], ...] | None:
    """``judges``: ``None`` (one judge) or a non-empty list of dicts of judge options (each
    checked when the panel's configs are made, :func:`judge_configs`)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a list of dicts of judge options, got "
                        f"{type(value).__name__}")
    entries = list(value)
    if not entries:
        raise ValueError(f"{name} must list at least one judge (a dict of judge options)")
    for index, entry in enumerate(entries):
        if not isinstance(entry, Mapping):
            raise TypeError(f"{name}[{index}] must be a dict of judge options, got "
                            f"{type(entry).__name__}")
        panel_wide = sorted(PANEL_OPTION_NAMES & set(entry))
        if panel_wide:
            raise ValueError(f"{name}[{index}]: {', '.join(panel_wide)} is an option of the "
                             "whole panel, not of one judge")
    return tuple(dict(entry) for entry in entries)


def _positive_seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{name} must be a positive number of seconds, got {value}")
    return float(value)


JUDGE_OPTIONS: tuple[Option, ...] = (
    Option("provider", str, LOCAL, choices=tuple(PROVIDERS), cli="--provider",
           doc=_provider_doc()),
    Option("model", str, None, nullable=True, cli="--model", doc=_model_doc()),
    Option("api_key", str, None, nullable=True, cli="--api-key", doc=_api_key_doc()),
    Option("base_url", str, None, nullable=True, check=_base_url_option, cli="--base-url",
           doc=_base_url_doc()),
    Option("max_concurrency", int, 16, range=(1, None), cli="--max-concurrency", metavar="N",
           doc="judge requests in flight at once"),
    Option("use_cache", bool, True, cli="--no-cache",
           doc="read and write the on-disk call cache (without it a killed run cannot resume)"),
    Option("cache_dir", str, None, nullable=True, cli="--cache-dir",
           doc="call cache folder; default: $JUDGE_METRICS_CACHE_DIR or ~/.cache/judge-metrics"),
    Option("show_progress", bool, True, doc="show progress bars"),
    Option("timeout", float, 60.0, check=_positive_seconds, type_doc="float > 0", cli="--timeout",
           metavar="SECONDS", doc="seconds per judge request"),
    Option("max_retries", int, 3, range=(0, None),
           doc="retries on 5xx/timeouts; 429s: docs/RELIABILITY.md, under load"),
    Option("max_requests_per_minute", float, None, nullable=True, range=(0.001, None),
           type_doc="float > 0 or None", cli="--max-requests-per-minute", metavar="N",
           doc="cap the judge's requests per minute up front; default: its announced limit"),
    Option("max_tokens_per_minute", float, None, nullable=True, range=(1, None), metavar="N",
           cli="--max-tokens-per-minute", doc="cap the judge's (estimated) tokens per minute up "
           "front; default: as announced"),
    Option("response_format", str, None, nullable=True, choices=RESPONSE_FORMATS,
           cli="--response-format", metavar="STYLE",
           doc="override how the server takes a JSON schema: json_schema (OpenAI, vLLM, xAI), "
           "json_object (llama-cpp-python's server), json_object_plain or none; default: the "
           "provider's"),
    Option("device", str, None, nullable=True, doc='local judge: the torch device ("cpu", '
           '"cuda", ...); default: the best available'),
    Option("batch_size", int, 32, range=(1, None), doc="local judge: prompts decoded together"),
    Option("dry_run", bool, False, cli="--dry-run",
           doc="send nothing; report the planned judge requests and their estimated cost (under "
           "dry_run)"),
    Option("batch", bool, False, cli="--batch",
           doc="send the judge requests through the provider's batch API (half the price, "
           "answers within hours): one batch per step round; an interrupted run re-attaches to "
           "its pending batch"),
    Option("retry_unmeasured", bool, False, cli="--retry-unmeasured",
           doc="ask again the requests whose cached answer the checks refused (by default a "
           "refused answer is cached like any other and a rerun sends nothing)"),
    Option("judges", list, None, nullable=True, check=_judges_option,
           type_doc="list of dict or None", cli="--judge", metavar="SPEC",
           doc="a panel of judges: one dict of judge options per judge (provider, model, "
           "base_url, api_key, ...), each judging every sample; an option a judge leaves out "
           "comes from the top level (model, api_key and base_url only when it names "
           "the top level's provider or none); adds details[i]['judge_scores'], "
           "judges (each judge's results, usage and Cost) and judge_agreement (Krippendorff's "
           "alpha among the judges); None: one judge (docs/PANEL.md)"),
    Option("panel_aggregate", str, "mean", choices=PANEL_AGGREGATES, cli="--panel-aggregate",
           metavar="HOW",
           doc="a panel's per-sample score from its judges' scores: mean, median, or majority "
           "(0/1 scores only; a tie scores 0.5)"),
)
JUDGE_OPTION_NAMES = tuple(option.name for option in JUDGE_OPTIONS)
#: The options the runner reads (caching, progress, dry run); every other one shapes the
#: backend, and the backend pool keys on them (:meth:`JudgeConfig.backend_settings`).
RUN_OPTION_NAMES = frozenset({"use_cache", "cache_dir", "show_progress", "dry_run",
                              "retry_unmeasured"})
_DEFAULT = {option.name: option.default for option in JUDGE_OPTIONS}


@dataclass
class JudgeConfig:
    """Where and how to call the judge (the fields and defaults of ``JUDGE_OPTIONS``).
    ``api_key`` never enters a repr, a log or a cache key."""

    provider: str = _DEFAULT["provider"]
    model: str | None = _DEFAULT["model"]
    api_key: str | None = field(default=_DEFAULT["api_key"], repr=False)
    base_url: str | None = _DEFAULT["base_url"]
    max_concurrency: int = _DEFAULT["max_concurrency"]
    use_cache: bool = _DEFAULT["use_cache"]
    cache_dir: str | None = _DEFAULT["cache_dir"]
    show_progress: bool = _DEFAULT["show_progress"]
    timeout: float = _DEFAULT["timeout"]
    max_retries: int = _DEFAULT["max_retries"]
    max_requests_per_minute: float | None = _DEFAULT["max_requests_per_minute"]
    max_tokens_per_minute: float | None = _DEFAULT["max_tokens_per_minute"]
    response_format: str | None = _DEFAULT["response_format"]
    device: str | None = _DEFAULT["device"]
    batch_size: int = _DEFAULT["batch_size"]
    dry_run: bool = _DEFAULT["dry_run"]
    batch: bool = _DEFAULT["batch"]
    retry_unmeasured: bool = _DEFAULT["retry_unmeasured"]
    judges: tuple[dict[str, Any], ...] | None = field(default=_DEFAULT["judges"], repr=False)
    panel_aggregate: str = _DEFAULT["panel_aggregate"]

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


def provider_of(provider: str | None, api_key: str | None = None) -> str:
    """The provider a judge's options select, decided here once: ``provider``; without one, as
    in the L3Score card, ``"openai"`` when an ``api_key`` is given, else the embedded judge."""
    return provider or (KEY_ONLY_DEFAULT if api_key else LOCAL)


def judge_config(**options: Any) -> JudgeConfig:
    """Build a :class:`JudgeConfig` (checked as it is made) from a metric's keyword arguments.

    ``None`` means the default. ``provider`` defaults to ``"local"``; as in the L3Score card, an
    ``api_key`` with no provider means ``"openai"``. Raises ``ValueError``/``TypeError`` naming
    the bad option.
    """
    unknown = set(options) - set(JUDGE_OPTION_NAMES)
    if unknown:
        raise TypeError(f"unknown judge option(s): {', '.join(sorted(unknown))}")
    options = {k: v for k, v in options.items() if v is not None}
    options["provider"] = provider_of(options.get("provider"), options.get("api_key"))
    return JudgeConfig(**options)


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
        raise ValueError(f"provider={name!r} needs base_url (e.g. {_BASE_URL_EXAMPLE}){also}")
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


def check_base_url(url: str) -> None:
    """Refuse a ``base_url`` that is not ``http(s)://host[:port][/path]``: a bad scheme, no host,
    a port that is not a number in 1-65535, or credentials (``user:password@``). Credentials in
    the URL are never sent (httpx would send them as Basic auth instead of the API key); the
    error shows the URL with them masked."""
    shown = redact(url)
    example = "(e.g. 'http://127.0.0.1:8000/v1')"
    try:
        parsed = urlsplit(url)
    except ValueError as error:
        raise ValueError(f"base_url={shown!r} is not a valid URL ({redact(str(error))}) "
                         f"{example}") from None
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError(f"base_url={shown!r} is not an http(s) URL {example}")
    if has_userinfo(url):
        raise ValueError(
            f"base_url={shown!r} holds credentials (a user name or password before the host); "
            "they are not sent. Remove them and pass the key with api_key=... (--api-key) or the "
            "provider's environment variable"
        )
    if not parsed.hostname or any(c.isspace() for c in url):
        raise ValueError(f"base_url={shown!r} has no valid host {example}")
    try:
        port = parsed.port
    except ValueError:
        port = -1
    if port is not None and not 1 <= port <= 65535:
        raise ValueError(f"base_url={shown!r}: the port must be a number from 1 to 65535 "
                         f"{example}")


def endpoint_of(url: str | None) -> str:
    """The URL without credentials or fragment, normalised (lower-case scheme and host, no
    default port, no trailing slash), its query kept (a query such as Azure's ``api-version``
    selects what answers): what the call cache keys on."""
    if not url:
        return ""
    parsed = urlparse(url)
    scheme = parsed.scheme.lower()
    host = (parsed.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parsed.port
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host = f"{host}:{port}"
    query = f"?{parsed.query}" if parsed.query else ""
    return f"{scheme}://{host}{parsed.path.rstrip('/')}{query}"
