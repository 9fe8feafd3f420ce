"""Judge backend for Azure OpenAI: the OpenAI-compatible backend on the ``openai`` SDK's Azure
client.

``base_url`` is the resource endpoint (``https://RESOURCE.openai.azure.com``; default: the
``AZURE_OPENAI_ENDPOINT`` variable) and ``model`` the deployment name. Requests go to
``/openai/deployments/{deployment}/chat/completions?api-version=...`` with the key in the
``api-key`` header; the API version is ``OPENAI_API_VERSION`` when set, else
:data:`API_VERSION`. A ``base_url`` ending in ``/openai/v1`` takes Azure's v1 route instead
(``/openai/v1/chat/completions``, no API version), through the plain OpenAI client as
Microsoft's documentation shows.
"""

from __future__ import annotations

import os
from typing import Any

from .openai_compat import OpenAICompatBackend

#: The Azure OpenAI data-plane inference API version used when ``OPENAI_API_VERSION`` is unset
#: (the latest GA version in Microsoft's Azure OpenAI REST reference).
API_VERSION = "2024-10-21"


def is_v1_route(base_url: str | None) -> bool:
    """Whether ``base_url`` names Azure's version-less v1 route (``.../openai/v1``)."""
    return bool(base_url) and base_url.rstrip("/").endswith("/openai/v1")


class AzureOpenAIBackend(OpenAICompatBackend):
    """A judge deployed on Azure OpenAI (``model``: the deployment name)."""

    batch_url = "/chat/completions"  # Azure's batch lines name the route without /v1

    def new_client(self, api_key: str, base_url: str | None, http: Any) -> Any:
        import openai

        if is_v1_route(base_url):
            return super().new_client(api_key, base_url, http)
        return openai.AsyncAzureOpenAI(
            api_key=api_key, azure_endpoint=base_url,
            api_version=os.environ.get("OPENAI_API_VERSION") or API_VERSION,
            timeout=self.timeout, max_retries=self.max_retries, http_client=http)
