"""One :meth:`shared.engine.runner.Judge.structured` call: the first pass, the repair pass, and
the cache of raw answers between them.

Every answer the judge gives is cached raw (its text, whether its decoding was constrained,
its token usage) under the key of the request that got it, as soon as it arrives, whatever the
checks make of it: a refused answer is not paid for twice. The schema and the checks run on
every answer, fresh or cached, so a changed check re-judges the cached answer without a call.
A repair request is a request like any other: the original conversation, the refused answer
and the reason, cached under its own key with its own raw answer. Only faults (no answer at
all: a time-out, a 5xx, a lost connection) are asked again on the next run; with the judge
option ``retry_unmeasured`` a cached answer the checks refuse (with no repair left) is asked
again too, once per process. See docs/RUNNER.md.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.text import short_reason
from ..base.types import JudgeRequest, Outcome, TokenUsage
from .answers import AnswerSchema, Unrepairable
from .call_batch import NO_ANSWER, BackendCall, CallBatch, JudgeState, ask_again, note_received

Check = Callable[[Any], "str | None"]


def encode_answer(answer: Outcome) -> dict[str, Any]:
    """What the cache stores of a structured answer: the raw answer, as the backend gave it."""
    usage = answer.usage
    return {"answer": answer.value, "constrained": bool(answer.constrained),
            "usage": [int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)]}


def decode_answer(payload: Any) -> Outcome:
    """The raw answer of a cache entry. An entry written before refused answers were cached
    holds the accepted JSON value (``{"value": ...}``); it is checked again like any answer.
    Raises ``KeyError``/``TypeError``/``ValueError`` on an unreadable entry."""
    if "answer" not in payload:
        return Outcome(value=payload["value"])
    prompt_tokens, completion_tokens = payload["usage"]
    return Outcome(value=payload["answer"], constrained=bool(payload["constrained"]),
                   usage=TokenUsage(int(prompt_tokens), int(completion_tokens)))


@dataclass
class AnswerCheck:
    """What the schema and the check make of one answer: its ``value``, or the ``reason`` it is
    refused and whether a repair may be asked for."""

    value: Any
    reason: str | None
    repairable: bool


@dataclass
class Repair:
    """A first answer that gets one repair request: that request, its key, why the answer was
    refused, what the first answer cost in this run and whether it came from the cache."""

    request: JudgeRequest
    key: str
    reason: str
    usage: TokenUsage
    cached: bool


def repair_request(
    request: JudgeRequest, answer: str, reason: str, schema: AnswerSchema
) -> JudgeRequest:
    """The original conversation, the invalid answer, and a request for corrected JSON only."""
    message = (
        f"Your answer is not valid: {reason}\n"
        "Reply with the corrected JSON only, with no other text. It must match this JSON "
        f"schema:\n{schema.text}"
    )
    messages = (*request.messages, ("assistant", str(answer)), ("user", message))
    return JudgeRequest(messages=messages, prompt_id=request.prompt_id)


class StructuredCall:
    """The first pass answers every request from the cache where it can and sends the rest;
    the repair pass does the same for each request whose first answer was repairable (free text
    failing its schema, or any answer failing its check)."""

    def __init__(self, judge: JudgeState, requests: list[JudgeRequest], schemas: list[AnswerSchema],
                 checks: Sequence[Check | None] | None, max_tokens: int,
                 desc: str | None) -> None:
        self.judge = judge
        self.backend = judge.backend
        self.max_tokens = max_tokens
        self.sampling = self.backend.sampling_params("structured")
        keys = [self.key_of(request, schema)
                for request, schema in zip(requests, schemas, strict=True)]
        self.schema_of = dict(zip(keys, schemas, strict=True))
        self.check_of = dict(zip(keys, checks or [None] * len(keys), strict=True))
        self.batch = CallBatch(judge, requests, keys, desc)
        self.repairs: dict[str, Repair] = {}
        self.lock = threading.Lock()

    def key_of(self, request: JudgeRequest, schema: AnswerSchema) -> str:
        """The call key of a structured request. The checks are not part of it: the cache holds
        the raw answer, which they do not change, and they run again on every read."""
        return self.judge.call_key("structured", request, self.sampling,
                                   {"schema": schema.schema, "max_tokens": self.max_tokens})

    def run(self) -> list[Outcome]:
        try:
            keys = list(self.batch.groups)
            self.send(self.from_cache(keys, repair=False), repair=False)
            repairs = [key for key in keys if key in self.repairs]
            self.send(self.from_cache(repairs, repair=True), repair=True)
        finally:
            outcomes = self.batch.finish()
        return outcomes

    # -- the two passes

    def from_cache(self, keys: list[str], repair: bool) -> list[str]:
        """Settle each key whose answer (the repair's when ``repair``) is in this run's memory or
        the cache; return the keys still to send, in order."""
        asked = {key: self.repairs[key].key if repair else key for key in keys}
        known = self.judge.recall(list(asked.values()))
        missing = []
        for key in keys:
            try:
                answer = decode_answer(known[asked[key]])
            except (KeyError, TypeError, ValueError):  # not there, or unreadable: ask
                missing.append(key)
                continue
            check_result = self.checked(key, answer)
            final = repair or not check_result.repairable
            if check_result.reason is not None and final and self.ask_again(asked[key]):
                missing.append(key)
                continue
            self.judge.count_cache_hit()
            self.settle(key, answer, check_result, repair, cached=True)
        return missing

    def ask_again(self, key: str) -> bool:
        """Whether a refused cached answer is sent again (:func:`call_batch.ask_again`)."""
        return ask_again(self.judge.config, key)

    def store(self, key: str, answer: Outcome) -> None:
        """Cache a raw answer the moment it arrives."""
        self.judge.remember(key, encode_answer(answer))
        note_received(self.judge.config, key)

    def send(self, keys: list[str], repair: bool) -> None:
        """Send the requests of ``keys`` (their repair requests when ``repair``), one backend
        call per schema; a key the backend did not answer gets the reason."""
        for group in by_schema(keys, self.schema_of):
            requests = [(key, self.repairs[key].request if repair else self.batch.first(key))
                        for key in group]
            handle = self.repaired_answer if repair else self.first_answer
            error = self.batch.send(self.operation(self.schema_of[group[0]]), requests, handle)
            for key in group:
                if self.batch.done(key) or (not repair and key in self.repairs):
                    continue
                if repair:
                    self.repair_failed(key, error or NO_ANSWER, self.repairs[key].usage)
                else:
                    self.batch.deliver(key, Outcome(error=error or NO_ANSWER))

    def operation(self, schema: AnswerSchema) -> BackendCall:
        """The backend's structured call for requests sharing ``schema``."""
        return lambda requests, on_result: self.backend.structured(
            requests, schema.schema, self.max_tokens, on_result)

    # -- each answer

    def first_answer(self, key: str, outcome: Outcome) -> None:
        if not outcome.ok:  # a fault: no answer, nothing cached, asked again next run
            self.batch.deliver(key, outcome)
            return
        self.store(key, outcome)
        self.settle(key, outcome, self.checked(key, outcome), repair=False, cached=False)

    def repaired_answer(self, key: str, outcome: Outcome) -> None:
        first = self.repairs[key]
        if not outcome.ok:
            self.repair_failed(key, outcome.error, add(first.usage, outcome.usage))
            return
        self.store(first.key, outcome)
        self.settle(key, outcome, self.checked(key, outcome), repair=True, cached=False)

    def settle(self, key: str, answer: Outcome, check_result: AnswerCheck, repair: bool,
               cached: bool) -> None:
        """Deliver an accepted or refused answer, or plan the repair of a repairable one.
        ``usage``: what the request's answers cost in this run (a cached answer costs
        nothing)."""
        usage = TokenUsage() if cached else answer.usage
        if repair:
            first = self.repairs[key]
            usage, cached = add(first.usage, usage), cached and first.cached
        if check_result.reason is None:
            self.batch.deliver(key, Outcome(value=check_result.value, usage=usage, cached=cached))
        elif repair or not check_result.repairable:
            self.batch.deliver(key, Outcome(error=f"invalid judge answer: {check_result.reason}",
                                            usage=usage, cached=cached))
        else:
            text = answer.value if isinstance(answer.value, str) else json.dumps(
                answer.value, ensure_ascii=False)
            request = repair_request(self.batch.first(key), text, check_result.reason,
                                     self.schema_of[key])
            with self.lock:
                self.repairs[key] = Repair(request, self.key_of(request, self.schema_of[key]),
                                           check_result.reason, usage, cached)

    def checked(self, key: str, answer: Outcome) -> AnswerCheck:
        """The schema first, then the check. A schema failure is repairable in free text only
        (a constrained decoder already enforced the schema); a failed check is, unless its
        reason is :class:`Unrepairable`."""
        value, reason = self.schema_of[key].parse(answer.value)
        check = self.check_of[key]
        if reason is not None or check is None:
            repairable = isinstance(answer.value, str) and not answer.constrained
            return AnswerCheck(value, reason, repairable)
        reason = check(value)
        return AnswerCheck(value, None, False) if reason is None else AnswerCheck(
            None, short_reason(reason), not isinstance(reason, Unrepairable))

    def repair_failed(self, key: str, why: str | None, usage: TokenUsage) -> None:
        reason = self.repairs[key].reason
        self.batch.deliver(key, Outcome(
            error=short_reason(f"invalid judge answer: {reason}; repair failed: {why}"),
            usage=usage))


def add(first: TokenUsage, second: TokenUsage) -> TokenUsage:
    return TokenUsage(first.prompt_tokens + second.prompt_tokens,
                      first.completion_tokens + second.completion_tokens,
                      first.cached_tokens + second.cached_tokens,
                      first.cache_write_tokens + second.cache_write_tokens)


def by_schema(keys: list[str], schema_of: dict[str, AnswerSchema]) -> list[list[str]]:
    """Keys grouped by schema (a backend call takes one schema), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(schema_of[key].text, []).append(key)
    return list(groups.values())
