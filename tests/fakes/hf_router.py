"""A fake Hugging Face Inference Providers router, written from its documentation: an
OpenAI-compatible ``POST /v1/chat/completions`` authenticated by ``Authorization: Bearer
HF_TOKEN``, whose ``model`` is a Hub id, optionally with a ``:provider`` or ``:policy`` suffix
(``meta-llama/Llama-3.3-70B-Instruct:fastest``). A wrong or missing token is a 401.

A chat completion is the upstream server's answer to the same request, with ``model`` set to the
Hub id asked for, as the router reports it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .translating import RelayingFake, Reply, fault_status

ROUTE = "/v1/chat/completions"


class FakeHFRouter(RelayingFake):
    """``key``: the HF token; ``models``: Hub id -> the upstream model that answers for it."""

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        if urlsplit(path).path != ROUTE:
            return Reply(404, {"error": "Not Found"})
        if headers.get("authorization") != f"Bearer {self.key}":
            return Reply(401, {"error": "Invalid credentials in Authorization header"})
        asked = (body or {}).get("model", "")
        hub_id = asked.split(":", 1)[0]
        if hub_id not in self.models:
            return Reply(400, {"error": {"message": f"The requested model '{asked}' is not "
                                         "supported by any provider you have enabled.",
                                         "type": "invalid_request_error",
                                         "code": "model_not_supported"}})
        completion = self.relay(body, hub_id)
        completion["model"] = hub_id
        return Reply(200, completion)

    def fault_reply(self, fault: str) -> Reply:
        status = fault_status(fault)
        return Reply(status, {"error": f"fault {status}"})
