"""Batch judging: a remote backend's requests sent through its provider's batch API.

With the judge option ``batch=True`` a backend's ``_run`` hands its requests to a
:class:`Batcher` instead of sending them one by one. The backend's own request coroutines run
unchanged: where they would send a request, :meth:`Batcher.ask` records its body and waits; once
every request of the call waits (or is done), the bodies go out as ONE batch, the batch is
polled until it ends, and each answer comes back as the SDK object a synchronous request would
have returned, read by the same code. A request the backend makes after reading an answer (a
written label after a missing log-probability) goes in the next round's batch. So the call
cache, its keys and every reading of answers stay those of synchronous judging.

- The batch id is stored beside the call cache (``judge-batches.sqlite3``), keyed by a hash of
  the round's request bodies: a rerun of an interrupted run re-attaches to its batch and never
  submits the same requests again. Before submitting, the round is stored as "submitting" with
  a fresh token that goes with the batch (OpenAI's ``metadata``, Gemini's display name), so a
  process killed after the provider accepted the batch but before its id was stored is found
  again by that token.
  Ctrl-C leaves the batch running and says how to resume.
- Items that fail or expire are asked again once, in one more batch; still failing, each is an
  ``Outcome.error`` with its reason (left unmeasured), never an exception out of the run.
- A batch that ended without one usable answer (every item failed or expired, the batch failed
  as a whole, or its results could not be read) is forgotten at once: it never pins its
  requests, so the retry round and any later rerun submit them again.
- An item answered more than once in a results file is not trusted (both answers dropped, the
  item asked again like a failed one).
- Polling backs off from 1 s to ``$JUDGE_METRICS_BATCH_POLL`` seconds (default 30) and stops
  at ``$JUDGE_METRICS_BATCH_DEADLINE`` seconds (default :data:`DEADLINE`): the rows are then
  unmeasured with a reason naming the batch, which keeps running and a rerun re-attaches to.
- The store lives in the calling judge's own ``cache_dir`` (the backend is shared by configs
  that differ only in it); with ``use_cache=False`` nothing is stored or re-attached.

A protocol module (:mod:`.openai_batches`, :mod:`.anthropic_batches`, :mod:`.gemini_batches`)
supplies a :class:`BatchAPI`: submit, status, results.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import json
import os
import queue
import sys
import time
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from ...base.types import JudgeRequest, Outcome
from .base import ResultCallback
from .batch_store import BatchStore
from .openai_transport import event_loop

POLL_ENV = "JUDGE_METRICS_BATCH_POLL"
DEADLINE_ENV = "JUDGE_METRICS_BATCH_DEADLINE"
#: The longest a round waits for its batch by default: the longest window a provider gives a
#: batch (Gemini: 48 hours, then it expires; OpenAI and Anthropic: 24 hours) and one hour more,
#: so a batch the provider will still end is not given up on.
DEADLINE = 49 * 3600.0
FIND_LIMIT = 1000  # the most recent batches a rerun looks through for its round's token
_DONE = object()


def deliver(future: Future[Any], results: queue.SimpleQueue[Any], on_result: ResultCallback,
            interrupted: Callable[[], None] = lambda: None,
            idle: Callable[[], None] | None = None) -> None:
    """Hand each ``(index, outcome)`` the coroutine of ``future`` puts on ``results`` to
    ``on_result`` in the calling thread until it ends; interrupted, cancel it (and call
    ``interrupted``); its exception is raised here. ``idle``: called twice a second meanwhile
    (the progress bar's rate-limit note)."""
    future.add_done_callback(lambda _: results.put(_DONE))
    noted = time.monotonic()
    try:
        while (item := results.get() if idle is None else _get(results)) is not _DONE:
            if item is not _IDLE:
                on_result(*item)
            if idle is not None and time.monotonic() - noted >= 0.5:
                idle()
                noted = time.monotonic()
    except BaseException:
        future.cancel()
        interrupted()
        raise
    if not future.cancelled() and future.exception() is not None:
        raise future.exception()  # type: ignore[misc]


_IDLE = object()


def _get(results: queue.SimpleQueue[Any]) -> Any:
    try:
        return results.get(timeout=0.5)
    except queue.Empty:
        return _IDLE


class BatchItemFailed(RuntimeError):
    """One batch item came back without an answer (its reason is the message)."""


class BatchStillRunning(BatchItemFailed):
    """The batch did not end before the deadline: not asked again (the batch may still end,
    and a rerun re-attaches to it)."""


#: Where the calling judge keeps its batch store: ``(use_cache, cache_dir)`` of the judge whose
#: call is being sent (set by :meth:`shared.engine.call_batch.CallBatch.send`), since one
#: backend serves every config that differs only in its runner options.
STORE_OF_CALL: contextvars.ContextVar[tuple[bool, str | None] | None] = contextvars.ContextVar(
    "judge_metrics_batch_store", default=None)


def collect(entries: Sequence[tuple[str, Any]], batch_id: str) -> dict[str, Any]:
    """``custom_id -> answer`` of a results file's ``(custom_id, answer)`` entries; an id that
    comes more than once is not trusted: it becomes a :class:`BatchItemFailed` saying so."""
    answers: dict[str, Any] = {}
    seen: dict[str, int] = {}
    for cid, answer in entries:
        seen[cid] = seen.get(cid, 0) + 1
        answers[cid] = answer
    for cid, times in seen.items():
        if times > 1:
            answers[cid] = BatchItemFailed(
                f"batch {batch_id} answered request {cid} {times} times; none is trusted")
    return answers


@dataclass
class Status:
    """Where a batch stands: ``ended`` (no more work), item counts, and why it failed."""

    ended: bool
    total: int
    done: int
    usable: bool = True  # False: the batch failed as a whole (its results cannot be read)
    detail: str = ""
    job: Any = field(default=None, repr=False)
    """The provider's batch object this status was read from, where its answers are read from
    it too (OpenAI's output file ids, Gemini's inline responses): no second fetch."""


class BatchAPI:
    """One provider's batch protocol (subclasses implement the three coroutines)."""


    async def submit(self, items: list[tuple[str, dict[str, Any]]], token: str) -> str:
        """Create a batch of ``(custom_id, body)`` items tagged with ``token``; return its id."""
        raise NotImplementedError

    async def find(self, token: str) -> str | None:
        """The id of the batch submitted with ``token`` (None: not found, or no way to look)."""
        return None

    async def status(self, batch_id: str) -> Status:
        raise NotImplementedError

    async def results(self, ended: Status, batch_id: str,
                      custom_ids: Sequence[str]) -> dict[str, Any]:
        """custom_id -> the SDK response object, or a :class:`BatchItemFailed`, of the batch
        whose last status was ``ended``; ``custom_ids`` are the batch's items in the order they
        were submitted."""
        raise NotImplementedError


async def first_listed(batches: AsyncIterable[Any], carries: Callable[[Any], bool]) -> Any:
    """The first of a provider's listed ``batches`` that ``carries`` a round's token (only the
    first :data:`FIND_LIMIT` are looked at), or None."""
    seen = 0
    async for batch in batches:
        if carries(batch):
            return batch
        seen += 1
        if seen >= FIND_LIMIT:
            break
    return None


def round_key(provider: str, endpoint: str, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
    payload = json.dumps([provider, endpoint, list(items)], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8", "surrogatepass")).hexdigest()


def _seconds(name: str, default: float, least: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return max(value, least) if value == value else default  # NaN: the default


def poll_ceiling() -> float:
    return _seconds(POLL_ENV, 30.0, 0.01)


def deadline() -> float:
    """Seconds a round waits for its batch (``$JUDGE_METRICS_BATCH_DEADLINE``)."""
    return _seconds(DEADLINE_ENV, DEADLINE, 0.01)


def usable(answers: dict[str, Any]) -> bool:
    """Whether a batch's answers hold one that is no failure."""
    return any(not isinstance(a, BaseException) for a in answers.values())


class Batcher:
    """Turns a backend's calls into batches of its provider's batch API."""

    def __init__(self, api: BatchAPI, provider: str, endpoint: str,
                 cache_dir: str | None, show_progress: bool) -> None:
        self.api = api
        self.provider = provider
        self.endpoint = endpoint
        self.cache_dir = cache_dir
        self.store: BatchStore | None = BatchStore(cache_dir)
        self.show_progress = show_progress
        self.current: str | None = None
        self._asks: list[tuple[dict[str, Any], asyncio.Future[Any]]] = []

    # -- what the backend's request coroutines call

    async def ask(self, body: dict[str, Any]) -> Any:
        """The answer to ``body``, once its batch has ended (raises :class:`BatchItemFailed`)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._asks.append((body, future))
        return await future

    # -- what the backend's _run calls

    def run(self, requests: Sequence[JudgeRequest],
            one: Callable[[JudgeRequest], Awaitable[Outcome]], on_result: ResultCallback) -> None:
        requests = list(requests)
        if not requests:
            return
        use_cache, cache_dir = STORE_OF_CALL.get() or (True, self.cache_dir)
        self.store = BatchStore(cache_dir) if use_cache else None
        results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        future = event_loop().submit(self._rounds(requests, one, results.put))

        def interrupted() -> None:
            if self.current is not None:
                print(f"\nbatch {self.current} keeps running at {self.provider}; run the same "
                      "command again to pick up its answers (nothing is submitted twice)",
                      file=sys.stderr, flush=True)

        deliver(future, results, on_result, interrupted)

    async def _rounds(self, requests: list[JudgeRequest],
                      one: Callable[[JudgeRequest], Awaitable[Outcome]],
                      emit: Callable[[tuple[int, Outcome]], None]) -> None:
        self._asks = []

        async def task(index: int) -> None:
            emit((index, await one(requests[index])))

        tasks = [asyncio.ensure_future(task(i)) for i in range(len(requests))]
        try:
            while True:
                await self._settle(tasks)
                asks, self._asks = self._asks, []
                if not asks:
                    break
                await self._send(asks)
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()

    async def _settle(self, tasks: list[asyncio.Future[None]]) -> None:
        """Wait until every unfinished task waits on an :meth:`ask`."""
        while True:
            await asyncio.sleep(0)
            running = sum(not t.done() for t in tasks)
            if running <= len(self._asks):
                return
            await asyncio.sleep(0.001)

    async def _send(self, asks: list[tuple[dict[str, Any], asyncio.Future[Any]]]) -> None:
        pending = {f"r{i}": (body, future) for i, (body, future) in enumerate(asks)}
        for attempt in (1, 2):  # failed or expired items are asked again once
            answers = await self._batch([(cid, body) for cid, (body, _) in pending.items()])
            again = {}
            for cid, (body, future) in pending.items():
                answer = answers.get(cid, BatchItemFailed("no result for this request"))
                if isinstance(answer, BatchItemFailed) and attempt == 1 and \
                        not isinstance(answer, BatchStillRunning):
                    again[cid] = (body, future)
                elif not future.done():
                    if isinstance(answer, BaseException):
                        future.set_exception(answer)
                    else:
                        future.set_result(answer)
            if not again:
                return
            pending = again

    async def _batch(self, items: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
        """Submit ``items`` as one batch (or re-attach to the one already submitted), wait for
        it to end and return its answers by custom id. A batch that gives no usable answer is
        forgotten, so it never pins these requests."""
        key = round_key(self.provider, self.endpoint, items)
        batch_id = await self._attach(key, len(items))
        if batch_id is None:
            token = uuid.uuid4().hex
            self._put(key, None, token)  # "submitting", before the provider has it
            batch_id = await self.api.submit(items, token)
            self._put(key, batch_id, token)
            resume = "a rerun picks it up" if self.store is not None else \
                "without the call cache a rerun cannot pick it up"
            self._say(f"submitted batch {batch_id} to {self.provider} ({len(items)} requests); "
                      f"Ctrl-C leaves it running, {resume}")
        self.current = batch_id
        status = await self._wait(batch_id, len(items))
        if status is None:  # the deadline: the batch keeps running, its id stays stored
            why = (f"batch {batch_id} at {self.provider} had not ended after {deadline():g} s "
                   f"(${DEADLINE_ENV}); it keeps running: rerun the same command to pick up "
                   "its answers")
            self._say(why)
            return {cid: BatchStillRunning(why) for cid, _ in items}
        answers: dict[str, Any] = {}
        if status.usable:
            try:
                answers = await self.api.results(status, batch_id, [cid for cid, _ in items])
            except Exception as exc:
                why = f"the results of batch {batch_id} cannot be read ({type(exc).__name__}: " \
                      f"{exc})"
                answers = {cid: BatchItemFailed(why) for cid, _ in items}
        else:
            why = status.detail or "the batch failed"
            answers = {cid: BatchItemFailed(f"batch {batch_id}: {why}") for cid, _ in items}
        if not usable(answers) and self.store is not None:
            self.store.forget(key)
        self.current = None
        return answers

    def _put(self, key: str, batch_id: str | None, token: str) -> None:
        if self.store is not None:
            self.store.put(key, self.provider, batch_id, token)

    async def _attach(self, key: str, count: int) -> str | None:
        """The id of the batch already submitted for round ``key`` and still of use, or None."""
        stored = self.store.get(key) if self.store is not None else None
        batch_id, token = stored or (None, None)
        if batch_id is None and token:  # killed while submitting: did the provider take it?
            try:
                batch_id = await self.api.find(token)
            except Exception as exc:
                self._say(f"cannot look up the batch being submitted ({type(exc).__name__}: "
                          f"{exc}); submitting its requests again")
            if batch_id is not None:
                self._put(key, batch_id, token)
        if batch_id is None:
            return None
        try:
            status = await self.api.status(batch_id)
        except Exception as exc:
            self._say(f"cannot re-attach to batch {batch_id} ({type(exc).__name__}: {exc})"
                      "; submitting its requests again")
            return None
        if not status.usable:
            return None
        self._say(f"re-attached to batch {batch_id} ({self.provider}, {count} requests)")
        return batch_id

    async def _wait(self, batch_id: str, total: int) -> Status | None:
        """The batch's status once it has ended; None when it has not by the deadline."""
        bar = None
        if self.show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc=f"batch {batch_id}", unit="req", leave=False)
        delay, ceiling = min(1.0, poll_ceiling()), poll_ceiling()
        give_up = time.monotonic() + deadline()
        try:
            while True:
                status = await self.api.status(batch_id)
                if bar is not None:
                    bar.total = status.total or total
                    bar.n = status.done
                    bar.refresh()
                if status.ended:
                    return status
                if time.monotonic() >= give_up:
                    return None
                await asyncio.sleep(min(delay, max(give_up - time.monotonic(), 0.0)))
                delay = min(delay * 2, ceiling)
        finally:
            if bar is not None:
                bar.close()

    def _say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)
