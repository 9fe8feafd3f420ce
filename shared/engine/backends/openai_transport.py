"""The remote backends' transport: one asyncio event loop in a daemon thread shared by every
backend of the process, the liveness count of their HTTP attempts (a dead judge fails fast:
docs/BACKENDS.md) and their judge's rate limiter (:mod:`.rate_limit`), both inside the httpx
client of an httpx-based SDK (openai, anthropic, google-genai)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import json
import threading
from collections.abc import Awaitable
from typing import Any

from .rate_headers import read_signals
from .rate_limit import RateLimiter, Strikes, estimate_tokens

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
    one to ``APIConnectionError``/``APITimeoutError``). With a ``limiter``, each attempt waits
    for its judge's turn (:mod:`.rate_limit`) and a refusal (HTTP 429) is sent again after the
    wait it names, until the limiter gives the request up; then the SDK gets the refusal with
    ``x-should-retry: false`` (its own retries would only ask again what was given up)."""

    def __init__(self, transport: Any, liveness: Liveness, limiter: RateLimiter | None = None,
                 max_retries: int = 0) -> None:
        self._transport = transport
        self._liveness = liveness
        self._limiter = limiter
        self._max_retries = max_retries

    async def _attempt(self, request: Any) -> Any:
        try:
            response = await self._transport.handle_async_request(request)
        except Exception as error:
            self._liveness.failed(error)
            raise
        self._liveness.answered()
        return response

    async def handle_async_request(self, request: Any) -> Any:
        limiter = self._limiter
        if limiter is None:
            return await self._attempt(request)
        tokens = _tokens(request) if limiter.token_rate() else 0.0
        strikes = Strikes()
        while True:
            started = await limiter.acquire(tokens)
            try:
                response = await self._attempt(request)
            except BaseException:
                limiter.release()
                raise
            if response.status_code != 429:
                limiter.release()
                limiter.answered(read_signals(response.headers), started)
                return response
            try:
                raw = b"".join([chunk async for chunk in response.aiter_raw()])
            finally:
                await response.aclose()
                limiter.release()
            body = _decoded(response, raw)
            why = limiter.refusal(read_signals(response.headers, body), started, strikes,
                                  self._max_retries)
            if why is not None:
                return _given_up(response, raw, body, request, why)


def _tokens(request: Any) -> float:
    """The estimated tokens of ``request`` (0 for a body that is a stream, e.g. a file upload)."""
    try:
        return estimate_tokens(request.content)
    except Exception:  # httpx's RequestNotRead: not a JSON request
        return 0.0


def _httpx_of(response: Any) -> Any:
    """The httpx module the SDK's transport answered with (``httpx``, or the fork an SDK
    vendors under another name): its classes are the ones the SDK's client accepts."""
    return importlib.import_module(type(response).__module__.split(".")[0])


def _given_up(response: Any, raw: bytes, body: bytes, request: Any, why: str) -> Any:
    """A refusal the limiter gave up, handed to the SDK (which must not ask again); ``why`` is
    added to its error message (a JSON ``{"error": {"message": ...}}`` body, as every provider
    of these SDKs writes one), so the unmeasured row's reason says it."""
    httpx = _httpx_of(response)
    dropped: tuple[str, ...] = ("x-should-retry",)
    try:
        data = json.loads(body)
        error = data.get("error") if isinstance(data, dict) else None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            error["message"] = f"{error['message']} (given up: {why})"
            raw, dropped = json.dumps(data).encode(), (*dropped, "content-encoding",
                                                       "content-length")
    except (ValueError, UnicodeDecodeError):  # not JSON: handed on as it came
        pass
    headers = [(k, v) for k, v in response.headers.multi_items() if k.lower() not in dropped]
    return httpx.Response(429, headers=[*headers, ("x-should-retry", "false")],
                          stream=httpx.ByteStream(raw), request=request,
                          extensions=response.extensions)


def _decoded(response: Any, raw: bytes) -> bytes:
    """A refusal's body as sent (its content encoding undone), or ``raw`` when it cannot be."""
    try:
        return _httpx_of(response).Response(response.status_code, headers=response.headers,
                                            content=raw).read()
    except Exception:  # an undecodable body is read as it came
        return raw


def http_client(timeout: float, liveness: Liveness, client_class: Any = None,
                limiter: RateLimiter | None = None, max_retries: int = 0) -> Any:
    """The SDK's default async HTTP client (its limits, redirects; ``client_class``, by default
    ``openai.DefaultAsyncHttpxClient``), its transport (the connection pool, or a proxy's)
    counted by ``liveness`` and paced by ``limiter`` (``max_retries``: the refusals in a row,
    with no answer between, after which a request is given up)."""
    if client_class is None:
        import openai

        client_class = openai.DefaultAsyncHttpxClient
    client = client_class(timeout=timeout)
    transport_for_url = client._transport_for_url
    client._transport_for_url = lambda url: CountedTransport(transport_for_url(url), liveness,
                                                             limiter, max_retries)
    return client
