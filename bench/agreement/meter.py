"""The judge's own token counts: a loopback proxy in front of the llama.cpp server that forwards
every request unchanged and adds up the ``usage`` of each chat-completion answer, as the server
reports it. Every side of the token benchmark (ours in this process, each peer in its own) sends
its requests through it, so all sides are counted the same way, whatever their client.

``GET /meter`` on the proxy answers the running totals as JSON (:data:`FIELDS`); a side reads
them before and after each row (``rounds.score_in_rounds``'s ``meter``). Imports nothing of the
project: the peers' processes (``peers.py``, under ``.venv-agreement``) read it too. Its loopback
server (:func:`loopback`, :class:`Replying`) also serves MiniLM's vectors
(``side.minilm_served``)."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: What the meter counts: chat-completion answers, those of them without a ``usage`` block, the
#: server's prompt and completion tokens, and of those the follow-ups': requests whose
#: conversation carries an earlier answer of the judge (a repair or a second turn).
FIELDS = ("requests", "without_usage", "prompt_tokens", "completion_tokens", "follow_ups",
          "follow_up_tokens")
METER_PATH = "/meter"
Totals = dict[str, int]


def read_usage(body: bytes) -> tuple[int, int] | None:
    """``(prompt_tokens, completion_tokens)`` of one chat-completion answer's ``usage``; None
    when the body is not a JSON object with whole-number counts (an error page, a stream)."""
    try:
        usage = json.loads(body).get("usage")
        counts = (usage["prompt_tokens"], usage["completion_tokens"])
    except (ValueError, AttributeError, KeyError, TypeError):
        return None
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in counts):
        return None
    return counts


def is_follow_up(request: bytes) -> bool:
    """Whether a chat-completion request's conversation carries an earlier assistant turn."""
    try:
        messages = json.loads(request).get("messages") or []
        return any(isinstance(m, dict) and m.get("role") == "assistant" for m in messages)
    except (ValueError, AttributeError):
        return False


def add(totals: Totals, body: bytes, request: bytes = b"") -> tuple[int, int] | None:
    """Count one chat-completion answer (to ``request``) into ``totals``; its usage counts."""
    totals["requests"] += 1
    counts = read_usage(body)
    if counts is None:
        totals["without_usage"] += 1
        return None
    totals["prompt_tokens"] += counts[0]
    totals["completion_tokens"] += counts[1]
    if is_follow_up(request):
        totals["follow_ups"] += 1
        totals["follow_up_tokens"] += sum(counts)
    return counts


class Replying(BaseHTTPRequestHandler):
    """A quiet HTTP/1.1 handler with :meth:`reply`."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for key, value in headers:
            if key.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@contextmanager
def loopback(handler: type[BaseHTTPRequestHandler]) -> Iterator[int]:
    """A threading server of ``handler`` on a free loopback port: yields the port, stops it
    after."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def metered(upstream: str, log: list[dict[str, Any]] | None = None
            ) -> Iterator[tuple[str, Callable[[], Totals]]]:
    """A proxy for ``upstream`` (``http://HOST:PORT/v1``) on a free loopback port: yields its
    base URL (same path) and a function returning a copy of the totals; stops it after. With a
    ``log``, each chat-completion request's body and usage counts are appended to it."""
    target = urllib.parse.urlsplit(upstream)
    totals: Totals = dict.fromkeys(FIELDS, 0)
    lock = threading.Lock()

    class Forward(Replying):
        def forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            sent = self.rfile.read(length) if length else None
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "connection", "accept-encoding")}
            upstream_connection = http.client.HTTPConnection(target.hostname, target.port,
                                                             timeout=3600)
            try:
                upstream_connection.request(self.command, self.path, body=sent, headers=headers)
                answer = upstream_connection.getresponse()
                body = answer.read()
            finally:
                upstream_connection.close()
            if self.path.split("?")[0].endswith("/chat/completions") and answer.status == 200:
                with lock:  # counted even if the client gave up waiting: the judge spent them
                    counts = add(totals, body, sent or b"")
                    if log is not None:
                        log.append({"request": sent, "usage": counts})
            try:
                self.reply(answer.status, answer.getheaders(), body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if self.path == METER_PATH:
                with lock:
                    body = json.dumps(totals).encode()
                self.reply(200, [("Content-Type", "application/json")], body)
            else:
                self.forward()

        do_POST = forward  # noqa: N815 - http.server's name

    def read() -> Totals:
        with lock:
            return dict(totals)

    with loopback(Forward) as port:
        yield f"http://127.0.0.1:{port}{target.path}", read


def remote(base_url: str) -> Callable[[], Totals]:
    """The totals of the proxy at ``base_url``, read over HTTP (from a peer's process)."""
    parts = urllib.parse.urlsplit(base_url)
    url = f"{parts.scheme}://{parts.netloc}{METER_PATH}"

    def read() -> Totals:
        with urllib.request.urlopen(url, timeout=30) as response:  # noqa: S310 - loopback
            return json.loads(response.read())

    return read
