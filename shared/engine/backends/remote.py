"""What every remote judge backend shares, whatever its wire protocol: the asyncio plumbing.

Requests run on one asyncio event loop in a daemon worker thread shared by every backend of the
process (:func:`.openai_transport.event_loop`), so a backend works the same when it is called
from plain code and from inside a running event loop (Jupyter, Gradio). The calling thread waits
and receives each result (``on_result`` runs in the calling thread) as soon as its request
finishes; at most ``max_concurrency`` requests are in flight. A dead judge fails fast: after
:data:`DEAD_AFTER` attempts in a row that failed to connect or timed out, the rest of the batch
is not sent (docs/BACKENDS.md). Every failure reason passes the redaction step with the
backend's secrets.

A subclass (one per protocol: :mod:`.openai_compat`, :mod:`.anthropic_messages`, ...) supplies
its request call (the ``one`` coroutine each operation hands to :meth:`RemoteBackend._run`), its
reading of errors (:meth:`RemoteBackend.reason`) and the secrets to redact
(:meth:`RemoteBackend.secrets`); it reports each HTTP attempt's fate to ``self._liveness``
(:func:`.openai_transport.http_client` does it for an httpx-based SDK). A protocol that returns
log-probabilities (:mod:`.openai_compat`, :mod:`.gemini`) gives its request call
(:meth:`RemoteBackend._request`) and its readers of an answer (:attr:`RemoteBackend.read_text`,
:attr:`RemoteBackend.read_usage`, :attr:`RemoteBackend.read_top_logprobs`); the reading of
Yes/No and label probabilities around them (the first requests sent one at a time, the label
written by a model that gives none) and the seeded label samples are :class:`RemoteBackend`'s.
A protocol without log-probabilities builds on :class:`.written.WrittenAnswerBackend`.
"""

from __future__ import annotations

import asyncio
import math
import queue
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from ...base.redaction import redact
from ...base.types import JudgeRequest, LabelAnswer, Outcome, TokenUsage, YesNoAnswer
from ..logprobs import label_mass, sampled_answer
from .base import SAMPLED_MAX_TOKENS, Backend, LogprobsUnavailable, ResultCallback
from .batching import BatchAPI, Batcher, deliver
from .openai_transport import DEAD_AFTER, Liveness, event_loop, http_client
from .rate_limit import STATUS_NOTE, limiter_for

if TYPE_CHECKING:
    from ..config import JudgeConfig

__all__ = ["DEAD_AFTER", "MAX_PROBES", "MalformedResponse", "RemoteBackend", "host_of",
           "require_sdk", "top_pairs"]

#: Requests sent one at a time before a log-probability batch, until one answer tells whether
#: the model returns log-probabilities.
MAX_PROBES = 3


class MalformedResponse(ValueError):
    """A reply that is not a usable answer of its protocol."""


def top_pairs(entries: Any, token_field: str, logprob_field: str) -> list[tuple[str, float]]:
    """The ``(token, logprob)`` pairs of a reply's top log-probability ``entries`` (read from
    these attributes), in the order given; :class:`MalformedResponse` when one is not a
    log-probability."""
    top = []
    for entry in entries:
        token = getattr(entry, token_field, None)
        logprob = getattr(entry, logprob_field, None)
        if (not isinstance(token, str) or isinstance(logprob, bool)
                or not isinstance(logprob, (int, float)) or math.isnan(logprob)
                or logprob > 1e-6):
            raise MalformedResponse(f"malformed top log-probability entry {entry!r:.80}")
        top.append((token, float(logprob)))
    return top


def require_sdk(provider: str) -> Any:
    """The SDK of ``provider`` (its registry entry's ``sdk``), imported; missing, the one-line
    ``ValueError`` of the configuration check, naming the pip extra that installs it."""
    import importlib

    from ..config import check_sdk
    from .registry import PROVIDERS

    check_sdk(provider)
    module = PROVIDERS[provider].sdk
    assert module is not None, f"{provider!r} names no SDK"
    try:
        return importlib.import_module(module)
    except ImportError:  # found but broken: the same one line
        raise ValueError(f"provider={provider!r} needs the {module} SDK: pip install "
                         f"'judge-metrics[{PROVIDERS[provider].extra}]'") from None


def host_of(url: str | None) -> str:
    """``host[:port]`` of a URL, without any credentials in it."""
    if not url:
        return ""
    parsed = urlparse(url)
    host = parsed.hostname or ""
    return f"{host}:{parsed.port}" if parsed.port else host


class RemoteBackend(Backend):
    """A judge reached over the network: the concurrency bound, the liveness watch, the dead
    judge and the redaction of every failure reason."""

    #: The protocol's readers of an answer: its text and its token usage, and (for a protocol
    #: that returns them) its first-token top log-probabilities (``(answer, model, host) ->
    #: [(token, logprob)]``); each raises :class:`MalformedResponse` on an unreadable answer,
    #: the last :class:`LogprobsUnavailable` on an answer without log-probabilities.
    read_text: Callable[[Any], str]
    read_usage: Callable[[Any], TokenUsage]
    read_top_logprobs: Callable[[Any, str, str], list[tuple[str, float]]]

    def __init__(self, config: JudgeConfig) -> None:
        from ..config import endpoint_of

        base_url = config.resolved_base_url()
        self.provider = config.provider
        #: what this provider's model can do (the provider's entry, with its model's rule)
        self.capabilities = config.capabilities()
        #: the request field bounding the answer's length, as the provider's entry names it
        self.max_tokens_field = self.capabilities.max_tokens_field
        self.model = config.resolved_model() or ""
        self.base_url = base_url
        self.host = host_of(base_url)
        self.endpoint = endpoint_of(base_url)
        self.max_concurrency = config.max_concurrency
        self.timeout = float(config.timeout)
        self.max_retries = config.max_retries
        self._liveness = Liveness()
        self.limiter = limiter_for(self.provider, self.model, self.endpoint, self.host,
                                   config.max_concurrency, config.max_requests_per_minute,
                                   config.max_tokens_per_minute)
        self._semaphore: asyncio.Semaphore | None = None  # created on the loop
        self._config = config
        self.batcher: Batcher | None = None  # batch=True: see use_batch_api
        self._logprobs_seen = False  # an answer carried log-probabilities
        self._logprobs_missing = False  # label requests: the model gave none, write the label

    def use_batch_api(self, api: BatchAPI) -> None:
        """Send every call through ``api`` (one batch per round, :mod:`.batching`)."""
        self.batcher = Batcher(api, self.provider, self.endpoint, self._config.cache_dir,
                               self._config.show_progress)

    # -- what a protocol supplies

    @abstractmethod
    def reason(self, exc: BaseException) -> str:
        """A readable, key-free reason for a failed request (pass it through :meth:`_redact`)."""

    def secrets(self) -> list[str]:
        """The credentials no message may show (the API key)."""
        return []

    # -- helpers for a protocol's request coroutines

    def http_client(self, kind: Any = None) -> Any:
        """The SDK's httpx client (class ``kind``): liveness count and rate limiter inside."""
        return http_client(self.timeout, self._liveness, kind, self.limiter, self.max_retries)

    def _sdk_failure(self, exc: BaseException, timeout_error: type[BaseException],
                     connection_error: type[BaseException]) -> str:
        """The reason for a failure that is not an HTTP status, for an SDK whose errors give
        the timeout and the failed connection (its cause attached) as these two types."""
        tries = f"{self.max_retries + 1} attempt(s)"
        if isinstance(exc, timeout_error):
            return f"no answer from {self.host} within {self.timeout:g}s ({tries})"
        if isinstance(exc, connection_error):
            cause = exc.__cause__ or exc.__context__
            detail = f": {type(cause).__name__}: {cause}" if cause else ""
            return f"connection to {self.host} failed ({tries}){detail}"
        return f"{type(exc).__name__}: {exc}"

    def _redact(self, text: str) -> str:
        return redact(text, [s for s in self.secrets() if s])

    def _unusable(self, exc: Exception, usage: TokenUsage | None = None) -> Outcome:
        """The outcome of an answer that arrived but cannot be read."""
        return Outcome(error=self._redact(f"unusable answer from {self.host}: {exc}"),
                       usage=usage)

    async def _answer(self, send: Callable[[], Awaitable[Any]],
                      read: Callable[[Any], Outcome],
                      usage: Callable[[Any], TokenUsage]) -> Outcome:
        """``read(await send())``; a failed request is its :meth:`reason`, an unreadable answer
        (:class:`MalformedResponse`) an "unusable answer" with the tokens it used."""
        try:
            response = await send()
        except Exception as exc:
            return Outcome(error=self.reason(exc))
        try:
            return read(response)
        except MalformedResponse as exc:
            return self._unusable(exc, usage(response))

    # -- the operations of a protocol that returns log-probabilities (through its request
    #    call _request and its readers)

    def _yes_no(self, requests: Sequence[JudgeRequest], params: dict[str, Any],
                on_result: ResultCallback) -> None:
        """:meth:`yes_no` with the sampling ``params`` (the protocol checked ``top_k``): the
        first requests one at a time until an answer carries log-probabilities."""
        async def one(request: JudgeRequest) -> Outcome:
            read = await self._top_logprobs(request, params)
            if isinstance(read, Outcome):
                return read
            return Outcome(value=YesNoAnswer(top=read[0]), usage=read[1])

        self._run(requests, one, on_result, probe_first=not self._logprobs_seen,
                  probe_until=lambda: self._logprobs_seen)

    def _label_probabilities(
        self, requests: Sequence[JudgeRequest], labels: Sequence[str],
        logprob_fields: tuple[str, ...],
        read_label: Callable[[Any, Sequence[str]], LabelAnswer], on_result: ResultCallback,
    ) -> None:
        """:meth:`label_probabilities`: each label's probability in the first token's top
        log-probabilities (asked with the ``labels`` sampling parameters); from a model that has
        never returned them, the label its short written answer names (asked with those
        parameters less ``logprob_fields`` and at most ``SAMPLED_MAX_TOKENS`` tokens, read by
        ``read_label``; ``method`` "sampled"): never silently, each answer says which it is."""
        params = self.sampling_params("labels")
        written = {k: v for k, v in params.items() if k not in logprob_fields}
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
                return self._unusable(exc, got[1])
            return Outcome(value=LabelAnswer(mass), usage=got[1])

        async def one(request: JudgeRequest) -> Outcome:
            outcome = None if self._logprobs_missing else await read(request)
            if outcome is not None:
                return outcome
            return await self._answer(
                lambda: self._request(request, written),
                lambda answer: Outcome(value=read_label(answer, labels),
                                       usage=self.read_usage(answer)),
                self.read_usage)

        self._run(requests, one, on_result, probe_first=not self._logprobs_seen,
                  probe_until=lambda: self._logprobs_seen or self._logprobs_missing)

    def sample_labels(self, requests: Sequence[JudgeRequest], labels: Sequence[str],
                      samples: Sequence[int], on_result: ResultCallback) -> None:
        """Each request asked with the ``label_samples`` parameters, its seed (where the
        protocol takes one) that seed plus ``samples[i]``."""
        base = self.sampling_params("label_samples")

        def read(answer: Any) -> Outcome:
            return Outcome(value=sampled_answer(self.read_text(answer), labels),
                           usage=self.read_usage(answer))

        async def one(job: tuple[JudgeRequest, int]) -> Outcome:
            request, sample = job
            params = {**base, "seed": base["seed"] + sample} if "seed" in base else base
            return await self._answer(lambda: self._request(request, params), read,
                                      self.read_usage)

        jobs = list(zip(requests, samples, strict=True))
        self._run(jobs, one, on_result, probe_first=False)  # type: ignore[arg-type]

    async def _request(self, request: JudgeRequest, params: dict[str, Any]) -> Any:
        """The protocol's request call: ``request`` sent with the sampling ``params`` (its
        field names); a refusal of the log-probability fields raises
        :class:`LogprobsUnavailable`."""
        raise NotImplementedError(f"{type(self).__name__} gives no _request")

    async def _top_logprobs(self, request: JudgeRequest, params: dict[str, Any]
                            ) -> tuple[list[tuple[str, float]], TokenUsage] | Outcome:
        """The first answer token's top log-probabilities and the usage, or the failed
        ``Outcome``. Raises :class:`LogprobsUnavailable` while the model has never given them."""
        response = None
        try:
            response = await self._request(request, params)
            top = self.read_top_logprobs(response, self.model, self.host)
        except LogprobsUnavailable as exc:
            if not self._logprobs_seen:  # the model never gave them: a configuration error
                raise
            # it gave them before: this one answer is the fault, not the model
            return Outcome(error=self._redact(
                f"no log-probabilities in this answer from {self.host} (the model returned "
                f"them for earlier requests); not scored: {str(exc).split(';')[0]}"),
                usage=self.read_usage(response))
        except MalformedResponse as exc:
            return self._unusable(exc, self.read_usage(response))
        except Exception as exc:
            return Outcome(error=self.reason(exc))
        self._logprobs_seen = True
        return top, self.read_usage(response)

    # -- the plumbing

    @staticmethod
    def _close_quietly(close: Callable[[], Awaitable[Any]]) -> None:
        """Await ``close()`` on the shared event loop, best effort (at most 5 seconds)."""
        try:
            event_loop().submit(close()).result(timeout=5)
        except Exception:  # closing is best effort
            pass

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
        if self.batcher is not None:
            self.batcher.run(requests, one, on_result)
            return
        requests = list(requests)
        if not requests:
            return
        results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        future = event_loop().submit(
            self._batch(requests, one, results.put, probe_first, probe_until or (lambda: True)))
        note = STATUS_NOTE.get()
        deliver(future, results, on_result,
                idle=None if note is None else lambda: note(self.limiter.status()))

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
