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
- Polling backs off from 1 s to ``$JUDGE_METRICS_BATCH_POLL`` seconds (default 30).

A protocol module (:mod:`.openai_batches`, :mod:`.anthropic_batches`, :mod:`.gemini_batches`)
supplies a :class:`BatchAPI`: submit, status, results.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import queue
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterable, Awaitable, Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...base.types import JudgeRequest, Outcome
from .base import ResultCallback
from .openai_transport import event_loop

POLL_ENV = "JUDGE_METRICS_BATCH_POLL"
FIND_LIMIT = 1000  # the most recent batches a rerun looks through for its round's token
STORE_FILE = "judge-batches.sqlite3"
_DONE = object()


def deliver(future: Future[Any], results: queue.SimpleQueue[Any], on_result: ResultCallback,
            interrupted: Callable[[], None] = lambda: None) -> None:
    """Hand each ``(index, outcome)`` the coroutine of ``future`` puts on ``results`` to
    ``on_result`` in the calling thread until it ends; interrupted, cancel it (and call
    ``interrupted``); its exception is raised here."""
    future.add_done_callback(lambda _: results.put(_DONE))
    try:
        while (item := results.get()) is not _DONE:
            on_result(*item)
    except BaseException:
        future.cancel()
        interrupted()
        raise
    if not future.cancelled() and future.exception() is not None:
        raise future.exception()  # type: ignore[misc]


class BatchItemFailed(RuntimeError):
    """One batch item came back without an answer (its reason is the message)."""


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


class BatchStore:
    """Batch ids by the hash of their requests, in a small SQLite file beside the call cache."""

    def __init__(self, directory: str | os.PathLike[str] | None) -> None:
        from ..cache import default_cache_dir

        self.path = Path(directory) if directory else default_cache_dir()

    def _connect(self) -> sqlite3.Connection:
        self.path.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path / STORE_FILE, timeout=30)
        db.execute("CREATE TABLE IF NOT EXISTS batches (key TEXT PRIMARY KEY, provider TEXT, "
                   "batch_id TEXT, created REAL, token TEXT)")
        columns = {row[1] for row in db.execute("PRAGMA table_info(batches)")}
        if "token" not in columns:  # a store written before submissions carried a token
            db.execute("ALTER TABLE batches ADD COLUMN token TEXT")
        return db

    def get(self, key: str) -> tuple[str | None, str | None] | None:
        """``(batch_id, token)`` of the round ``key``; batch_id None while it is submitting."""
        with self._connect() as db:
            row = db.execute("SELECT batch_id, token FROM batches WHERE key = ?",
                             (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def put(self, key: str, provider: str, batch_id: str | None, token: str | None) -> None:
        """Store the round ``key``: its batch id, or None while it is being submitted."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO batches (key, provider, batch_id, created, token) "
                       "VALUES (?, ?, ?, ?, ?)", (key, provider, batch_id, time.time(), token))

    def forget(self, key: str) -> None:
        with self._connect() as db:
            db.execute("DELETE FROM batches WHERE key = ?", (key,))


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


def poll_ceiling() -> float:
    try:
        return max(float(os.environ.get(POLL_ENV, "30")), 0.01)
    except ValueError:
        return 30.0


class Batcher:
    """Turns a backend's calls into batches of its provider's batch API."""

    def __init__(self, api: BatchAPI, provider: str, endpoint: str,
                 cache_dir: str | None, show_progress: bool) -> None:
        self.api = api
        self.provider = provider
        self.endpoint = endpoint
        self.store = BatchStore(cache_dir)
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
                if isinstance(answer, BatchItemFailed) and attempt == 1:
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
        it to end and return its answers by custom id."""
        key = round_key(self.provider, self.endpoint, items)
        batch_id, token = self.store.get(key) or (None, None)
        if batch_id is None and token:  # killed while submitting: did the provider take it?
            try:
                batch_id = await self.api.find(token)
            except Exception as exc:
                self._say(f"cannot look up the batch being submitted ({type(exc).__name__}: "
                          f"{exc}); submitting its requests again")
            if batch_id is not None:
                self.store.put(key, self.provider, batch_id, token)
        if batch_id is not None:
            try:
                status = await self.api.status(batch_id)
            except Exception as exc:
                self._say(f"cannot re-attach to batch {batch_id} ({type(exc).__name__}: {exc})"
                          "; submitting its requests again")
                status = Status(ended=True, total=0, done=0, usable=False)
            if status.usable:
                self._say(f"re-attached to batch {batch_id} ({self.provider}, "
                          f"{len(items)} requests)")
            else:
                batch_id = None
        if batch_id is None:
            token = uuid.uuid4().hex
            self.store.put(key, self.provider, None, token)  # "submitting", before the provider
            batch_id = await self.api.submit(items, token)
            self.store.put(key, self.provider, batch_id, token)
            self._say(f"submitted batch {batch_id} to {self.provider} ({len(items)} requests); "
                      "Ctrl-C leaves it running, a rerun picks it up")
        self.current = batch_id
        status = await self._wait(batch_id, len(items))
        if not status.usable:
            self.store.forget(key)
            why = status.detail or "the batch failed"
            return {cid: BatchItemFailed(f"batch {batch_id}: {why}") for cid, _ in items}
        answers = await self.api.results(status, batch_id, [cid for cid, _ in items])
        self.current = None
        return answers

    async def _wait(self, batch_id: str, total: int) -> Status:
        bar = None
        if self.show_progress:
            from tqdm.auto import tqdm

            bar = tqdm(total=total, desc=f"batch {batch_id}", unit="req", leave=False)
        delay, ceiling = min(1.0, poll_ceiling()), poll_ceiling()
        try:
            while True:
                status = await self.api.status(batch_id)
                if bar is not None:
                    bar.total = status.total or total
                    bar.n = status.done
                    bar.refresh()
                if status.ended:
                    return status
                await asyncio.sleep(delay)
                delay = min(delay * 2, ceiling)
        finally:
            if bar is not None:
                bar.close()

    def _say(self, text: str) -> None:
        print(text, file=sys.stderr, flush=True)
