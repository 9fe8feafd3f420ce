"""The judge runner: call cache, de-duplication, structured-answer validation, usage and cost.

Metrics talk to a :class:`Judge` (from :func:`get_judge`); the judge talks to one
:class:`~shared.engine.backends.base.Backend`. For each batch of requests the judge

1. computes every request's call key (:func:`shared.engine.cache.call_key`) and collapses identical
   requests into one,
2. answers what it can from this run's memory and the persistent call cache,
3. hands the rest to the backend as one batch (the backend bounds the concurrency) and stores
   each answer in the cache from the backend's ``on_result`` callback as soon as it arrives, so
   a killed run loses no finished call and a rerun sends only the missing ones.

Structured answers are parsed and checked by :mod:`shared.engine.answers`; this module decides what
follows (accept, reject, one repair). Per-request faults become ``Outcome(error=...)``; nothing
raises out of a batch except :class:`~shared.engine.backends.base.LogprobsUnavailable` (a
configuration
error). See docs/RUNNER.md.
"""

from __future__ import annotations

import json
import math
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..base.redaction import redact
from ..base.text import short_reason
from ..base.types import JudgeRequest, LabelAnswer, Outcome, TokenUsage, YesNoAnswer
from .answers import AnswerSchema, answer_schemas
from .cache import CallCache, call_key, open_cache
from .config import JudgeConfig, endpoint_of
from .pricing import cost_of, estimate_cost

if TYPE_CHECKING:
    from .backends.base import Backend

DRY_RUN_ERROR = "dry run: not sent"
# in the cache key of checked requests: bump when shared/engine/grounding.py changes
CHECK_VERSION = "1"

Check = Callable[[Any], "str | None"]


@dataclass
class Usage:
    """What a judge spent: requests sent (repair retries included, cache hits excluded), unique
    requests answered from the cache, and the backend's token counts of the calls sent."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


# ---------------------------------------------------------------- yes/no answers


def _float_out(x: float | None) -> float | str | None:
    return x if x is None or math.isfinite(x) else repr(float(x))


def _float_in(x: float | str | None) -> float | None:
    return None if x is None else float(x)


def _encode_yes_no(answer: YesNoAnswer) -> dict[str, Any]:
    return {
        "top": [[token, _float_out(logprob)] for token, logprob in answer.top],
        "p_yes": _float_out(answer.p_yes),
        "p_no": _float_out(answer.p_no),
    }


def _decode_yes_no(payload: dict[str, Any]) -> YesNoAnswer:
    return YesNoAnswer(
        top=[(token, float(logprob)) for token, logprob in payload["top"]],
        p_yes=_float_in(payload.get("p_yes")),
        p_no=_float_in(payload.get("p_no")),
    )


def _encode_labels(answer: LabelAnswer) -> dict[str, Any]:
    return {"probabilities": answer.probabilities, "method": answer.method, "text": answer.text}


def _decode_labels(payload: dict[str, Any]) -> LabelAnswer:
    return LabelAnswer({str(k): float(v) for k, v in payload["probabilities"].items()},
                       str(payload["method"]), payload.get("text"))


# ---------------------------------------------------------------- one batch


class _Batch:
    """The requests of one ``yes_no``/``structured`` call: groups of identical requests, their
    outcomes, the progress bar."""

    def __init__(
        self, judge: Judge, requests: list[JudgeRequest], keys: list[str], desc: str | None
    ) -> None:
        from tqdm.auto import tqdm

        self.judge = judge
        self.requests = requests
        self.groups: dict[str, list[int]] = {}
        for index, key in enumerate(keys):
            self.groups.setdefault(key, []).append(index)
        self.outcomes: list[Outcome | None] = [None] * len(requests)
        self.lock = threading.Lock()
        self.bar = tqdm(
            total=len(requests), desc=desc, unit="req", disable=not judge.config.show_progress
        )

    def first(self, key: str) -> JudgeRequest:
        return self.requests[self.groups[key][0]]

    def done(self, key: str) -> bool:
        return self.outcomes[self.groups[key][0]] is not None

    def deliver(self, key: str, outcome: Outcome, payload: Any = None) -> None:
        """Give ``outcome`` to every request of ``key`` (usage only to the first) and store a
        successful answer's ``payload`` in this run's memory and the call cache."""
        if payload is not None:
            self.judge._remember(key, payload)
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

    def serve_known(self, decode: Callable[[Any], Any]) -> list[str]:
        """Answer from memory and cache; return the keys still to send, in request order."""
        known = self.judge._recall(list(self.groups))
        missing = []
        for key in self.groups:
            if key in known:
                try:
                    value = decode(known[key])
                except (KeyError, TypeError, ValueError):  # an unreadable entry: ask again
                    missing.append(key)
                    continue
                self.judge.usage.cache_hits += 1
                self.deliver(key, Outcome(value=value, cached=True))
            else:
                missing.append(key)
        return missing

    def send(
        self,
        call: Callable[[list[JudgeRequest], Callable[[int, Outcome], None]], None],
        batch: list[tuple[str, JudgeRequest]],
        handle: Callable[[str, Outcome], None],
    ) -> str | None:
        """Send ``batch`` through ``call`` (a backend operation); ``handle`` each result as it
        arrives. Returns the error that stopped the backend, if any."""
        from .backends.base import LogprobsUnavailable

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
            self.judge._count_call(outcome.usage)
            key = batch[position][0]
            try:
                handle(key, outcome)
            except Exception as exc:  # bookkeeping must not lose the rest of the batch
                self.deliver(key, Outcome(error=short_reason(f"{type(exc).__name__}: {exc}")))

        try:
            call([request for _, request in batch], on_result)
        except LogprobsUnavailable:
            raise
        except Exception as exc:
            return short_reason(f"judge backend failed: {type(exc).__name__}: {exc}")
        return None

    def finish(self) -> list[Outcome]:
        self.bar.close()
        return [
            outcome if outcome is not None else Outcome(error="no answer from the judge backend")
            for outcome in self.outcomes
        ]


# ---------------------------------------------------------------- structured answers


@dataclass
class _Repair:
    """A first answer that gets one repair retry: its text, why it is invalid, what it cost."""

    answer: str
    reason: str
    usage: TokenUsage


class _StructuredCall:
    """One :meth:`Judge.structured` call: the first pass sends every request the cache cannot
    answer; the repair pass asks once more, with the reason, each one whose first answer was
    repairable (free text failing its schema, or any answer failing its check)."""

    def __init__(self, judge: Judge, requests: list[JudgeRequest], schemas: list[AnswerSchema],
                 checks: Sequence[Check | None] | None, max_tokens: int,
                 desc: str | None) -> None:
        self.backend = judge.backend
        self.max_tokens = max_tokens
        sampling = self.backend.sampling_params("structured")
        extra = {} if checks is None else {"check": CHECK_VERSION}
        keys = [
            judge._key("structured", request, sampling,
                       {"schema": schema.schema, "max_tokens": max_tokens, **extra})
            for request, schema in zip(requests, schemas, strict=True)
        ]
        self.schema_of = dict(zip(keys, schemas, strict=True))
        self.check_of = dict(zip(keys, checks or [None] * len(keys), strict=True))
        self.batch = _Batch(judge, requests, keys, desc)
        self.repairs: dict[str, _Repair] = {}
        self._lock = threading.Lock()

    def run(self) -> list[Outcome]:
        try:
            missing = self.batch.serve_known(lambda payload: payload["value"])
            self.first_pass(missing)
            self.repair_pass([key for key in missing if key in self.repairs])
        finally:
            outcomes = self.batch.finish()
        return outcomes

    # -- the two passes

    def first_pass(self, keys: list[str]) -> None:
        for group in _by_schema(keys, self.schema_of):
            requests = [(key, self.batch.first(key)) for key in group]
            error = self.batch.send(self._operation(group), requests, self.first_answer)
            _fail_unanswered(self.batch, [key for key in group if key not in self.repairs],
                             error)

    def repair_pass(self, keys: list[str]) -> None:
        for group in _by_schema(keys, self.schema_of):
            schema = self.schema_of[group[0]]
            fixes = [(key, repair_request(self.batch.first(key), self.repairs[key].answer,
                                          self.repairs[key].reason, schema)) for key in group]
            error = self.batch.send(self._operation(group), fixes, self.repaired_answer)
            for key in group:
                if not self.batch.done(key):
                    self._repair_failed(key, error or "no answer from the judge backend")

    # -- each answer

    def first_answer(self, key: str, outcome: Outcome) -> None:
        if not outcome.ok:
            self.batch.deliver(key, outcome)
            return
        value, reason, repairable = self.verdict(key, outcome)
        if reason is None:
            self._accept(key, value, outcome.usage)
        elif not repairable:
            self._reject(key, reason, outcome.usage)
        else:
            answer = outcome.value if isinstance(outcome.value, str) else json.dumps(
                outcome.value, ensure_ascii=False)
            with self._lock:
                self.repairs[key] = _Repair(answer, reason, outcome.usage)

    def repaired_answer(self, key: str, outcome: Outcome) -> None:
        first = self.repairs[key]
        usage = TokenUsage(first.usage.prompt_tokens + outcome.usage.prompt_tokens,
                           first.usage.completion_tokens + outcome.usage.completion_tokens)
        if not outcome.ok:
            self._repair_failed(key, outcome.error, usage)
            return
        value, reason, _ = self.verdict(key, outcome)
        if reason is None:
            self._accept(key, value, usage)
        else:
            self._reject(key, reason, usage)

    def verdict(self, key: str, outcome: Outcome) -> tuple[Any, str | None, bool]:
        """``(value, reason, repairable)`` of an answer: its schema first, then its check. A
        schema failure is repairable in free text only (a constrained decoder already enforced
        the schema); a failed check always is."""
        answer = outcome.value
        value, reason = self.schema_of[key].parse(answer)
        check = self.check_of[key]
        if reason is not None or check is None:
            return value, reason, isinstance(answer, str) and not outcome.constrained
        reason = check(value)
        return (value, None, False) if reason is None else (None, short_reason(reason), True)

    # -- plumbing

    def _operation(self, group: list[str]) -> Callable[..., None]:
        schema = self.schema_of[group[0]].schema
        return lambda reqs, on_result: self.backend.structured(
            reqs, schema, self.max_tokens, on_result)

    def _accept(self, key: str, value: Any, usage: TokenUsage) -> None:
        self.batch.deliver(key, Outcome(value=value, usage=usage), {"value": value})

    def _reject(self, key: str, reason: str, usage: TokenUsage) -> None:
        self.batch.deliver(key, Outcome(error=f"invalid judge answer: {reason}", usage=usage))

    def _repair_failed(self, key: str, why: str | None,
                       usage: TokenUsage | None = None) -> None:
        reason = self.repairs[key].reason
        self.batch.deliver(key, Outcome(
            error=short_reason(f"invalid judge answer: {reason}; repair failed: {why}"),
            usage=usage or TokenUsage()))


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



# ---------------------------------------------------------------- the judge


class Judge:
    """Sends judge requests through a backend, with caching, de-duplication and accounting.

    Create one per metric run with :func:`get_judge`; ``usage`` counts that run only.
    """

    def __init__(self, config: JudgeConfig, backend: Backend | None = None) -> None:
        self.config = config
        self.usage = Usage()
        self._backend = backend
        self._cache: CallCache | None = None
        self._memory: dict[str, Any] = {}
        self._planned: dict[str, tuple[JudgeRequest, int]] = {}
        self._lock = threading.Lock()

    # -- plumbing

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            from .backends import make_backend

            self._backend = make_backend(self.config)
        return self._backend

    @property
    def cache(self) -> CallCache | None:
        if not self.config.use_cache:
            return None
        if self._cache is None:
            self._cache = open_cache(self.config.cache_dir)
        return self._cache

    def _model(self) -> str | None:
        if self._backend is not None:
            return self._backend.model
        return self.config.resolved_model()

    def _key(self, operation: str, request: JudgeRequest, sampling: dict[str, Any],
             extra: dict[str, Any]) -> str:
        backend = self.backend
        return call_key(
            operation=operation, kind=backend.kind, endpoint=backend.endpoint,
            model=backend.model,
            messages=request.messages, sampling=sampling, prompt_id=request.prompt_id,
            extra=extra,
        )

    def _count_call(self, usage: TokenUsage) -> None:
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += int(usage.prompt_tokens or 0)
            self.usage.completion_tokens += int(usage.completion_tokens or 0)

    def _remember(self, key: str, payload: Any) -> None:
        with self._lock:
            self._memory[key] = payload
        cache = self.cache
        if cache is not None:
            try:
                cache.put(key, payload)
            except Exception as exc:  # a full disk must not stop the run
                warnings.warn(f"judge call cache write failed: {exc}", stacklevel=2)

    def _recall(self, keys: list[str]) -> dict[str, Any]:
        with self._lock:
            found = {key: self._memory[key] for key in keys if key in self._memory}
        cache = self.cache
        rest = [key for key in keys if key not in found]
        if cache is not None and rest:
            try:
                found.update(cache.get_many(rest))
            except Exception as exc:
                warnings.warn(f"judge call cache read failed: {exc}", stacklevel=2)
        return found

    def _plan_requests(self, operation: str, requests: list[JudgeRequest],
                       extra: dict[str, Any], completion_tokens: int) -> list[Outcome]:
        for request in requests:
            key = call_key(
                operation=operation, kind=self.config.provider,
                endpoint=endpoint_of(self.config.resolved_base_url()),
                model=self.config.resolved_model() or "",
                messages=request.messages, sampling={}, prompt_id=request.prompt_id, extra=extra,
            )
            self._planned.setdefault(key, (request, completion_tokens))
        return [Outcome(error=DRY_RUN_ERROR) for _ in requests]

    # -- public

    @property
    def cost(self) -> float | None:
        """USD spent on the calls this judge sent; ``None`` when the model's price is unknown."""
        return cost_of(
            self.config.provider, self._model(), self.usage.prompt_tokens,
            self.usage.completion_tokens,
        )

    def plan(self) -> dict[str, Any]:
        """Dry run: ``{"requests", "prompt_tokens", "completion_tokens", "cost"}`` of the unique
        requests this judge would have sent (an empty cache assumed; estimates, see
        :func:`shared.engine.pricing.estimate_cost`)."""
        planned = list(self._planned.values())
        totals = estimate_cost(
            [request for request, _ in planned], self.config.provider,
            self.config.resolved_model(), 0,
        )
        totals["completion_tokens"] = sum(tokens for _, tokens in planned)
        totals["cost"] = cost_of(
            self.config.provider, self.config.resolved_model(), totals["prompt_tokens"],
            totals["completion_tokens"],
        )
        return totals

    def yes_no(self, requests: Iterable[JudgeRequest], top_k: int = 5,
               desc: str | None = None) -> list[Outcome]:
        """Top-``top_k`` log-probabilities of each request's first answer token
        (``Outcome.value``: :class:`~shared.base.types.YesNoAnswer`).

        Raises :class:`~shared.engine.backends.base.LogprobsUnavailable` when the model has never
        given
        log-probabilities (found on its first answer); every other fault, an answer without
        them from a backend that gave them before included, is an ``Outcome.error``."""
        requests = _check_requests(requests)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        if not requests:
            return []
        return self._next_token(
            "yes_no", requests, {"top_k": top_k}, desc, YesNoAnswer, _encode_yes_no,
            _decode_yes_no, lambda reqs, on_result: self.backend.yes_no(reqs, top_k, on_result))

    def label_probabilities(self, requests: Iterable[JudgeRequest], labels: Sequence[str],
                            desc: str | None = None) -> list[Outcome]:
        """Each label's probability as each request's first answer token (``Outcome.value``:
        :class:`~shared.base.types.LabelAnswer`, not renormalised): exact from the full
        distribution on the local judge, from the top-20 log-probabilities on an
        OpenAI-compatible one, the written label (``method`` "sampled") from a model without
        log-probabilities. Cached, de-duplicated and counted as :meth:`yes_no` is."""
        requests = _check_requests(requests)
        labels = list(labels)
        if not labels or len(set(labels)) != len(labels) or not all(
                isinstance(label, str) and label.strip() == label and label for label in labels):
            raise ValueError(f"labels must be distinct non-empty stripped strings, got {labels!r}")
        return self._next_token(
            "labels", requests, {"labels": labels}, desc, LabelAnswer, _encode_labels,
            _decode_labels,
            lambda reqs, on_result: self.backend.label_probabilities(reqs, labels, on_result))

    def _next_token(self, operation: str, requests: list[JudgeRequest], extra: dict[str, Any],
                    desc: str | None, answer_type: type, encode: Callable[[Any], Any],
                    decode: Callable[[Any], Any],
                    call: Callable[[list[JudgeRequest], Callable[[int, Outcome], None]], None],
                    ) -> list[Outcome]:
        """A one-token operation (``yes_no``, ``labels``): dry-run plan, cache, de-duplication,
        sending the rest through ``call``, caching each ``answer_type`` answer as it arrives."""
        if not requests:
            return []
        if self.config.dry_run:
            return self._plan_requests(operation, requests, extra, 1)
        sampling = self.backend.sampling_params(operation)
        keys = [self._key(operation, request, sampling, extra) for request in requests]
        batch = _Batch(self, requests, keys, desc)
        try:
            missing = batch.serve_known(decode)

            def handle(key: str, outcome: Outcome) -> None:
                if outcome.ok and isinstance(outcome.value, answer_type):
                    batch.deliver(key, outcome, encode(outcome.value))
                elif outcome.ok:
                    batch.deliver(key, Outcome(
                        error=f"the backend answered {type(outcome.value).__name__}, "
                        f"not a {answer_type.__name__}", usage=outcome.usage))
                else:
                    batch.deliver(key, outcome)

            if missing:
                error = batch.send(call, [(key, batch.first(key)) for key in missing], handle)
                _fail_unanswered(batch, missing, error)
        finally:
            outcomes = batch.finish()
        return outcomes

    def structured(self, requests: Iterable[JudgeRequest],
                   schemas: dict[str, Any] | Sequence[dict[str, Any]],
                   max_tokens: int = 512, desc: str | None = None,
                   checks: Sequence[Check | None] | None = None) -> list[Outcome]:
        """Each request's JSON answer, parsed and validated against its schema
        (``Outcome.value``: the parsed JSON).

        ``schemas``: one JSON-schema dict for every request, or a sequence with one per request.
        An answer the backend did not constrain (``Outcome.constrained``) that does not
        validate gets one repair retry; still invalid:
        ``Outcome(error="invalid judge answer: <reason>")``. See :class:`_StructuredCall`.

        ``checks``: optional, one callable (or ``None``) per request, run on each schema-valid
        answer: ``None`` when the answer is usable, else the reason it is not (e.g.
        :mod:`shared.engine.grounding`: copied from the prompt). A failed check gets the same one
        repair
        retry, on every backend, with that reason spelled out. Only answers that pass are
        cached, under a key holding ``CHECK_VERSION`` (a check depends only on its request,
        which the key holds too), so a cached answer has passed its check."""
        requests = _check_requests(requests)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an int >= 1, got {max_tokens!r}")
        per_request = answer_schemas(schemas, len(requests))
        if checks is not None and len(checks) != len(requests):
            raise ValueError(f"checks has {len(checks)} entries for {len(requests)} requests")
        if not requests:
            return []
        if self.config.dry_run:
            return self._planned_structured(requests, per_request, max_tokens)
        return _StructuredCall(self, requests, per_request, checks, max_tokens, desc).run()

    def _planned_structured(self, requests: list[JudgeRequest], schemas: list[AnswerSchema],
                            max_tokens: int) -> list[Outcome]:
        for request, schema in zip(requests, schemas, strict=True):
            self._plan_requests("structured", [request],
                                {"schema": schema.schema, "max_tokens": max_tokens}, max_tokens)
        return [Outcome(error=DRY_RUN_ERROR) for _ in requests]


def _check_requests(requests: Iterable[JudgeRequest]) -> list[JudgeRequest]:
    if isinstance(requests, (str, JudgeRequest)):
        raise TypeError("requests must be a list of JudgeRequest")
    requests = list(requests)
    for index, request in enumerate(requests):
        if not isinstance(request, JudgeRequest):
            raise TypeError(
                f"requests[{index}] must be a JudgeRequest, got {type(request).__name__}"
            )
    return requests


def _by_schema(keys: list[str], schema_of: dict[str, AnswerSchema]) -> list[list[str]]:
    """Keys grouped by schema (a backend call takes one schema), in first-seen order."""
    groups: dict[str, list[str]] = {}
    for key in keys:
        groups.setdefault(schema_of[key].text, []).append(key)
    return list(groups.values())


def _fail_unanswered(batch: _Batch, keys: list[str], error: str | None) -> None:
    for key in keys:
        if not batch.done(key):
            batch.deliver(key, Outcome(error=error or "no answer from the judge backend"))


def get_judge(config: JudgeConfig, backend: Backend | None = None) -> Judge:
    """A judge with fresh usage counters. The backend is ``backend``, else
    ``shared.engine.backends.make_backend(config)`` (reused per process), created at the first call
    that needs it; a dry run never creates one."""
    if not isinstance(config, JudgeConfig):
        raise TypeError(f"config must be a JudgeConfig, got {type(config).__name__}")
    return Judge(config, backend)
