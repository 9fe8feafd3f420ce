"""The judge runner: call cache, de-duplication, structured-answer validation, usage and cost.

Metrics talk to a :class:`Judge` (from :func:`get_judge`); the judge talks to one
:class:`~shared.backends.base.Backend`. For each batch of requests the judge

1. computes every request's call key (:func:`shared.cache.call_key`) and collapses identical
   requests into one,
2. answers what it can from this run's memory and the persistent call cache,
3. hands the rest to the backend as one batch (the backend bounds the concurrency) and stores
   each answer in the cache from the backend's ``on_result`` callback as soon as it arrives, so
   a killed run loses no finished call and a rerun sends only the missing ones.

Per-request faults become ``Outcome(error=...)``; nothing raises out of a batch except
:class:`~shared.backends.base.LogprobsUnavailable` (a configuration error). See docs/RUNNER.md.
"""

from __future__ import annotations

import json
import math
import re
import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .cache import CallCache, call_key, open_cache
from .config import JudgeConfig, endpoint_of
from .pricing import cost_of, estimate_cost
from .redaction import redact
from .types import JudgeRequest, Outcome, TokenUsage, YesNoAnswer

if TYPE_CHECKING:
    from .backends.base import Backend

DRY_RUN_ERROR = "dry run: not sent"
MAX_REASON_CHARS = 300
CHECK_VERSION = "1"  # in the cache key of checked requests: bump when shared/grounding.py changes

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


def _short(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 3] + "..."


# ---------------------------------------------------------------- structured answers


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number")


_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_FENCE = re.compile(r"```[A-Za-z0-9_-]*\s*\n?(.*?)```", re.DOTALL)
_MAX_STARTS = 64


def extract_json(text: str) -> Any:
    """The JSON in a judge's answer: the whole text, else a ```-fenced block, else the first
    object or array that parses. NaN and Infinity are refused. Raises ``ValueError``."""
    stripped = text.strip()
    try:
        return _DECODER.decode(stripped)
    except ValueError:
        pass
    for block in _FENCE.findall(stripped):
        try:
            return _DECODER.decode(block.strip())
        except ValueError:
            pass
    starts = [i for i, char in enumerate(stripped) if char in "{["][:_MAX_STARTS]
    for start in starts:
        try:
            return _DECODER.raw_decode(stripped, start)[0]
        except ValueError:
            pass
    raise ValueError("no JSON object or array in the answer" if not starts else
                     "the answer is not valid JSON")


def _schema_text(schema: dict[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


class _Schema:
    """A request schema with its validator, checked once."""

    def __init__(self, schema: dict[str, Any], index: int | None) -> None:
        import jsonschema

        where = "schemas" if index is None else f"schemas[{index}]"
        if not isinstance(schema, dict):
            raise TypeError(f"{where} must be a JSON-schema dict, got {type(schema).__name__}")
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError as exc:
            raise ValueError(f"{where} is not a valid JSON schema: {_short(exc.message)}") from exc
        self.schema = schema
        self.text = _schema_text(schema)
        self._validator = cls(schema)
        self._best_match = jsonschema.exceptions.best_match

    def parse(self, answer: Any) -> tuple[Any, str | None]:
        """``(value, None)`` for an answer that is valid JSON for the schema, else
        ``(None, reason)``."""
        if isinstance(answer, str):
            try:
                value = extract_json(answer)
            except ValueError as exc:
                return None, str(exc)
        elif isinstance(answer, (dict, list)):
            value = answer
        else:
            return None, f"expected JSON text, got {type(answer).__name__}"
        error = self._best_match(self._validator.iter_errors(value))
        if error is None:
            return value, None
        path = "/".join(str(part) for part in error.absolute_path)
        return None, _short(f"{error.message}" + (f" (at /{path})" if path else ""))


def repair_request(
    request: JudgeRequest, answer: str, reason: str, schema: _Schema
) -> JudgeRequest:
    """The original conversation, the invalid answer, and a request for corrected JSON only."""
    message = (
        f"Your answer is not valid: {reason}\n"
        "Reply with the corrected JSON only, with no other text. It must match this JSON "
        f"schema:\n{schema.text}"
    )
    messages = (*request.messages, ("assistant", str(answer)), ("user", message))
    return JudgeRequest(messages=messages, prompt_id=request.prompt_id)


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
                self.deliver(key, Outcome(error=_short(f"{type(exc).__name__}: {exc}")))

        try:
            call([request for _, request in batch], on_result)
        except LogprobsUnavailable:
            raise
        except Exception as exc:
            return _short(f"judge backend failed: {type(exc).__name__}: {exc}")
        return None

    def finish(self) -> list[Outcome]:
        self.bar.close()
        return [
            outcome if outcome is not None else Outcome(error="no answer from the judge backend")
            for outcome in self.outcomes
        ]


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
        :func:`shared.pricing.estimate_cost`)."""
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
        (``Outcome.value``: :class:`~shared.types.YesNoAnswer`).

        Raises :class:`~shared.backends.base.LogprobsUnavailable` when the model has never given
        log-probabilities (found on its first answer); every other fault, an answer without
        them from a backend that gave them before included, is an ``Outcome.error``."""
        requests = _check_requests(requests)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        if not requests:
            return []
        extra = {"top_k": top_k}
        if self.config.dry_run:
            return self._plan_requests("yes_no", requests, extra, 1)
        backend = self.backend
        sampling = backend.sampling_params("yes_no")
        keys = [self._key("yes_no", request, sampling, extra) for request in requests]
        batch = _Batch(self, requests, keys, desc)
        try:
            missing = batch.serve_known(_decode_yes_no)

            def handle(key: str, outcome: Outcome) -> None:
                if outcome.ok and isinstance(outcome.value, YesNoAnswer):
                    batch.deliver(key, outcome, _encode_yes_no(outcome.value))
                elif outcome.ok:
                    batch.deliver(key, Outcome(
                        error=f"the backend answered {type(outcome.value).__name__}, "
                        "not a YesNoAnswer", usage=outcome.usage))
                else:
                    batch.deliver(key, outcome)

            if missing:
                error = batch.send(
                    lambda reqs, on_result: backend.yes_no(reqs, top_k, on_result),
                    [(key, batch.first(key)) for key in missing], handle,
                )
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
        An unconstrained backend whose answer does not validate gets one repair retry; still
        invalid: ``Outcome(error="invalid judge answer: <reason>")``.

        ``checks``: optional, one callable (or ``None``) per request, run on each schema-valid
        answer: ``None`` when the answer is usable, else the reason it is not (e.g.
        :mod:`shared.grounding`: copied from the prompt). A failed check gets the same one repair
        retry, on every backend, with that reason spelled out. Only answers that pass are
        cached, under a key holding ``CHECK_VERSION`` (a check depends only on its request,
        which the key holds too), so a cached answer has passed its check."""
        requests = _check_requests(requests)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens must be an int >= 1, got {max_tokens!r}")
        per_request = _check_schemas(schemas, len(requests))
        if checks is not None and len(checks) != len(requests):
            raise ValueError(f"checks has {len(checks)} entries for {len(requests)} requests")
        if not requests:
            return []
        if self.config.dry_run:
            return self._planned_structured(requests, per_request, max_tokens)
        backend = self.backend
        sampling = backend.sampling_params("structured")
        extra = {} if checks is None else {"check": CHECK_VERSION}
        keys = [
            self._key("structured", request, sampling,
                      {"schema": schema.schema, "max_tokens": max_tokens, **extra})
            for request, schema in zip(requests, per_request, strict=True)
        ]
        schema_of = dict(zip(keys, per_request, strict=True))
        check_of = dict(zip(keys, checks or [None] * len(keys), strict=True))

        def parse(key: str, answer: Any) -> tuple[Any, str | None, bool]:
            """(value, reason, repairable): schema first, then the request's check."""
            value, reason = schema_of[key].parse(answer)
            if reason is not None or check_of[key] is None:
                return value, reason, isinstance(answer, str) and not backend.constrained
            reason = check_of[key](value)
            return (value, None, False) if reason is None else (None, _short(reason), True)

        batch = _Batch(self, requests, keys, desc)
        try:
            missing = batch.serve_known(lambda payload: payload["value"])
            repairs: dict[str, tuple[str, str, TokenUsage]] = {}
            repairs_lock = threading.Lock()

            def handle(key: str, outcome: Outcome) -> None:
                if not outcome.ok:
                    batch.deliver(key, outcome)
                    return
                value, reason, repairable = parse(key, outcome.value)
                if reason is None:
                    batch.deliver(key, Outcome(value=value, usage=outcome.usage), {"value": value})
                elif not repairable:
                    batch.deliver(key, Outcome(error=f"invalid judge answer: {reason}",
                                               usage=outcome.usage))
                else:
                    answer = outcome.value if isinstance(outcome.value, str) else json.dumps(
                        outcome.value, ensure_ascii=False)
                    with repairs_lock:
                        repairs[key] = (answer, reason, outcome.usage)

            def handle_repair(key: str, outcome: Outcome) -> None:
                answer, reason, first_usage = repairs[key]
                usage = TokenUsage(first_usage.prompt_tokens + outcome.usage.prompt_tokens,
                                   first_usage.completion_tokens + outcome.usage.completion_tokens)
                if not outcome.ok:
                    batch.deliver(key, Outcome(
                        error=_short(f"invalid judge answer: {reason}; repair failed: "
                                     f"{outcome.error}"), usage=usage))
                    return
                value, new_reason, _ = parse(key, outcome.value)
                if new_reason is None:
                    batch.deliver(key, Outcome(value=value, usage=usage), {"value": value})
                else:
                    batch.deliver(key, Outcome(error=f"invalid judge answer: {new_reason}",
                                               usage=usage))

            def call(schema: _Schema) -> Callable[..., None]:
                return lambda reqs, on_result: backend.structured(
                    reqs, schema.schema, max_tokens, on_result)

            for group in _by_schema(missing, schema_of):
                error = batch.send(call(schema_of[group[0]]),
                                   [(key, batch.first(key)) for key in group], handle)
                _fail_unanswered(batch, [key for key in group if key not in repairs], error)
            pending = [key for key in missing if key in repairs]
            for group in _by_schema(pending, schema_of):
                schema = schema_of[group[0]]
                fixes = [(key, repair_request(batch.first(key), repairs[key][0],
                                              repairs[key][1], schema)) for key in group]
                error = batch.send(call(schema), fixes, handle_repair)
                for key in group:
                    if not batch.done(key):
                        reason = repairs[key][1]
                        batch.deliver(key, Outcome(error=_short(
                            f"invalid judge answer: {reason}; repair failed: "
                            f"{error or 'no answer from the judge backend'}")))
        finally:
            outcomes = batch.finish()
        return outcomes

    def _planned_structured(self, requests: list[JudgeRequest], schemas: list[_Schema],
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


def _check_schemas(schemas: Any, count: int) -> list[_Schema]:
    if isinstance(schemas, dict):
        shared_schema = _Schema(schemas, None)
        return [shared_schema] * count
    if isinstance(schemas, (str, bytes)) or not isinstance(schemas, Sequence):
        raise TypeError("schemas must be a JSON-schema dict or a list of them, one per request")
    if len(schemas) != count:
        raise ValueError(f"schemas has {len(schemas)} entries for {count} requests")
    by_text: dict[str, _Schema] = {}
    checked = []
    for index, schema in enumerate(schemas):
        if not isinstance(schema, dict):
            raise TypeError(
                f"schemas[{index}] must be a JSON-schema dict, got {type(schema).__name__}"
            )
        text = _schema_text(schema)
        if text not in by_text:
            by_text[text] = _Schema(schema, index)
        checked.append(by_text[text])
    return checked


def _by_schema(keys: list[str], schema_of: dict[str, _Schema]) -> list[list[str]]:
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
    ``shared.backends.make_backend(config)`` (reused per process), created at the first call
    that needs it; a dry run never creates one."""
    if not isinstance(config, JudgeConfig):
        raise TypeError(f"config must be a JudgeConfig, got {type(config).__name__}")
    return Judge(config, backend)
