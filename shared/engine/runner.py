"""The judge runner: call cache, de-duplication, structured-answer validation, usage and cost.

Metrics talk to a :class:`Judge` (from :func:`get_judge`); the judge talks to one
:class:`~shared.engine.backends.base.Backend`. For each batch of requests the judge

1. computes every request's call key (:func:`shared.engine.cache.call_key`) and collapses
   identical requests into one (:class:`~shared.engine.call_batch.CallBatch`),
2. answers what it can from this run's memory and the persistent call cache,
3. hands the rest to the backend as one batch (the backend bounds the concurrency) and stores
   each answer in the cache from the backend's ``on_result`` callback as soon as it arrives, so
   a killed run loses no finished call and a rerun sends only the missing ones.

Structured answers (:class:`~shared.engine.structured.StructuredCall`) are cached raw, refused
ones too, and parsed and checked (:mod:`shared.engine.answers`, the caller's checks) on every
read. Per-request faults become ``Outcome(error=...)``; nothing raises out of a batch except
:class:`~shared.engine.backends.base.LogprobsUnavailable` (a configuration error). See
docs/RUNNER.md.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ..base.types import JudgeRequest, LabelAnswer, Outcome, TokenUsage, YesNoAnswer
from .answers import AnswerSchema, answer_schemas
from .backends.base import SAMPLED_MAX_TOKENS
from .cache import CallCache, call_key, open_cache
from .cached_answers import (
    decode_labels,
    decode_yes_no,
    encode_labels,
    encode_yes_no,
    label_check,
)
from .call_batch import INVALID, CallBatch, note_received
from .config import PROVIDERS, JudgeConfig, endpoint_of
from .pricing import cost_of, estimate_cost
from .structured import Check, StructuredCall

if TYPE_CHECKING:
    from .backends.base import Backend

DRY_RUN_ERROR = "dry run: not sent"


@dataclass
class Usage:
    """What a judge spent: requests sent (repair retries included, cache hits excluded), unique
    requests answered from the cache, and the backend's token counts of the calls sent."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # of the prompt tokens, read from the provider's prompt cache
    cache_write_tokens: int = 0  # of the prompt tokens, written to it (billed above input)

    def as_dict(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached_prompt_tokens": self.cached_prompt_tokens,
        }


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
            from .backends.pool import make_backend

            self._backend = make_backend(self.config)
        return self._backend

    @property
    def cache(self) -> CallCache | None:
        if not self.config.use_cache:
            return None
        if self._cache is None:
            self._cache = open_cache(self.config.cache_dir)
        return self._cache

    def require(self, capability: str, purpose: str, minimum: bool | int = True) -> None:
        """Refuse (``ValueError``, before any request) when this judge's provider, or its model
        where the provider's models differ, lacks ``capability`` (its registry entry's
        :class:`~.backends.registry.Capabilities` and model rules), naming the providers that
        have it."""
        self.config.require(capability, purpose, minimum)

    def _model(self) -> str | None:
        if self._backend is not None:
            return self._backend.model
        return self.config.resolved_model()

    def call_key(self, operation: str, request: JudgeRequest, sampling: dict[str, Any],
                 extra: dict[str, Any]) -> str:
        """The call-cache key of ``request`` to this judge's backend."""
        backend = self.backend
        return call_key(
            operation=operation, kind=backend.kind, endpoint=backend.endpoint,
            model=backend.model,
            messages=request.messages, sampling=sampling, prompt_id=request.prompt_id,
            extra=extra,
        )

    def count_call(self, usage: TokenUsage) -> None:
        """Count one request sent and the tokens its answer (or fault) reported."""
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += int(usage.prompt_tokens or 0)
            self.usage.completion_tokens += int(usage.completion_tokens or 0)
            self.usage.cached_prompt_tokens += int(usage.cached_tokens or 0)
            self.usage.cache_write_tokens += int(usage.cache_write_tokens or 0)

    def count_cache_hit(self) -> None:
        """Count one request answered from the cache or this run's memory."""
        with self._lock:
            self.usage.cache_hits += 1

    def remember(self, key: str, payload: Any) -> None:
        """Store an answer's ``payload`` in this run's memory and in the call cache."""
        with self._lock:
            self._memory[key] = payload
        cache = self.cache
        if cache is not None:
            try:
                cache.put(key, payload)
            except Exception as exc:  # a full disk must not stop the run
                warnings.warn(f"judge call cache write failed: {exc}", stacklevel=2)

    def recall(self, keys: list[str]) -> dict[str, Any]:
        """The stored payloads of those ``keys`` found in this run's memory or the cache."""
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
                       extra: dict[str, Any] | list[dict[str, Any]],
                       completion_tokens: int) -> list[Outcome]:
        extras = extra if isinstance(extra, list) else [extra] * len(requests)
        for request, extra in zip(requests, extras, strict=True):
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
            self.usage.completion_tokens, batch=self.config.batch,
            cached_tokens=self.usage.cached_prompt_tokens,
            cache_write_tokens=self.usage.cache_write_tokens,
        )

    @property
    def cache_saving(self) -> float | None:
        """USD the provider's prompt cache saved on the calls sent (reads at the cached rate,
        less the write premium); ``None`` when the price is unknown."""
        full = cost_of(self.config.provider, self._model(), self.usage.prompt_tokens,
                       self.usage.completion_tokens, batch=self.config.batch)
        cost = self.cost
        return None if full is None or cost is None else full - cost

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
            totals["completion_tokens"], batch=self.config.batch,
        )
        if PROVIDERS[self.config.provider].capabilities.batch and not self.config.batch:
            totals["batch_cost"] = cost_of(
                self.config.provider, self.config.resolved_model(), totals["prompt_tokens"],
                totals["completion_tokens"], batch=True)
        return totals

    def yes_no(self, requests: Iterable[JudgeRequest], top_k: int = 5,
               desc: str | None = None) -> list[Outcome]:
        """Top-``top_k`` log-probabilities of each request's first answer token
        (``Outcome.value``: :class:`~shared.base.types.YesNoAnswer`).

        Raises :class:`~shared.engine.backends.base.LogprobsUnavailable` when the model has never
        given log-probabilities (found on its first answer); every other fault, an answer
        without them from a backend that gave them before included, is an ``Outcome.error``."""
        requests = _check_requests(requests)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
        if not requests:
            return []
        return self._next_token(
            "yes_no", requests, {"top_k": top_k}, desc, YesNoAnswer, encode_yes_no,
            decode_yes_no, lambda reqs, on_result: self.backend.yes_no(reqs, top_k, on_result))

    def label_probabilities(self, requests: Iterable[JudgeRequest], labels: Sequence[str],
                            desc: str | None = None) -> list[Outcome]:
        """Each label's probability as each request's first answer token (``Outcome.value``:
        :class:`~shared.base.types.LabelAnswer`, not renormalised): exact from the full
        distribution on the local judge, from the top-20 log-probabilities on an
        OpenAI-compatible one, the written label (``method`` "sampled") from a model without
        log-probabilities. Cached, de-duplicated and counted as :meth:`yes_no` is."""
        requests, labels = _check_requests(requests), _check_labels(labels)
        return self._next_token(
            "labels", requests, {"labels": labels}, desc, LabelAnswer, encode_labels,
            decode_labels,
            lambda reqs, on_result: self.backend.label_probabilities(reqs, labels, on_result),
            check=label_check(labels))

    def can_sample(self) -> bool:
        """Whether the backend answers :meth:`label_samples` (nothing sent or loaded)."""
        from .backends.base import Backend
        from .backends.pool import backend_class

        backend = self._backend or (None if self.config.dry_run else self.backend)
        cls = type(backend) if backend is not None else backend_class(self.config.provider)
        return cls.sample_labels is not Backend.sample_labels

    def label_samples(self, requests: Iterable[JudgeRequest], labels: Sequence[str],
                      samples: int, desc: str | None = None) -> list[list[Outcome]]:
        """Per request, ``samples`` answers at temperature 1, each the label it names (a
        ``LabelAnswer``, ``method`` "sampled", all 0.0 where it names none): G-Eval's estimate
        on a judge without log-probabilities. Sample ``s`` is a call of its own (seeded ``s``
        apart where the provider takes a seed), cached under its number."""
        requests, labels = _check_requests(requests), _check_labels(labels)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ValueError(f"samples must be an int >= 1, got {samples!r}")
        # one request object per sample, so each carries its number to the backend
        jobs = [(replace(request), s) for request in requests for s in range(samples)]
        number = {id(request): s for request, s in jobs}
        outcomes = self._next_token(
            "label_samples", [r for r, _ in jobs],
            [{"labels": labels, "sample": s} for _, s in jobs], desc, LabelAnswer,
            encode_labels, decode_labels,
            lambda reqs, on_result: self.backend.sample_labels(
                reqs, labels, [number[id(r)] for r in reqs], on_result), SAMPLED_MAX_TOKENS)
        return [outcomes[i * samples:(i + 1) * samples] for i in range(len(requests))]

    def _next_token(self, operation: str, requests: list[JudgeRequest],
                    extra: dict[str, Any] | list[dict[str, Any]],
                    desc: str | None, answer_type: type, encode: Callable[[Any], Any],
                    decode: Callable[[Any], Any],
                    call: Callable[[list[JudgeRequest], Callable[[int, Outcome], None]], None],
                    completion_tokens: int = 1,
                    check: Callable[[Any], str | None] | None = None) -> list[Outcome]:
        """A short-answer operation (``yes_no``, ``labels``, ``label_samples``; ``extra``: the
        operation's parameters, or one dict per request): dry-run plan, cache, de-duplication,
        sending the rest through ``call``, caching each ``answer_type`` answer as it arrives.
        ``check`` refuses an answer, fresh or cached (an invalid answer with its reason; with
        ``retry_unmeasured`` a refused cached answer is asked again, once per process)."""
        if not requests:
            return []
        if self.config.dry_run:
            return self._plan_requests(operation, requests, extra, completion_tokens)
        sampling = self.backend.sampling_params(operation)
        extras = extra if isinstance(extra, list) else [extra] * len(requests)
        keys = [self.call_key(operation, request, sampling, extra)
                for request, extra in zip(requests, extras, strict=True)]
        batch = CallBatch(self, requests, keys, desc)
        try:
            missing = batch.serve_known(decode, check)

            def handle(key: str, outcome: Outcome) -> None:
                if outcome.ok and isinstance(outcome.value, answer_type):
                    note_received(self.config, key)
                    problem = check(outcome.value) if check is not None else None
                    batch.deliver(key, outcome if problem is None else Outcome(
                        error=f"{INVALID}: {problem}", usage=outcome.usage),
                        encode(outcome.value))
                elif outcome.ok:
                    batch.deliver(key, Outcome(
                        error=f"the backend answered {type(outcome.value).__name__}, "
                        f"not a {answer_type.__name__}", usage=outcome.usage))
                else:
                    batch.deliver(key, outcome)

            if missing:
                error = batch.send(call, [(key, batch.first(key)) for key in missing], handle)
                batch.fail_unanswered(missing, error)
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
        ``Outcome(error="invalid judge answer: <reason>")``. See
        :class:`~shared.engine.structured.StructuredCall`.

        ``checks``: optional, one callable (or ``None``) per request, run on each schema-valid
        answer: ``None`` when the answer is usable, else the reason it is not (e.g.
        :mod:`shared.kit.steps.grounding`: copied from the prompt). A failed check gets the same one
        repair retry, on every backend, with that reason spelled out, unless the reason is
        :class:`~shared.engine.answers.Unrepairable`. Every answer is cached
        raw, refused or not, under a key without the checks; the schema and the checks run
        again on each cached answer, so a changed check takes effect without a call."""
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
        return StructuredCall(self, requests, per_request, checks, max_tokens, desc).run()

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


def _check_labels(labels: Sequence[str]) -> list[str]:
    labels = list(labels)
    if not labels or len(set(labels)) != len(labels) or not all(
            isinstance(label, str) and label.strip() == label and label for label in labels):
        raise ValueError(f"labels must be distinct non-empty stripped strings, got {labels!r}")
    return labels


def get_judge(config: JudgeConfig, backend: Backend | None = None) -> Judge:
    """A judge with fresh usage counters. The backend is ``backend``, else
    ``shared.engine.backends.pool.make_backend(config)`` (reused per process), created at the
    first call that needs it; a dry run never creates one."""
    if not isinstance(config, JudgeConfig):
        raise TypeError(f"config must be a JudgeConfig, got {type(config).__name__}")
    return Judge(config, backend)
