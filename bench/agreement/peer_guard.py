"""What every peer process of the agreement side-by-side runs under: the peers' telemetry
opt-outs, a socket guard that refuses (and records) every connection that is not loopback, and
HTTP clients that count chat-completion requests and cap their completions. Runs under
``.venv-agreement``'s Python beside ``peers.py``: it imports nothing of the project."""

from __future__ import annotations

import json
import socket
from typing import Any

# No phoning home: the peers' documented opt-outs, set before they are imported.
OPT_OUTS = {
    "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
    "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0",
    "DEEPEVAL_GRPC_LOGGING": "0",
    "RAGAS_DO_NOT_TRACK": "true",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "ANONYMIZED_TELEMETRY": "False",
    "OPENAI_API_KEY": "not-needed",
}
LOOPBACK = {"127.0.0.1", "::1", "localhost"}


class Outbound:
    """Refuses (and records) every connection and name look-up that is not loopback."""

    attempts: list[str] = []

    @classmethod
    def install(cls) -> None:
        connect = socket.socket.connect
        connect_ex = socket.socket.connect_ex
        getaddrinfo = socket.getaddrinfo

        def allowed(address: Any) -> bool:
            if isinstance(address, tuple) and address:
                return str(address[0]) in LOOPBACK
            return isinstance(address, (str, bytes))  # a Unix socket

        def guarded_connect(sock: socket.socket, address: Any) -> Any:
            if not allowed(address):
                cls.attempts.append(f"connect {address[0]}:{address[1]}")
                raise ConnectionRefusedError(f"outbound connection to {address!r} refused")
            return connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> Any:
            if not allowed(address):
                cls.attempts.append(f"connect {address[0]}:{address[1]}")
                return 111  # ECONNREFUSED
            return connect_ex(sock, address)

        def guarded_getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
            name = host.decode() if isinstance(host, bytes) else str(host)
            if host is not None and name not in LOOPBACK:
                cls.attempts.append(f"resolve {name}")
                raise socket.gaierror(socket.EAI_NONAME, f"look-up of {name!r} refused")
            return getaddrinfo(host, *args, **kwargs)

        socket.socket.connect = guarded_connect  # type: ignore[method-assign]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign]
        socket.getaddrinfo = guarded_getaddrinfo  # type: ignore[assignment]


class Counter:
    requests = 0


def fix_body(raw: bytes, max_tokens: int) -> bytes | None:
    """A chat-completions body with ``max_tokens`` set: llama-cpp-python's server reads
    ``max_tokens`` only (``max_completion_tokens``, which langchain-openai sends, is ignored)
    and without it generates until the context is full. None when the body needs no change."""
    body = json.loads(raw)
    if body.get("max_completion_tokens") is not None:
        body["max_tokens"] = body.pop("max_completion_tokens")
    elif body.get("max_tokens") is None:
        body["max_tokens"] = max_tokens
    else:
        return None
    return json.dumps(body).encode()


def http_clients(max_tokens: int, timeout: float) -> tuple[Any, Any]:
    """An ``httpx`` client and async client that count chat-completion requests and set
    ``max_tokens`` on them (:func:`fix_body`); everything else is the peer's own request."""
    import httpx

    def rewrite(request: httpx.Request) -> httpx.Request:
        if not request.url.path.endswith("/chat/completions"):
            return request
        Counter.requests += 1
        body = fix_body(request.read(), max_tokens)
        if body is None:
            return request
        headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
        return httpx.Request(request.method, request.url, headers=headers, content=body)

    class Transport(httpx.HTTPTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            return super().handle_request(rewrite(request))

    class AsyncTransport(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            await request.aread()
            return await super().handle_async_request(rewrite(request))

    return (httpx.Client(transport=Transport(), timeout=timeout),
            httpx.AsyncClient(transport=AsyncTransport(), timeout=timeout))
