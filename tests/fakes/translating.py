"""The common part of the provider fakes: a small HTTP server on 127.0.0.1 that speaks one
provider's wire format and answers each request by translating it to a real OpenAI-compatible
server's ``/chat/completions`` (the ``llama_server`` fixture), so every answer is a real model's.

A fake records what it received (path, headers, JSON body) and can answer the next requests with
the provider's own error responses instead (``faults``: one entry per request, in arrival
order, consumed as they come; a subclass turns each name into its provider's error).
"""

from __future__ import annotations

import json
import threading
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    fault: str | None


class Reply:
    """What the fake answers: a status, headers and a JSON body."""

    def __init__(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        self.status = status
        self.body = body
        self.headers = headers or {}


class TranslatingFake:
    """Subclasses implement :meth:`answer` (a request -> a :class:`Reply`) and
    :meth:`fault_reply` (a fault name -> the provider's error :class:`Reply`)."""

    def __init__(self, upstream: str, faults: Iterable[str] = ()) -> None:
        self.upstream = upstream.rstrip("/")  # http://127.0.0.1:PORT/v1
        self.received: list[Received] = []
        self.upstream_bodies: list[dict[str, Any]] = []
        self._faults = list(faults)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # -- what a provider supplies

    def answer(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        raise NotImplementedError

    def fault_reply(self, fault: str) -> Reply:
        raise NotImplementedError

    # -- the upstream server

    def chat(self, body: dict[str, Any]) -> dict[str, Any]:
        """The upstream server's chat completion for ``body``."""
        self.upstream_bodies.append(body)
        request = urllib.request.Request(
            f"{self.upstream}/chat/completions", data=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json"}, method="POST")
        with urllib.request.urlopen(request, timeout=300) as response:
            return json.loads(response.read())

    # -- the server

    def add_faults(self, *faults: str) -> None:
        with self._lock:
            self._faults.extend(faults)

    @property
    def count(self) -> int:
        return len(self.received)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def _take(self, method: str, path: str, headers: dict[str, str], body: Any) -> Reply:
        with self._lock:
            fault = self._faults.pop(0) if self._faults else None
            self.received.append(Received(method, path, headers, body, fault))
        if fault is not None:
            return self.fault_reply(fault)
        return self.answer(method, path, headers, body)

    def __enter__(self) -> TranslatingFake:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server name
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    reply = fake._take("POST", self.path, headers, body)
                except Exception as error:  # the fake itself failed: say so, as a 500
                    reply = Reply(500, {"fake_error": f"{type(error).__name__}: {error}"})
                data = json.dumps(reply.body).encode("utf-8")
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
