"""The common part of the provider fakes: a small HTTP server on 127.0.0.1 that speaks one
provider's wire format and answers each request by translating it to a real OpenAI-compatible
server's ``/chat/completions`` (the ``llama_server`` fixture), so every answer is a real model's.

:class:`LocalServer` is the server alone: it reads each request (method, path, lower-cased
headers, raw body) and writes the :class:`Reply` its subclass gives for it (the test servers
that answer without a model use it too). :class:`TranslatingFake` adds the upstream model
(:meth:`~TranslatingFake.chat`), records what it received (path, headers, JSON body) and can
answer the next requests with the provider's own error responses instead (``faults``: one entry
per request, in arrival order, consumed as they come; a subclass turns each name into its
provider's error). :class:`RelayingFake` is a provider whose wire format is OpenAI's own.

The helpers below it are the translation the Messages-style fakes share: their turns become
chat messages (:func:`chat_messages`), and the upstream answer their reply
(:class:`Completion`).
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from faultproxy import LoopbackServer


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    fault: str | None


class Reply:
    """What a server answers: a status, a JSON body (or raw bytes) and headers."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers or {}


class PostHandler(BaseHTTPRequestHandler):
    """Reads a request and writes its owner's :class:`Reply` (``POST`` only)."""

    owner: LocalServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        self.serve("POST")

    def serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            reply = self.owner.respond(method, self.path, headers, raw)
        except Exception as error:  # the server itself failed: say so, as a 500
            reply = Reply(500, {"fake_error": f"{type(error).__name__}: {error}"})
        raw_body = isinstance(reply.body, bytes)
        data = reply.body if raw_body else json.dumps(reply.body).encode("utf-8")
        self.send_response(reply.status)
        self.send_header("Content-Type", "application/octet-stream" if raw_body
                         else self.owner.content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class GetPostHandler(PostHandler):
    """:class:`PostHandler` that takes ``GET`` too."""

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        self.serve("GET")


class LocalServer:
    """``with Server(...) as server: server.url``; a subclass implements :meth:`respond`."""

    handler: type[PostHandler] = PostHandler
    content_type = "application/json"

    _server: ThreadingHTTPServer | None = None

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        raise NotImplementedError

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> Self:
        class Handler(self.handler):
            owner = self

        self._server = LoopbackServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                         daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def chat_completion(upstream: str, body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the OpenAI-compatible server at ``upstream`` (its ``/v1`` root)
    gives for ``body``."""
    request = urllib.request.Request(
        f"{upstream.rstrip('/')}/chat/completions", data=json.dumps(body).encode("utf-8"),
        headers={"Content-Type": "application/json"}, method="POST")
    with urllib.request.urlopen(request, timeout=300) as response:
        return json.loads(response.read())


class TranslatingFake(LocalServer):
    """Subclasses implement :meth:`answer` (a request -> a :class:`Reply`) and
    :meth:`fault_reply` (a fault name -> the provider's error :class:`Reply`)."""

    def __init__(self, upstream: str, faults: Iterable[str] = ()) -> None:
        self.upstream = upstream.rstrip("/")  # http://127.0.0.1:PORT/v1
        self.received: list[Received] = []
        self.upstream_bodies: list[dict[str, Any]] = []
        self._faults = list(faults)
        self._lock = threading.Lock()

    # -- what a provider supplies

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        raise NotImplementedError

    def fault_reply(self, fault: str) -> Reply:
        raise NotImplementedError

    # -- the upstream server

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """The upstream server's chat completion for ``body``."""
        self.upstream_bodies.append(body)
        return chat_completion(self.upstream, body)

    # -- the requests

    def add_faults(self, *faults: str) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def count(self) -> int:
        return len(self.received)

    def respond(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
            self.received.append(Received(method, path, headers, body, fault))
        if fault is not None:
            return self.fault_reply(fault)
        return self.answer(method, path, headers, body)


def fault_status(fault: str) -> int:
    """The HTTP status of a ``status:CODE`` fault."""
    return int(fault.removeprefix("status:"))


class RelayingFake(TranslatingFake):
    """A provider that speaks OpenAI's chat completions itself, under its own credential and
    its own model names: a request goes upstream as it came, but for its ``model``, which
    ``models`` maps (the provider's name -> the upstream model that answers for it)."""

    def __init__(self, upstream: str, key: str, models: dict[str, str],
                 faults: Iterable[str] = ()) -> None:
        super().__init__(upstream, faults)
        self.key = key
        self.models = models

    def relay(self, body: dict[str, Any], name: str) -> dict[str, Any]:
        """The upstream completion of ``body`` sent to the model behind ``name``."""
        return self.chat({**body, "model": self.models[name]})


class Invalid(ValueError):
    """A request the provider refuses as invalid (each fake answers its own 400)."""


def chat_messages(system: str | None, turns: Any,
                  text_of: Callable[[Any, str], str]) -> list[dict[str, str]]:
    """The chat messages of a system text (``None``: none) and a non-empty list of
    ``{"role": "user"|"assistant", "content": ...}`` turns, each content read by
    ``text_of(content, where)``."""
    if not isinstance(turns, list) or not turns:
        raise Invalid("messages: at least one message is required")
    messages = [] if system is None else [{"role": "system", "content": system}]
    for index, turn in enumerate(turns):
        role = turn.get("role") if isinstance(turn, dict) else None
        if role not in ("user", "assistant"):
            raise Invalid(f"messages.{index}.role: must be 'user' or 'assistant'")
        messages.append({"role": role,
                         "content": text_of(turn.get("content"), f"messages.{index}")})
    return messages


class Completion:
    """An upstream chat completion as a Messages-style reply reads it: the text, the stop
    reason (``end_turn``, ``tool_use`` for a forced tool, ``max_tokens`` when cut) and the
    token counts."""

    def __init__(self, completion: dict[str, Any]) -> None:
        choice = completion["choices"][0]
        self.text: str = choice["message"].get("content") or ""
        self.cut = choice.get("finish_reason") == "length"
        usage = completion.get("usage") or {}
        self.prompt_tokens: int = usage.get("prompt_tokens", 0)
        self.completion_tokens: int = usage.get("completion_tokens", 0)

    def tool_input(self) -> dict[str, Any]:
        """A forced tool's input: the JSON object answered (``{}`` for a cut-off call, whose
        input is what could be read)."""
        try:
            value = json.loads(self.text)
        except ValueError:
            value = {}
        return value if isinstance(value, dict) else {}

    def stop_reason(self, forced: str | None) -> str:
        if self.cut:
            return "max_tokens"
        return "tool_use" if forced is not None else "end_turn"
