"""The remote backends' transport: one asyncio event loop in a daemon thread shared by every
backend of the process, and the liveness count of their HTTP attempts (a dead judge fails fast:
docs/BACKENDS.md), counted inside the httpx client of an httpx-based SDK (openai, anthropic)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable
from typing import Any

#: A judge is dead after this many consecutive attempts (retries included) that failed to
#: connect or timed out, with no answer in between: its remaining requests are not sent.
DEAD_AFTER = 3


class LoopThread:
    """One asyncio event loop running forever in a daemon thread."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self._run, name="judge-metrics-openai-loop", daemon=True
        )
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro: Awaitable[Any]) -> concurrent.futures.Future[Any]:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)  # type: ignore[arg-type]


_LOOP: LoopThread | None = None
_LOOP_LOCK = threading.Lock()


def event_loop() -> LoopThread:
    global _LOOP
    with _LOOP_LOCK:
        if _LOOP is None or not _LOOP.thread.is_alive():
            _LOOP = LoopThread()
        return _LOOP


class Liveness:
    """Counts consecutive attempts that failed to connect or timed out (every retry of the SDK
    is one attempt); any HTTP answer resets the count. At :data:`DEAD_AFTER` the judge is dead:
    ``event`` is set (the backend stops waiting for what is in flight) and nothing more is sent
    until a probe answers. Used on the event loop's thread only."""

    def __init__(self) -> None:
        self.failures = 0
        self.last_error = ""
        self.event: asyncio.Event | None = None  # created on the loop

    @property
    def dead(self) -> bool:
        return self.failures >= DEAD_AFTER

    def answered(self) -> None:
        self.failures = 0
        if self.event is not None:
            self.event.clear()

    def failed(self, error: BaseException) -> None:
        self.failures += 1
        self.last_error = type(error).__name__
        if self.dead and self.event is not None:
            self.event.set()


class CountedTransport:
    """Wraps the SDK's HTTP transport: each attempt's fate goes to a :class:`Liveness` (an
    exception out of the transport is a connection failure or a time-out; the SDK maps every
    one to ``APIConnectionError``/``APITimeoutError``)."""

    def __init__(self, transport: Any, liveness: Liveness) -> None:
        self._transport = transport
        self._liveness = liveness

    async def handle_async_request(self, request: Any) -> Any:
        try:
            response = await self._transport.handle_async_request(request)
        except Exception as error:
            self._liveness.failed(error)
            raise
        self._liveness.answered()
        return response


def http_client(timeout: float, liveness: Liveness, client_class: Any = None) -> Any:
    """The SDK's default async HTTP client (its limits, redirects; ``client_class``, by default
    ``openai.DefaultAsyncHttpxClient``), its transport (the connection pool, or a proxy's)
    counted by ``liveness``."""
    if client_class is None:
        import openai

        client_class = openai.DefaultAsyncHttpxClient
    client = client_class(timeout=timeout)
    transport_for_url = client._transport_for_url
    client._transport_for_url = lambda url: CountedTransport(transport_for_url(url), liveness)
    return client
