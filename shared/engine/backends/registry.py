"""The judge providers: for each ``provider`` name, the backend class that talks to it and the
provider's defaults. Adding a provider is one entry here; adding a backend is one module in
this package plus its entry (docs/BACKENDS.md, "How to add a backend").

``shared.engine.config`` derives the ``provider`` option's choices and the providers' defaults
from :data:`PROVIDERS`; :func:`shared.engine.backends.make_backend` imports the named class at
the first use of its provider, so ``import shared`` loads no backend.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Provider:
    """One provider. ``backend``: ``"module:Class"`` of this package. ``base_url``: its default
    endpoint; ``key_env``: the environment variable holding its API key; ``default_model``;
    ``response_format``: how its server takes a JSON schema (``"json_schema"`` as OpenAI and
    vLLM, ``"json_object"`` with a ``"schema"`` field as llama-cpp-python's server,
    ``"json_object_plain"`` without one as DeepSeek, ``None``: not at all); ``seed``: whether it
    takes a sampling seed."""

    backend: str
    base_url: str | None = None
    key_env: str | None = None
    default_model: str | None = None
    response_format: str | None = None
    seed: bool = False


_OPENAI_COMPATIBLE = "openai_compat:OpenAICompatBackend"

PROVIDERS: dict[str, Provider] = {
    "openai": Provider(_OPENAI_COMPATIBLE, "https://api.openai.com/v1", "OPENAI_API_KEY",
                       "gpt-4o-mini", "json_schema", seed=True),
    "deepseek": Provider(_OPENAI_COMPATIBLE, "https://api.deepseek.com", "DEEPSEEK_API_KEY",
                         "deepseek-chat", "json_object_plain", seed=False),
    "xai": Provider(_OPENAI_COMPATIBLE, "https://api.x.ai/v1", "XAI_API_KEY", "grok-3-mini",
                    "json_schema", seed=True),
    "openai-compatible": Provider(_OPENAI_COMPATIBLE, None, "OPENAI_COMPATIBLE_API_KEY", None,
                                  "json_schema", seed=True),
    "local": Provider("local:LocalBackend"),
    "anthropic": Provider("anthropic_messages:AnthropicBackend", "https://api.anthropic.com",
                          "ANTHROPIC_API_KEY", "claude-haiku-4-5"),
    "bedrock": Provider("bedrock:BedrockBackend", None, "AWS_ACCESS_KEY_ID",
                        "global.anthropic.claude-haiku-4-5-20251001-v1:0"),
}
