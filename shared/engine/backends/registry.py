"""The judge providers: everything a ``provider`` name is, in one entry of :data:`PROVIDERS`.

An entry names the backend class that speaks the provider's protocol, its default endpoint, key
variables and model, what it can do (:class:`Capabilities`) and its prices (:class:`ModelPrice`).
Everything else is derived from the entries: the ``provider`` option's choices, docs and checks
(``shared.engine.config``), prices (``shared.engine.pricing``), the request fields a backend
sends, each metric's capability check, the demo's provider and key fields, and the provider
tables of the metric cards and docs/BACKENDS.md. Adding an OpenAI-compatible host is one entry
here (:func:`openai_compatible_host` for the usual one); a new protocol is one module in this
package plus its entry (docs/BACKENDS.md, "How to add a provider").

:func:`shared.engine.backends.pool.make_backend` imports the named class at the first use of its
provider, so ``import shared`` loads no backend and no SDK.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class ModelPrice:
    """List prices in USD per 1M tokens: ``input`` (prompt tokens at the cache-miss rate),
    ``output`` (completion tokens), ``cached_input`` (prompt tokens read from the provider's
    prompt cache; ``None``: no discount known)."""

    input: float
    output: float
    cached_input: float | None = None


@dataclass(frozen=True)
class Capabilities:
    """What a provider's API can do for a judge.

    ``structured``: how a JSON schema is enforced: ``"json_schema"`` (OpenAI's
    ``response_format``), ``"json_object"`` (``{"type": "json_object", "schema": ...}`` as
    llama-cpp-python's server), ``"json_object_plain"`` (JSON mode without a schema),
    ``"tool"`` (a forced tool call), ``"response_json_schema"`` (Gemini), ``"grammar"`` (the
    local judge's constrained decoding), ``None`` (not at all: the answer is free text).
    ``logprobs``: first-token log-probabilities are returned; ``top_logprobs``: the most
    alternatives per token (0 without log-probabilities); ``full_distribution``: the whole
    next-token distribution is available (the local judge). ``seed``: takes a sampling seed.
    ``batch``: its batch API (``"openai"``: Files + Batches, ``"anthropic"``: Message Batches,
    ``"gemini"``: Batch Mode) or ``None``; ``batch_discount``: the batch price as a fraction of the
    synchronous one. ``prompt_caching``: ``"automatic"``, ``"cache_control"`` (explicit
    breakpoints), ``"implicit"`` or ``None``. ``max_tokens_field``: the request field bounding
    the answer length."""

    structured: str | None
    logprobs: bool
    top_logprobs: int
    seed: bool
    batch: str | None
    prompt_caching: str | None
    max_tokens_field: str = "max_tokens"
    batch_discount: float = 0.5
    full_distribution: bool = False


@dataclass(frozen=True)
class ModelRule:
    """Where some of a provider's models differ from its entry's :class:`Capabilities`: the
    models whose whole name matches ``pattern`` (a regular expression: a family and its dated
    snapshots) have ``changes`` (capability -> value) instead; ``why`` says so in messages."""

    pattern: str
    changes: Mapping[str, Any]
    why: str


def _frozen(prices: Mapping[str, ModelPrice]) -> Mapping[str, ModelPrice]:
    return MappingProxyType(dict(prices))


@dataclass(frozen=True)
class Provider:
    """One provider.

    ``backend``: ``"module:Class"`` of this package; ``title``: its display name;
    ``capabilities``; ``base_url``: its default endpoint (the root its official SDK takes;
    ``base_url_env``: a variable that, when set, gives it instead); ``key_env``: the variables
    its credential may be read from, the first being the one messages name; ``default_model``;
    ``prices``: model -> :class:`ModelPrice` (``"*"``: every model), ``prices_as_of``: the
    month (``YYYY-MM``) they were taken from the provider's pricing page; ``models``: the
    :class:`ModelRule` s of its models that can do less than ``capabilities`` (the first that
    matches a model applies; :meth:`capabilities_of`); ``extra``: the pip extra
    that installs its SDK and ``sdk`` that SDK's import name (``None``: always installed);
    ``needs_base_url``: there is no default endpoint; ``needs_key``: a request without a key is
    refused; ``base_url_doc``: what ``base_url`` is for this provider, for the docs (default:
    for the OpenAI-compatible backend the API root, requests going to
    ``{base_url}/chat/completions``; for another, the root its official SDK takes)."""

    backend: str
    title: str
    capabilities: Capabilities
    base_url: str | None = None
    key_env: tuple[str, ...] = ()
    default_model: str | None = None
    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    extra: str | None = None
    sdk: str | None = None
    needs_base_url: bool = False
    needs_key: bool = True
    base_url_env: str | None = None
    base_url_doc: str | None = None
    prices_as_of: str | None = None
    models: tuple[ModelRule, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "prices", _frozen(self.prices))
        object.__setattr__(self, "key_env", tuple(self.key_env))

    def rule_of(self, model: str | None) -> ModelRule | None:
        """The first of ``models`` that matches ``model`` (``None``: the entry's own)."""
        return next((r for r in self.models if model and re.fullmatch(r.pattern, model)), None)

    def capabilities_of(self, model: str | None) -> Capabilities:
        """What ``model`` of this provider can do: ``capabilities`` with its rule's changes."""
        rule = self.rule_of(model)
        return replace(self.capabilities, **rule.changes) if rule else self.capabilities

    def api_key_from_env(self, environ: Mapping[str, str] | None = None) -> str | None:
        """The first of its key variables that is set, or ``None``."""
        environ = os.environ if environ is None else environ
        for name in self.key_env:
            if environ.get(name):
                return environ[name]
        return None

    def default_base_url(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Its endpoint when ``base_url`` is not given: ``base_url_env`` if set, else
        ``base_url``."""
        environ = os.environ if environ is None else environ
        if self.base_url_env and environ.get(self.base_url_env):
            return environ[self.base_url_env]
        return self.base_url


#: The embedded judge (no network) and the default provider.
LOCAL = "local"
#: The provider meant by an ``api_key`` given without a provider.
KEY_ONLY_DEFAULT = "openai"

_OPENAI_COMPATIBLE = "openai_compat:OpenAICompatBackend"
# OpenAI's Chat Completions: top_logprobs 0-20; reasoning models refuse max_tokens.
_OPENAI_CAPABILITIES = Capabilities(
    structured="json_schema", logprobs=True, top_logprobs=20, seed=True, batch="openai",
    prompt_caching="automatic", max_tokens_field="max_completion_tokens")


def openai_compatible_host(title: str, base_url: str | None, key_env: tuple[str, ...],
                           default_model: str | None = None, *, top_logprobs: int = 20,
                           seed: bool = True, structured: str = "json_schema",
                           prompt_caching: str | None = None, **options: Any) -> Provider:
    """The entry of an OpenAI-compatible host with no batch API (by default JSON-schema answers
    and no known prompt caching): as a self-hosted server (vLLM, llama.cpp's server, LiteLLM)
    speaks OpenAI's protocol. ``top_logprobs``: the most alternatives per token, 0 for a host
    that returns no top log-probabilities; ``seed``: it takes a sampling seed; ``structured``
    and ``prompt_caching``: as in :class:`Capabilities`; ``options``: the entry's other fields
    (``prices``, ``prices_as_of``, ``needs_base_url``, ``needs_key``)."""
    capabilities = Capabilities(structured=structured, logprobs=top_logprobs > 0,
                                top_logprobs=top_logprobs, seed=seed, batch=None,
                                prompt_caching=prompt_caching)
    return Provider(_OPENAI_COMPATIBLE, title, capabilities, base_url, key_env, default_model,
                    **options)


# OpenAI's models that differ from the entry: the reasoning models (o1, o3, o4 and the gpt-5
# families) return no log-probabilities (their Chat Completions refuse logprobs); gpt-4-turbo
# and gpt-3.5-turbo have JSON mode but no json_schema response format, and gpt-4 neither.
_OPENAI_MODELS = (
    ModelRule(r"(o1|o3|o4|gpt-5)([-.].*)?", {"logprobs": False, "top_logprobs": 0},
              "OpenAI's reasoning models return no log-probabilities"),
    ModelRule(r"(gpt-4-turbo|gpt-3\.5-turbo)(-.*)?", {"structured": "json_object_plain"},
              "this model has JSON mode but no JSON-schema answers"),
    ModelRule(r"gpt-4(-\d{4}.*|-32k.*)?", {"structured": None},
              "this model has no JSON mode"),
)

_P = ModelPrice
# List prices, standard tier, as published in August 2025.
_AUGUST_2025 = "2025-08"
#: Anthropic's, Bedrock's and Google's list prices, as published when their entries were
#: written (November 2026).
_NOVEMBER_2026 = "2026-11"
_OPENAI_PRICES = {
    "gpt-5": _P(1.25, 10.00, 0.125),
    "gpt-5-mini": _P(0.25, 2.00, 0.025),
    "gpt-5-nano": _P(0.05, 0.40, 0.005),
    "gpt-4.1": _P(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _P(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _P(0.10, 0.40, 0.025),
    "gpt-4o": _P(2.50, 10.00, 1.25),
    "gpt-4o-mini": _P(0.15, 0.60, 0.075),
    "gpt-4-turbo": _P(10.00, 30.00),
    "gpt-4": _P(30.00, 60.00),
    "gpt-3.5-turbo": _P(0.50, 1.50),
    "o1": _P(15.00, 60.00, 7.50),
    "o3": _P(2.00, 8.00, 0.50),
    "o3-mini": _P(1.10, 4.40, 0.55),
    "o4-mini": _P(1.10, 4.40, 0.275),
}

PROVIDERS: dict[str, Provider] = {
    LOCAL: Provider(
        "local:LocalBackend", "the embedded SmolLM2-135M-Instruct, no network",
        Capabilities(structured="grammar", logprobs=True, top_logprobs=20, seed=False,
                     batch=None, prompt_caching=None, full_distribution=True),
        prices={"*": _P(0.0, 0.0)}, needs_key=False,
        base_url_doc="none: the model runs in this process (`model`: a folder, a cached Hub id "
        "or a `.gguf` file)"),
    "openai": Provider(
        _OPENAI_COMPATIBLE, "OpenAI", _OPENAI_CAPABILITIES, "https://api.openai.com/v1",
        ("OPENAI_API_KEY",), "gpt-4o-mini", _OPENAI_PRICES, prices_as_of=_AUGUST_2025,
        models=_OPENAI_MODELS),
    # DeepSeek: JSON mode without a schema, no seed; automatic context caching on disk.
    "deepseek": openai_compatible_host(
        "DeepSeek", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",), "deepseek-chat",
        seed=False, structured="json_object_plain", prompt_caching="automatic",
        prices={"deepseek-chat": _P(0.27, 1.10, 0.07),
                "deepseek-reasoner": _P(0.55, 2.19, 0.14)},
        prices_as_of=_AUGUST_2025),
    # xAI: top_logprobs 0-8.
    "xai": openai_compatible_host(
        "xAI", "https://api.x.ai/v1", ("XAI_API_KEY",), "grok-3-mini", top_logprobs=8,
        prompt_caching="automatic",
        prices={"grok-4": _P(3.00, 15.00, 0.75), "grok-3": _P(3.00, 15.00, 0.75),
                "grok-3-mini": _P(0.30, 0.50, 0.075), "grok-2": _P(2.00, 10.00)},
        prices_as_of=_AUGUST_2025),
    "openai-compatible": openai_compatible_host(
        "any OpenAI-compatible server", None, ("OPENAI_COMPATIBLE_API_KEY",),
        needs_base_url=True, needs_key=False),
    # Anthropic's Messages API: structured answers through a forced tool call, no
    # log-probabilities, no sampling parameters; Message Batches; cache_control breakpoints.
    "anthropic": Provider(
        "anthropic_messages:AnthropicBackend", "Anthropic",
        Capabilities(structured="tool", logprobs=False, top_logprobs=0, seed=False,
                     batch="anthropic", prompt_caching="cache_control"),
        "https://api.anthropic.com", ("ANTHROPIC_API_KEY",), "claude-haiku-4-5",
        {"claude-haiku-4-5": _P(1.00, 5.00, 0.10),
         "claude-haiku-4-5-20251001": _P(1.00, 5.00, 0.10),
         "claude-sonnet-4-6": _P(3.00, 15.00, 0.30),
         "claude-sonnet-4-5": _P(3.00, 15.00, 0.30),
         "claude-sonnet-4-5-20250929": _P(3.00, 15.00, 0.30),
         "claude-opus-4-6": _P(5.00, 25.00, 0.50),
         "claude-opus-4-5": _P(5.00, 25.00, 0.50),
         "claude-opus-4-5-20251101": _P(5.00, 25.00, 0.50),
         "claude-opus-4-1": _P(15.00, 75.00, 1.50),
         "claude-opus-4-1-20250805": _P(15.00, 75.00, 1.50)},
        extra="anthropic", sdk="anthropic", base_url_env="ANTHROPIC_BASE_URL",
        prices_as_of=_NOVEMBER_2026),
    # Azure OpenAI: base_url is the resource endpoint (https://RESOURCE.openai.azure.com, or its
    # v1 route .../openai/v1); model is the deployment name. Azure's Global Batch is 50% off.
    "azure": Provider(
        "azure_openai:AzureOpenAIBackend", "Azure OpenAI", _OPENAI_CAPABILITIES,
        key_env=("AZURE_OPENAI_API_KEY",), needs_base_url=True,
        base_url_env="AZURE_OPENAI_ENDPOINT",
        base_url_doc="the resource endpoint `https://RESOURCE.openai.azure.com` (requests to "
        "`/openai/deployments/{model}/chat/completions?api-version=...`), or its v1 route "
        "`.../openai/v1`; `model` is the deployment name"),
    # Amazon Bedrock's Converse API: a forced tool in toolConfig, no log-probabilities. The
    # standard AWS credential chain (so no key is required here) or a Bedrock API key
    # (AWS_BEARER_TOKEN_BEDROCK, or api_key); the endpoint follows AWS_REGION. Claude's global
    # inference profiles cost Anthropic's prices, the geographic ones 10% more.
    "bedrock": Provider(
        "bedrock:BedrockBackend", "Amazon Bedrock",
        Capabilities(structured="tool", logprobs=False, top_logprobs=0, seed=False,
                     batch=None, prompt_caching=None, max_tokens_field="maxTokens"),
        None, ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
               "AWS_SESSION_TOKEN"),
        "global.anthropic.claude-haiku-4-5-20251001-v1:0",
        {"global.anthropic.claude-haiku-4-5-20251001-v1:0": _P(1.00, 5.00, 0.10),
         "us.anthropic.claude-haiku-4-5-20251001-v1:0": _P(1.10, 5.50, 0.11),
         "eu.anthropic.claude-haiku-4-5-20251001-v1:0": _P(1.10, 5.50, 0.11),
         "global.anthropic.claude-sonnet-4-5-20250929-v1:0": _P(3.00, 15.00, 0.30),
         "us.anthropic.claude-sonnet-4-5-20250929-v1:0": _P(3.30, 16.50, 0.33),
         "eu.anthropic.claude-sonnet-4-5-20250929-v1:0": _P(3.30, 16.50, 0.33),
         "amazon.nova-micro-v1:0": _P(0.035, 0.14, 0.00875),
         "amazon.nova-lite-v1:0": _P(0.06, 0.24, 0.015),
         "amazon.nova-pro-v1:0": _P(0.80, 3.20, 0.20)},
        extra="bedrock", sdk="boto3", needs_key=False, prices_as_of=_NOVEMBER_2026),
    # Hugging Face Inference Providers: one OpenAI-compatible router in front of many hosts; what
    # a model can do depends on the host serving it.
    "huggingface": openai_compatible_host(
        "Hugging Face Inference Providers", "https://router.huggingface.co/v1",
        ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"), "openai/gpt-oss-120b"),
    # Presets: OpenAI-compatible hosts, each as its documentation describes it.
    # Mistral: the seed field is called random_seed, and there are no log-probabilities.
    "mistral": openai_compatible_host(
        "Mistral AI", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",), "mistral-small-latest",
        top_logprobs=0, seed=False),
    # Groq refuses logprobs and top_logprobs with HTTP 400.
    "groq": openai_compatible_host(
        "Groq", "https://api.groq.com/openai/v1", ("GROQ_API_KEY",), "llama-3.3-70b-versatile",
        top_logprobs=0),
    # Together returns the chosen tokens' log-probabilities, not the top alternatives.
    "together": openai_compatible_host(
        "Together AI", "https://api.together.ai/v1", ("TOGETHER_API_KEY",),
        "meta-llama/Llama-3.3-70B-Instruct-Turbo", top_logprobs=0),
    # OpenRouter passes logprobs and top_logprobs to the hosts that take them.
    "openrouter": openai_compatible_host(
        "OpenRouter", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",),
        "openai/gpt-4o-mini"),
    # Fireworks: top_logprobs 0-5.
    "fireworks": openai_compatible_host(
        "Fireworks AI", "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",),
        "accounts/fireworks/models/llama-v3p3-70b-instruct", top_logprobs=5),
    # Local servers at their default ports; a key only when the server was started with one.
    "ollama": openai_compatible_host(
        "Ollama", "http://localhost:11434/v1", ("OLLAMA_API_KEY",), needs_key=False),
    "vllm": openai_compatible_host(
        "vLLM", "http://localhost:8000/v1", ("VLLM_API_KEY",), needs_key=False),
    # Gemini API generateContent: responseJsonSchema; responseLogprobs with logprobs 0-20;
    # implicit context caching; Batch Mode (batchGenerateContent) at 50% of the standard
    # price, as Google's pricing page gives it. The SDK reads GOOGLE_API_KEY too. Prices:
    # Google's list prices (standard tier, prompts up to 200k tokens).
    "gemini": Provider(
        "gemini:GeminiBackend", "Google Gemini",
        Capabilities(structured="response_json_schema", logprobs=True, top_logprobs=20,
                     seed=True, batch="gemini", prompt_caching="implicit",
                     max_tokens_field="maxOutputTokens"),
        "https://generativelanguage.googleapis.com", ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
        "gemini-3.5-flash",
        {"gemini-3.5-flash": _P(1.50, 9.00, 0.15),
         "gemini-3-flash-preview": _P(0.50, 3.00, 0.05),
         "gemini-3.1-flash-lite": _P(0.25, 1.50),
         "gemini-3.1-pro-preview": _P(2.00, 12.00, 0.20)},
        extra="gemini", sdk="google.genai", prices_as_of=_NOVEMBER_2026),
}


def provider_names(where: Callable[[Provider], bool] | None = None) -> tuple[str, ...]:
    """The provider names, in registry order; with ``where``, those whose entry it accepts."""
    return tuple(name for name, p in PROVIDERS.items() if where is None or where(p))


def with_capability(name: str, value: object = True) -> tuple[str, ...]:
    """The providers whose capability ``name`` is ``value`` (for ``True``: is truthy), e.g.
    ``with_capability("logprobs")``."""
    if value is True:
        return provider_names(lambda p: bool(getattr(p.capabilities, name)))
    return provider_names(lambda p: getattr(p.capabilities, name) == value)


def key_variables() -> tuple[str, ...]:
    """Every provider's key variables, each once, in registry order."""
    return tuple(dict.fromkeys(name for p in PROVIDERS.values() for name in p.key_env))


def providers_with(capability: str, minimum: bool | int = True) -> tuple[str, ...]:
    """The providers whose capability ``capability`` is at least ``minimum`` (``True``: set at
    all; a number: that many, as ``top_logprobs``)."""
    return provider_names(lambda p: has_capability(p.capabilities, capability, minimum))


_CAPABILITY_WORDS = {
    "logprobs": "log-probabilities",
    "top_logprobs": "top-{n} log-probabilities",
    "full_distribution": "full next-token distribution (log-probabilities of every token)",
    "seed": "sampling seed",
    "structured": "schema-constrained answers",
    "batch": "batch API",
}


def has_capability(capabilities: Capabilities, capability: str,
                   minimum: bool | int = True) -> bool:
    """Whether ``capabilities`` have ``capability`` at least ``minimum`` (``True``: set at all;
    a number: that many, as ``top_logprobs``)."""
    value = getattr(capabilities, capability)
    if isinstance(minimum, bool):
        return bool(value)
    return isinstance(value, int) and value >= minimum


def require(provider: str, capability: str, purpose: str, minimum: bool | int = True,
            model: str | None = None) -> None:
    """Refuse, before any request, a judge whose provider (or, where the provider's models
    differ, whose ``model``) lacks ``capability`` (at least ``minimum``): a one-line
    ``ValueError`` naming ``purpose``, the missing capability and the providers that have it."""
    entry, rule = PROVIDERS[provider], PROVIDERS[provider].rule_of(model)
    words = _CAPABILITY_WORDS.get(capability, capability).format(n=minimum)
    others = ", ".join(providers_with(capability, minimum))
    if not has_capability(entry.capabilities, capability, minimum):
        raise ValueError(f"{purpose} needs the judge's {words} (capability {capability}), "
                             f"which provider={provider!r} does not return; providers that do: "
                             f"{others}")
    if not has_capability(entry.capabilities_of(model), capability, minimum):
        raise ValueError(f"{purpose} needs the judge's {words} (capability {capability}), "
                             f"which model {model!r} of provider={provider!r} does not return "
                             f"({rule.why if rule else ''}); choose another model "
                             f"(e.g. {entry.default_model}) or a provider that does: {others}")
