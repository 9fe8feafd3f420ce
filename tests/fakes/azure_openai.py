"""A fake Azure OpenAI resource, written from Microsoft's Azure OpenAI REST reference.

Routes:

- ``POST /openai/deployments/{deployment}/chat/completions?api-version=YYYY-MM-DD[-preview]``:
  the key in the ``api-key`` header; no ``api-version`` query: 404 "Resource not found"; a
  deployment it does not have: 404 ``DeploymentNotFound``; a wrong or missing key: 401.
- ``POST /openai/v1/chat/completions`` (the v1 route, no ``api-version``): the key in the
  ``api-key`` header or as ``Authorization: Bearer``; the deployment is the body's ``model``.

A chat completion is the upstream server's answer to the same request, its ``model`` the
deployment's model, with the content-filter annotations Azure adds
(``prompt_filter_results``, ``content_filter_results``).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

from .translating import RelayingFake, Reply, fault_status

DEPLOYMENT_ROUTE = re.compile(r"^/openai/deployments/(?P<deployment>[^/]+)/chat/completions$")
V1_ROUTE = "/openai/v1/chat/completions"
_FILTERS = {category: {"filtered": False, "severity": "safe"}
            for category in ("hate", "self_harm", "sexual", "violence")}
_DENIED = ("Access denied due to invalid subscription key or wrong API endpoint. Make sure to "
           "provide a valid key for an active subscription and use a correct regional API "
           "endpoint for your resource.")


class FakeAzureOpenAI(RelayingFake):
    """``models``: deployment name -> the upstream model it serves."""

    def api_versions(self) -> list[str]:
        """The ``api-version`` of every request received, in order (``""``: none)."""
        return [parse_qs(urlsplit(r.path).query).get("api-version", [""])[0]
                for r in self.received]

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        parts = urlsplit(path)
        query = parse_qs(parts.query)
        route = DEPLOYMENT_ROUTE.match(parts.path)
        if route is not None:
            if headers.get("api-key") != self.key:
                return Reply(401, {"error": {"code": "401", "message": _DENIED}})
            if not query.get("api-version"):
                return Reply(404, {"error": {"code": "404", "message": "Resource not found"}})
            deployment = route["deployment"]
        elif parts.path == V1_ROUTE:
            bearer = headers.get("authorization", "").removeprefix("Bearer ")
            if self.key not in (headers.get("api-key"), bearer):
                return Reply(401, {"error": {"code": "401", "message": _DENIED}})
            deployment = (body or {}).get("model", "")
        else:
            return Reply(404, {"error": {"code": "404", "message": "Resource not found"}})
        if deployment not in self.models:
            return Reply(404, {"error": {
                "code": "DeploymentNotFound",
                "message": "The API deployment for this resource does not exist. If you "
                           "created the deployment within the last 5 minutes, please wait a "
                           "moment and try again."}})
        completion = self.relay(body, deployment)
        completion["prompt_filter_results"] = [{"prompt_index": 0,
                                                "content_filter_results": _FILTERS}]
        for choice in completion.get("choices", []):
            choice["content_filter_results"] = _FILTERS
        return Reply(200, completion)

    def fault_reply(self, fault: str) -> Reply:
        if fault == "429":  # Azure's rate limit: a Retry-After in seconds
            return Reply(429, {"error": {"code": "429", "message": "Requests to the ChatCompletions"
                                         "_Create Operation have exceeded the rate limit."}},
                         {"Retry-After": "1"})
        status = fault_status(fault)
        return Reply(status, {"error": {"code": str(status), "message": f"fault {status}"}})
