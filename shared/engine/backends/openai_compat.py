"""Judge backend for OpenAI-compatible chat-completion servers, through the ``openai`` SDK.

Providers ``openai``, ``deepseek``, ``xai`` and ``openai-compatible`` (any ``base_url``: vLLM,
llama.cpp's server, llama-cpp-python's server, Ollama, LiteLLM). What a server can do is a
setting of its provider (``shared.engine.config.PROVIDERS``), overridable by the ``response_format``
judge option; nothing is detected from the server.

Requests run on one asyncio event loop in a daemon worker thread shared by every backend of the
process, so a backend works the same when it is called from plain code and from inside a running
event loop (Jupyter, Gradio). The calling thread waits and receives each result (``on_result``
runs in the calling thread) as soon as its request finishes. Retries (429 honouring
Retry-After, 408/409, 5xx, connection errors, time-outs) and the per-request time-out are the
SDK's own ``max_retries``/``timeout``. A dead judge fails fast: after :data:`DEAD_AFTER`
attempts in a row that failed to connect or timed out, the rest of the batch is not sent
(docs/BACKENDS.md). The transport is :mod:`.openai_transport`, the reading of answers
:mod:`.openai_responses`.
"""

from __future__ import annotations

import asyncio
import queue
from collections.abc import Awaitable, Callable, Sequence
from typing import Any
from urllib.parse import urlparse

from ...base.redaction import redact
from ...base.types import JudgeRequest, LabelAnswer, Outcome, TokenUsage, YesNoAnswer
from ..config import PROVIDERS, JudgeConfig, endpoint_of
from ..logprobs import LABEL_TOP_LOGPROBS, label_mass
from .base import Backend, LogprobsUnavailable, ResultCallback
from .openai_responses import (
    MalformedResponse,
    first_token_top_logprobs,
    is_strict_compatible,
    mentions_logprobs,
    message_text,
    no_logprobs_message,
    usage_of,
    written_label,
)
from .openai_transport import DEAD_AFTER, Liveness, event_loop, http_client

#: Structured-output styles (the ``response_format`` judge option, ``RESPONSE_FORMATS``).
#: ``json_schema``: ``{"type": "json_schema", "json_schema": {...}}`` (OpenAI, vLLM, xAI);
#: ``json_object``: ``{"type": "json_object", "schema": {...}}`` (llama-cpp-python's server);
#: ``json_object_plain``: ``{"type": "json_object"}`` without a schema (DeepSeek);
#: ``none``: no ``response_format`` at all.
CONSTRAINED_FORMATS = frozenset({"json_schema", "json_object"})
SEED = 1234
#: The request field that bounds the answer length, where a provider needs another name than
#: ``max_tokens`` (OpenAI's reasoning models refuse ``max_tokens``).
MAX_TOKENS_FIELD = {"openai": "max_completion_tokens"}
NO_KEY = "not-needed"  # the SDK needs some key; servers without authentication ignore it
#: Requests sent one at a time before a log-probability batch, until one answer tells whether
#: the model returns log-probabilities.
MAX_PROBES = 3
#: Answer tokens of a label request to a model without log-probabilities ("Score: 4").
SAMPLED_MAX_TOKENS = 16


def host_of(url: str | None) -> str:
    """``host[:port]`` of a URL, without any credentials in it."""
    if not url:
        return ""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    return f"{host}:{parsed.port}" if parsed.port else host


_DONE = object()


# ---------------------------------------------------------------- the backend


class OpenAICompatBackend(Backend):
    """A judge behind an OpenAI-compatible ``/chat/completions`` endpoint."""

    kind = "openai-compatible"

    def __init__(self, config: JudgeConfig) -> None:
        import openai

        model = config.resolved_model()
        base_url = config.resolved_base_url()
        style = config.resolved_response_format() or "none"
        self.provider = config.provider
        self.model = model
        self.base_url = base_url
        self.host = host_of(base_url)
        self.endpoint = endpoint_of(base_url)
        self.response_format = style
        self.constrained = style in CONSTRAINED_FORMATS
        self.seed = SEED if PROVIDERS[config.provider].seed else None
        self.max_tokens_field = MAX_TOKENS_FIELD.get(config.provider, "max_tokens")
        self.max_concurrency = config.max_concurrency
        self.timeout = float(config.timeout)
        self.max_retries = config.max_retries
        self._liveness = Liveness()
        self._client = openai.AsyncOpenAI(
            api_key=config.resolved_api_key() or NO_KEY,
            base_url=base_url,
            timeout=self.timeout,
            max_retries=self.max_retries,
            http_client=http_client(self.timeout, self._liveness),
        )
        self._semaphore: asyncio.Semaphore | None = None  # created on the loop
        self._logprobs_seen = False
        self._logprobs_missing = False  # label requests: the model gave none, write the label

    def __repr__(self) -> str:
        return (
            f"OpenAICompatBackend(provider={self.provider!r}, model={self.model!r}, "
            f"host={self.host!r}, response_format={self.response_format!r})"
        )

    # -- configuration

    def uses_api_key(self, api_key: str | None) -> bool:
        import hmac

        return hmac.compare_digest(str(self._client.api_key).encode("utf-8"),
                                   (api_key or NO_KEY).encode("utf-8"))

    def sampling_params(self, operation: str) -> dict[str, Any]:
        params: dict[str, Any] = {"temperature": 0, "top_p": 1}
        if self.seed is not None:
            params["seed"] = self.seed
        if operation == "yes_no":
            params.update({"logprobs": True, self.max_tokens_field: 1})
        elif operation == "labels":
            params.update({"logprobs": True, self.max_tokens_field: 1,
                           "top_logprobs": LABEL_TOP_LOGPROBS})
        elif operation == "structured":
            params["response_format"] = self.response_format
        else:
            raise ValueError(f"unknown operation {operation!r}")
        return params

    def response_format_body(self, json_schema: dict[str, Any]) -> dict[str, Any] | None:
        """The ``response_format`` request field for ``json_schema`` in this backend's style."""
        if self.response_format == "json_schema":
            return {
                "type": "json_schema",
                "json_schema": {
                    "name": "judge_answer",
                    "schema": json_schema,
                    "strict": is_strict_compatible(json_schema),
                },
            }
        if self.response_format == "json_object":
            return {"type": "json_object", "schema": json_schema}
        if self.response_format == "json_object_plain":
            return {"type": "json_object"}
        return None

    # -- operations

    def yes_no(
        self, requests: Sequence[JudgeRequest], top_k: int, on_result: ResultCallback
    ) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        params = self.sampling_params("yes_no")
        params["top_logprobs"] = top_k

        async def one(request: JudgeRequest) -> Outcome:
            read = await self._top_logprobs(request, params)
            if isinstance(read, Outcome):
                return read
            return Outcome(value=YesNoAnswer(top=read[0]), usage=read[1])

        self._run(requests, one, on_result, probe_first=not self._logprobs_seen,
                  probe_until=lambda: self._logprobs_seen)

    def label_probabilities(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                            on_result: ResultCallback) -> None:
        """Each label's probability in the first token's top-20 list; from a model that has
        never returned log-probabilities, the label its short written answer names (1.0,
        ``method`` "sampled"): never silently, each answer says which it is."""
        params = self.sampling_params("labels")
        written = {k: v for k, v in params.items() if k not in ("logprobs", "top_logprobs")}
        written[self.max_tokens_field] = SAMPLED_MAX_TOKENS

        async def read(request: JudgeRequest) -> Outcome | None:
            try:
                got = await self._top_logprobs(request, params)
            except LogprobsUnavailable:  # the model never gave them: it writes its label
                self._logprobs_missing = True
                return None
            if isinstance(got, Outcome):
                return got
            try:
                mass = label_mass(got[0], labels)
            except (TypeError, ValueError) as exc:  # e.g. a log-probability above 0
                return Outcome(error=self._redact(f"unusable answer: {exc}"), usage=got[1])
            return Outcome(value=LabelAnswer(mass), usage=got[1])

        async def write(request: JudgeRequest) -> Outcome:
            try:
                response = await self._create(request, written)
                return Outcome(value=written_label(response, labels), usage=usage_of(response))
            except Exception as exc:  # MalformedResponse too: the model wrote no label
                return Outcome(error=self.reason(exc))

        async def one(request: JudgeRequest) -> Outcome:
            outcome = None if self._logprobs_missing else await read(request)
            return outcome if outcome is not None else await write(request)

        self._run(requests, one, on_result, probe_first=not self._logprobs_seen,
                  probe_until=lambda: self._logprobs_seen or self._logprobs_missing)

    def structured(self, requests: Sequence[JudgeRequest], json_schema: dict[str, Any],
                   max_tokens: int, on_result: ResultCallback) -> None:
        params = self.sampling_params("structured")
        params.pop("response_format")
        params[self.max_tokens_field] = max_tokens
        response_format = self.response_format_body(json_schema)
        if response_format is not None:
            params["response_format"] = response_format

        async def one(request: JudgeRequest) -> Outcome:
            try:
                response = await self._create(request, params)
            except Exception as exc:
                return Outcome(error=self.reason(exc))
            try:
                return Outcome(value=message_text(response), usage=usage_of(response),
                               constrained=self.constrained)
            except MalformedResponse as exc:
                return Outcome(error=self._redact(f"unusable answer from {self.host}: {exc}"),
                               usage=usage_of(response))

        self._run(requests, one, on_result, probe_first=False)

    def close(self) -> None:
        client = self._client
        try:
            event_loop().submit(client.close()).result(timeout=5)
        except Exception:  # closing is best effort
            pass

    # -- plumbing

    async def _top_logprobs(self, request: JudgeRequest, params: dict[str, Any]
                            ) -> tuple[list[tuple[str, float]], TokenUsage] | Outcome:
        """The first answer token's top log-probabilities and the usage, or the failed
        ``Outcome``. Raises :class:`LogprobsUnavailable` while the model has never given them."""
        response = None
        try:
            response = await self._create(request, params)
            top = first_token_top_logprobs(response, self.model, self.host)
        except LogprobsUnavailable as exc:
            if not self._logprobs_seen:  # the model never gave them: a configuration error
                raise
            # it gave them before: this one answer is the fault, not the model
            return Outcome(error=self._redact(
                f"no log-probabilities in this answer from {self.host} (the model returned "
                f"them for earlier requests); not scored: {str(exc).split(';')[0]}"),
                usage=usage_of(response))
        except MalformedResponse as exc:
            return Outcome(error=self._redact(f"unusable answer from {self.host}: {exc}"),
                           usage=usage_of(response))
        except Exception as exc:
            return Outcome(error=self.reason(exc))
        self._logprobs_seen = True
        return top, usage_of(response)

    # -- plumbing

    async def _create(self, request: JudgeRequest, params: dict[str, Any]) -> Any:
        import openai

        try:
            return await self._client.chat.completions.create(
                model=self.model, messages=request.as_openai_messages(), **params
            )
        except openai.BadRequestError as exc:
            if params.get("logprobs") and mentions_logprobs(exc):
                raise LogprobsUnavailable(
                    f"{no_logprobs_message(self.model, self.host)} (the server said: "
                    f"{self._redact(str(exc.message))})"
                ) from None
            raise

    def _run(
        self,
        requests: Sequence[JudgeRequest],
        one: Callable[[JudgeRequest], Awaitable[Outcome]],
        on_result: ResultCallback,
        probe_first: bool,
        probe_until: Callable[[], bool] | None = None,
    ) -> None:
        """Run ``one`` over ``requests`` with at most ``max_concurrency`` in flight; deliver each
        outcome to ``on_result`` in this thread as soon as it is ready.

        ``probe_first``: send requests one at a time (at most :data:`MAX_PROBES`) until
        ``probe_until()`` holds, then the rest at once (a model without log-probabilities fails
        on its first answer, before the batch is sent)."""
        requests = list(requests)
        if not requests:
            return
        results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        future = event_loop().submit(
            self._batch(requests, one, results.put, probe_first, probe_until or (lambda: True)))
        future.add_done_callback(lambda _: results.put(_DONE))
        try:
            while (item := results.get()) is not _DONE:
                on_result(*item)
        except BaseException:
            future.cancel()
            raise
        if not future.cancelled() and future.exception() is not None:
            raise future.exception()  # type: ignore[misc]

    async def _batch(
        self,
        requests: list[JudgeRequest],
        one: Callable[[JudgeRequest], Awaitable[Outcome]],
        emit: Callable[[tuple[int, Outcome]], None],
        probe_first: bool,
        probe_until: Callable[[], bool],
    ) -> None:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.max_concurrency)
            self._liveness.event = asyncio.Event()
        semaphore = self._semaphore
        liveness = self._liveness

        async def guarded(index: int, force: bool = False) -> None:
            async with semaphore:
                if liveness.dead and not force:
                    outcome = Outcome(error=self._dead_reason())
                else:
                    outcome = await self._watched(one, requests[index])
            emit((index, outcome))

        indices = list(range(len(requests)))
        # a judge found dead by an earlier batch gets one probe (one attempt: its first failure
        # declares the judge dead again); failing, the rest of the batch is not sent
        force = liveness.dead
        if force and liveness.event is not None:
            liveness.event.clear()
        probes = 0
        while indices and (force or (probe_first and probes < MAX_PROBES and not probe_until())):
            await guarded(indices.pop(0), force=force)
            force, probes = False, probes + 1
        tasks = [asyncio.ensure_future(guarded(index)) for index in indices]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()

    async def _watched(self, one: Callable[[JudgeRequest], Awaitable[Outcome]],
                       request: JudgeRequest) -> Outcome:
        """``one(request)``; abandoned (cancelled, answered with the dead-judge reason) when the
        judge is declared dead while it waits."""
        dead = self._liveness.event
        assert dead is not None
        task = asyncio.ensure_future(one(request))
        waiter = asyncio.ensure_future(dead.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        finally:
            waiter.cancel()
        if task.done():
            return task.result()
        task.cancel()
        return Outcome(error=self._dead_reason())

    def _dead_reason(self) -> str:
        error = f"; last: {self._liveness.last_error}" if self._liveness.last_error else ""
        return (f"no answer: the judge at {self.host} is unreachable ({DEAD_AFTER} attempts in a "
                f"row failed to connect or timed out{error}), so its remaining requests were not "
                "sent; rerun when it is back (answers already received are cached)")

    def _redact(self, text: str) -> str:
        return redact(text, [str(self._client.api_key or "")])

    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request."""
        import openai

        tries = f"{self.max_retries + 1} attempt(s)"
        if isinstance(exc, openai.APIStatusError):
            text = f"HTTP {exc.status_code} from {self.host}: {exc.message}"
        elif isinstance(exc, openai.APITimeoutError):
            text = f"no answer from {self.host} within {self.timeout:g}s ({tries})"
        elif isinstance(exc, openai.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f": {type(cause).__name__}: {cause}" if cause else ""
            text = f"connection to {self.host} failed ({tries}){detail}"
        else:
            text = f"{type(exc).__name__}: {exc}"
        return self._redact(" ".join(text.split()))
