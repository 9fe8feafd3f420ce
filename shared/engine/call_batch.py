"""One batch of judge requests: identical requests grouped under their call key, each group's
outcome, the progress bar, and the sending of a batch through a backend operation.

Used by :meth:`shared.engine.runner.Judge.yes_no` and
:class:`shared.engine.structured.StructuredCall`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..base.redaction import redact
from ..base.text import short_reason
from ..base.types import JudgeRequest, Outcome, TokenUsage

if TYPE_CHECKING:
    from .backends.base import Backend
    from .config import JudgeConfig

NO_ANSWER = "no answer from the judge backend"
INVALID = "invalid judge answer"
BackendCall = Callable[[list[JudgeRequest], Callable[[int, Outcome], None]], None]

# keys whose answer this process received with retry_unmeasured on: asked again once per
# process, not once per metric (the metrics of a run share their first steps through the cache)
_RECEIVED_ON_RETRY: set[str] = set()
_RECEIVED_LOCK = threading.Lock()


def ask_again(config: JudgeConfig, key: str) -> bool:
    """Whether a refused cached answer is sent again: with ``retry_unmeasured``, unless this
    process received it already."""
    if not config.retry_unmeasured:
        return False
    with _RECEIVED_LOCK:
        return key not in _RECEIVED_ON_RETRY


def note_received(config: JudgeConfig, key: str) -> None:
    """Record that this process received the answer of ``key`` (with ``retry_unmeasured``)."""
    if config.retry_unmeasured:
        with _RECEIVED_LOCK:
            _RECEIVED_ON_RETRY.add(key)


class JudgeState(Protocol):
    """What a batch needs of the judge that runs it (:class:`shared.engine.runner.Judge`):
    its settings and backend, its call keys, its answer store and its counters."""

    config: JudgeConfig

    @property
    def backend(self) -> Backend: ...

    def call_key(self, operation: str, request: JudgeRequest, sampling: dict[str, Any],
                 extra: dict[str, Any]) -> str: ...

    def remember(self, key: str, payload: Any) -> None: ...

    def recall(self, keys: list[str]) -> dict[str, Any]: ...

    def count_call(self, usage: TokenUsage) -> None: ...

    def count_cache_hit(self) -> None: ...


class CallBatch:
    """The requests of one ``yes_no``/``structured`` call: groups of identical requests, their
    outcomes, the progress bar."""

    def __init__(
        self, judge: JudgeState, requests: list[JudgeRequest], keys: list[str], desc: str | None
    ) -> None:
        from tqdm.auto import tqdm

        self.judge = judge
        self.requests = requests
        self.groups: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            self.groups.setdefault(key, []).append(index)
        self.outcomes: list[Outcome | None] = [None] * len(requests)
        self.lock = threading.Lock()
        self.noted: str | None = None
        self.bar = tqdm(
            total=len(requests), desc=desc, unit="req", disable=not judge.config.show_progress
        )

    def first(self, key: str) -> JudgeRequest:
        return self.requests[self.groups[key][0]]

    def done(self, key: str) -> bool:
        return self.outcomes[self.groups[key][0]] is not None

    def deliver(self, key: str, outcome: Outcome, payload: Any = None) -> None:
        """Give ``outcome`` to every request of ``key`` (usage only to the first) and store an
        answer's ``payload`` in this run's memory and the call cache."""
        if payload is not None:
            self.judge.remember(key, payload)
        if outcome.error is not None:  # a server may quote the request's credentials
            outcome.error = redact(outcome.error, [self.judge.config.resolved_api_key()])
        with self.lock:
            indices = self.groups[key]
            if self.outcomes[indices[0]] is not None:
                return
            self.outcomes[indices[0]] = outcome
            for index in indices[1:]:
                self.outcomes[index] = Outcome(
                    value=outcome.value, error=outcome.error, cached=outcome.cached
                )
            self.bar.update(len(indices))

    def serve_known(self, decode: Callable[[Any], Any],
                    check: Callable[[Any], str | None] | None = None) -> list[str]:
        """Answer from memory and cache; return the keys still to send, in request order.
        ``check(value)``: why a decoded answer is refused (its outcome is then the invalid
        answer with that reason; asked again instead with ``retry_unmeasured``), or ``None``."""
        known = self.judge.recall(list(self.groups))
        missing = []
        for key in self.groups:
            if key not in known:
                missing.append(key)
                continue
            try:
                value = decode(known[key])
            except (AttributeError, KeyError, TypeError, ValueError):  # unreadable: ask again
                missing.append(key)
                continue
            problem = check(value) if check is not None else None
            if problem is not None and ask_again(self.judge.config, key):
                missing.append(key)
                continue
            self.judge.count_cache_hit()
            self.deliver(key, Outcome(value=value, cached=True) if problem is None
                         else Outcome(error=f"{INVALID}: {problem}", cached=True))
        return missing

    def send(self, call: BackendCall, batch: list[tuple[str, JudgeRequest]],
             handle: Callable[[str, Outcome], None]) -> str | None:
        """Send ``batch`` (``(key, request)`` pairs) through ``call`` (a backend operation);
        ``handle`` each result as it arrives. Returns the error that stopped the backend, if
        any."""
        from .backends.base import LogprobsUnavailable
        from .backends.batching import STORE_OF_CALL
        from .backends.rate_limit import STATUS_NOTE

        answered: set[int] = set()
        answered_lock = threading.Lock()

        def on_result(position: int, outcome: Outcome) -> None:
            with answered_lock:
                if not 0 <= position < len(batch) or position in answered:
                    return
                answered.add(position)
            if not isinstance(outcome, Outcome):
                outcome = Outcome(error=f"the backend returned {type(outcome).__name__}")
            if not isinstance(outcome.usage, TokenUsage):
                outcome.usage = TokenUsage()
            self.judge.count_call(outcome.usage)
            key = batch[position][0]
            try:
                handle(key, outcome)
            except Exception as exc:  # bookkeeping must not lose the rest of the batch
                self.deliver(key, Outcome(error=short_reason(f"{type(exc).__name__}: {exc}")))

        config = self.judge.config
        store = STORE_OF_CALL.set((bool(config.use_cache), config.cache_dir))
        note = STATUS_NOTE.set(self.note)
        try:
            call([request for _, request in batch], on_result)
        except LogprobsUnavailable:
            raise
        except Exception as exc:
            return short_reason(f"judge backend failed: {type(exc).__name__}: {exc}")
        finally:
            STORE_OF_CALL.reset(store)
            STATUS_NOTE.reset(note)
        return None

    def note(self, text: str | None) -> None:
        """Show ``text`` (a judge's rate-limit status) beside the progress bar; ``None`` clears
        what it showed."""
        if text != self.noted:
            self.noted = text
            self.bar.set_postfix_str(text or "", refresh=True)

    def fail_unanswered(self, keys: list[str], error: str | None) -> None:
        """Give every key of ``keys`` still without an outcome ``error`` (no answer came)."""
        for key in keys:
            if not self.done(key):
                self.deliver(key, Outcome(error=error or NO_ANSWER))

    def finish(self) -> list[Outcome]:
        self.bar.close()
        return [outcome if outcome is not None else Outcome(error=NO_ANSWER)
                for outcome in self.outcomes]
