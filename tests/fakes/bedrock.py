"""A fake of Amazon Bedrock's Converse API (``POST /model/{modelId}/converse``), written from
the Bedrock Runtime API reference, in front of a real OpenAI-compatible server.

What it checks, as the service does: an ``Authorization`` header, either a SigV4 signature
(``AWS4-HMAC-SHA256 Credential=KEY/DATE/REGION/bedrock/aws4_request, SignedHeaders=...,
Signature=...`` with ``X-Amz-Date``; the access key id must be the expected one, the signature
itself is not verified) or a Bedrock API key (``Bearer KEY``); the model id in the path
(URL-encoded); ``messages`` (``user``/``assistant`` turns of ``{"text"}`` blocks), ``system``
(``{"text"}`` blocks), ``inferenceConfig`` (``maxTokens``, ``temperature``, ``topP``,
``stopSequences``) and ``toolConfig`` (``tools`` of ``toolSpec`` with ``name`` and
``inputSchema.json``; ``toolChoice`` ``auto``, ``any`` or ``tool`` naming one of them). Errors
follow the service's REST-JSON protocol: the ``x-amzn-ErrorType`` header names the exception and
the body is ``{"message": ...}``: 400 ``ValidationException``, 403
``AccessDeniedException``/``UnrecognizedClientException``, 429 ``ThrottlingException``, 500
``InternalServerException``, 503 ``ServiceUnavailableException``.

The translation: system blocks and turns become chat messages; ``inferenceConfig`` becomes
``max_tokens``/``temperature``/``top_p``/``stop``; a forced tool (``toolChoice.tool``, or
``any`` with one tool) becomes the upstream server's JSON-schema constraint (``response_format``
``{"type": "json_object", "schema": inputSchema.json}``) and its answer a ``toolUse`` block
(``stopReason`` ``tool_use``); a text answer is a ``text`` block (``end_turn``, or
``max_tokens`` when cut). Usage is the upstream ``prompt_tokens``/``completion_tokens`` as
``inputTokens``/``outputTokens``.
"""

from __future__ import annotations

import re
import time
import uuid
from typing import Any
from urllib.parse import unquote

from fakes.translating import Completion, Invalid, Reply, TranslatingFake, chat_messages

_PATH = re.compile(r"^/model/(?P<model>[^/]+)/converse$")
_SIGV4 = re.compile(r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/]+)/(?P<date>\d{8})/"
                    r"(?P<region>[^/]+)/(?P<service>[^/]+)/aws4_request, "
                    r"SignedHeaders=(?P<signed>[^,]+), Signature=(?P<signature>[0-9a-f]{64})$")


def error(status: int, kind: str, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, {"message": message},
                 {"x-amzn-ErrorType": f"{kind}:http://internal.amazon.com/coral/"
                  "com.amazon.bedrock/", "x-amzn-RequestId": str(uuid.uuid4()),
                  **(headers or {})})


def model_id(path: str) -> str | None:
    """The model id a request's path names, decoded (``None``: no Converse path)."""
    route = _PATH.match(path.split("?")[0])
    return None if route is None else unquote(route["model"])


def _text(blocks: Any, where: str) -> str:
    if not isinstance(blocks, list) or not blocks:
        raise Invalid(f"{where}: a non-empty list of content blocks is required")
    parts = []
    for block in blocks:
        if not isinstance(block, dict) or not isinstance(block.get("text"), str):
            raise Invalid(f"{where}: only text blocks are supported here")
        parts.append(block["text"])
    return "".join(parts)


class FakeBedrock(TranslatingFake):
    def __init__(self, upstream: str, access_key: str, region: str,
                 bearer_token: str | None = None, upstream_model: str = "smollm2",
                 faults: tuple[str, ...] = ()) -> None:
        super().__init__(upstream, faults)
        self.access_key = access_key
        self.region = region
        self.bearer_token = bearer_token
        self.upstream_model = upstream_model

    def fault_reply(self, fault: str) -> Reply:
        if fault == "429":
            return error(429, "ThrottlingException",
                         "Too many requests, please wait before trying again.")
        if fault == "503":
            return error(503, "ServiceUnavailableException", "Service is unavailable.")
        if fault == "500":
            return error(500, "InternalServerException", "Internal server error.")
        if fault == "echo_key:403":  # a server that quotes the credential back
            return error(403, "UnrecognizedClientException",
                         f"The security token included in the request is invalid: "
                         f"{self.bearer_token or self.access_key}")
        raise ValueError(f"unknown fault {fault!r}")

    def authorised(self, headers: dict[str, str]) -> Reply | None:
        """``None`` when the request carries an acceptable credential, else the refusal."""
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            if self.bearer_token is not None and auth[7:] == self.bearer_token:
                return None
            return error(403, "AccessDeniedException", "Invalid API Key format or value.")
        signed = _SIGV4.match(auth)
        if signed is None or "x-amz-date" not in headers:
            return error(403, "AccessDeniedException", "Missing Authentication Token")
        if signed["key"] != self.access_key:
            return error(403, "UnrecognizedClientException",
                         "The security token included in the request is invalid.")
        if signed["service"] != "bedrock" or signed["region"] != self.region:
            return error(403, "InvalidSignatureException",
                         f"Credential should be scoped to a valid region and service "
                         f"('{self.region}', 'bedrock').")
        return None

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        route = _PATH.match(path.split("?")[0])
        if route is None:
            return error(404, "UnknownOperationException", f"no operation at {path}")
        refused = self.authorised(headers)
        if refused is not None:
            return refused
        try:
            chat, forced = self.translate(body)
        except Invalid as invalid:
            return error(400, "ValidationException", str(invalid))
        started = time.monotonic()
        completion = self.chat(chat)
        return Reply(200, self.response(completion, forced, time.monotonic() - started),
                     {"x-amzn-RequestId": str(uuid.uuid4())})


    def translate(self, body: Any) -> tuple[dict[str, Any], str | None]:
        if not isinstance(body, dict):
            raise Invalid("the request body must be a JSON object")
        system = _text(body["system"], "system") if body.get("system") else None
        messages = chat_messages(system, body.get("messages"), _text)
        settings = body.get("inferenceConfig") or {}
        chat: dict[str, Any] = {"model": self.upstream_model, "messages": messages}
        for ours, theirs in (("maxTokens", "max_tokens"), ("temperature", "temperature"),
                             ("topP", "top_p"), ("stopSequences", "stop")):
            if ours in settings:
                chat[theirs] = settings[ours]
        if "maxTokens" in settings and (not isinstance(settings["maxTokens"], int)
                                        or settings["maxTokens"] < 1):
            raise Invalid("inferenceConfig.maxTokens: must be an integer >= 1")
        tools = (body.get("toolConfig") or {}).get("tools") or []
        schemas = {}
        for index, tool in enumerate(tools):
            spec = tool.get("toolSpec") if isinstance(tool, dict) else None
            schema = ((spec or {}).get("inputSchema") or {}).get("json")
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str) \
                    or not isinstance(schema, dict):
                raise Invalid(f"toolConfig.tools.{index}: toolSpec with a name and "
                              "inputSchema.json is required")
            schemas[spec["name"]] = schema
        choice = (body.get("toolConfig") or {}).get("toolChoice") or {"auto": {}}
        forced = None
        if "tool" in choice:
            forced = (choice["tool"] or {}).get("name")
            if forced not in schemas:
                raise Invalid("toolConfig.toolChoice.tool.name: no tool of that name")
        elif "any" in choice and len(schemas) == 1:
            forced = next(iter(schemas))
        if forced is not None:
            chat["response_format"] = {"type": "json_object", "schema": schemas[forced]}
        return chat, forced

    def response(self, completion: dict[str, Any], forced: str | None,
                 seconds: float) -> dict[str, Any]:
        answer = Completion(completion)
        if forced is not None:
            content = [{"toolUse": {"toolUseId": f"tooluse_{uuid.uuid4().hex[:22]}",
                                    "name": forced, "input": answer.tool_input()}}]
        else:
            content = [{"text": answer.text}]
        prompt, written = answer.prompt_tokens, answer.completion_tokens
        return {"output": {"message": {"role": "assistant", "content": content}},
                "stopReason": answer.stop_reason(forced),
                "usage": {"inputTokens": prompt, "outputTokens": written,
                          "totalTokens": prompt + written},
                "metrics": {"latencyMs": int(seconds * 1000)}}
