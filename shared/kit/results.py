"""What every metric returns per sample, and how those results become ``compute()``'s dict.

Every metric reports one :class:`SampleResult` per sample: a score, or ``None`` with the reason
the sample is unmeasured, and the sample's details (inspect_ai's ``Score``/``unscored`` is the
model). ``compute()`` still returns the plain dict the cards document; that dict is a
:class:`MetricOutput`, which also carries the per-sample results, read with
:func:`results_of`. The batch scorer, the demo and the agreement command read them there
instead of guessing which lists of the dict are per-sample.

The string metrics score 100k samples in a fraction of a second, so their outputs build the
results only when something asks for them (``with_results`` takes a function).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .invalid_answers import category

if TYPE_CHECKING:
    from ..base.types import Outcome
    from ..engine.runner import Judge


@dataclass(frozen=True, slots=True)
class SampleResult:
    """One sample's result.

    ``score``: the sample's score (its first headline score), ``None`` when unmeasured.
    ``details``: what the metric shows about the sample (verdicts, reasons, match types, ...).
    ``unmeasured_reason``: why the sample (or, with ``scores``, one of its scores) has no value.
    ``scores``: for a metric with several headline scores (rouge), each by its output key.
    """

    score: float | None
    details: Mapping[str, Any] = field(default_factory=dict)
    unmeasured_reason: str | None = None
    scores: Mapping[str, float | None] = field(default_factory=dict)

    @classmethod
    def measured(cls, score: float, **details: Any) -> SampleResult:
        return cls(score, details)

    @classmethod
    def unmeasured(cls, reason: str, **details: Any) -> SampleResult:
        """A sample that has no score; its details start with ``error``: the reason."""
        return cls(None, {"error": reason, **details}, reason)

    @classmethod
    def judge_fault(cls, reason: str, **details: Any) -> SampleResult:
        """An unmeasured sample: the judge failed, or its answer was invalid. ``details`` carry
        the ``error`` and, for an invalid answer, its kind (``invalid_answer``,
        :func:`shared.kit.invalid_answers.category`)."""
        kind = category(reason)
        return cls.unmeasured(reason, **({"invalid_answer": kind} if kind else {}), **details)

    @classmethod
    def first_failure(cls, *steps: Outcome | None) -> SampleResult | None:
        """The unmeasured result of the first failed judge step (``None`` steps were not run),
        or ``None`` when none failed: ``SampleResult.first_failure(a, b) or formula(a, b)``."""
        for step in steps:
            if step is not None and not step.ok:
                return cls.judge_fault(step.error or "judge step failed")
        return None

    @property
    def is_measured(self) -> bool:
        return self.unmeasured_reason is None

    def value(self, key: str) -> float | None:
        """The score reported under output key ``key`` (``score`` for a one-score metric)."""
        return self.scores.get(key) if self.scores else self.score


class MetricOutput(dict):
    """``compute()``'s dict (unchanged public keys) that also carries the per-sample results.

    A copy made with ``dict(output)`` or ``{**output}`` is a plain dict without them: read
    them with :func:`results_of` before transforming the output.
    """

    def __init__(self, values: Mapping[str, Any],
                 results: Sequence[SampleResult] | Callable[[], Sequence[SampleResult]],
                 per_sample_keys: Iterable[str] = ("scores", "details")) -> None:
        super().__init__(values)
        self._results = results
        # the output keys whose values are one entry per sample (the rest are aggregates)
        self.per_sample_keys = frozenset(per_sample_keys)

    @property
    def results(self) -> tuple[SampleResult, ...]:
        if callable(self._results):
            self._results = self._results()
        if not isinstance(self._results, tuple):
            self._results = tuple(self._results)
        return self._results

    def __reduce__(self) -> tuple[Any, ...]:
        return (MetricOutput, (dict(self), self.results, self.per_sample_keys))


def results_of(output: Mapping[str, Any]) -> tuple[SampleResult, ...]:
    """The per-sample results of a metric's ``compute()`` output.

    Duck-typed, so an output of a Space's vendored copy of this package is read too."""
    results = getattr(output, "results", None)
    if results is None:
        raise TypeError(
            "not a judge-metrics output: compute() of a judge-metrics metric returns a "
            f"MetricOutput, got {type(output).__name__}"
        )
    return tuple(results)


def with_results(values: Mapping[str, Any],
                 results: Sequence[SampleResult] | Callable[[], Sequence[SampleResult]],
                 per_sample_keys: Iterable[str]) -> MetricOutput:
    """``values`` as they are (a metric whose public keys predate this contract: accuracy,
    bleu, rouge), carrying ``results`` (or the function that makes them) and naming the keys of
    ``values`` that hold one entry per sample."""
    return MetricOutput(values, results, per_sample_keys)


def aggregates_of(output: Mapping[str, Any]) -> dict[str, Any]:
    """The output's values that describe the whole run (headline, counts, intervals, usage),
    i.e. everything but its per-sample lists."""
    per_sample = getattr(output, "per_sample_keys", frozenset({"scores", "details"}))
    return {k: v for k, v in output.items() if k not in per_sample}


def _is_measured_number(score: Any) -> bool:
    if score is None or isinstance(score, bool):
        return score is not None
    return isinstance(score, (int, float)) and math.isfinite(score)


def mean_measured(scores: Iterable[Any]) -> float | None:
    """Mean of the measured scores (``None`` and NaN are unmeasured and skipped; booleans count
    as 1/0); ``None`` when nothing was measured. Never NaN."""
    values = [float(score) for score in scores if _is_measured_number(score)]
    return math.fsum(values) / len(values) if values else None


def no_nan(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def unmeasured_entries(results: Sequence[SampleResult]) -> list[dict[str, Any]]:
    """``[{"index", "reason"}]`` of the unmeasured samples, in sample order."""
    return [{"index": i, "reason": r.unmeasured_reason}
            for i, r in enumerate(results) if r.unmeasured_reason is not None]


def build_output(headline: Mapping[str, Any], results: Sequence[SampleResult],
                 judge: Judge | None = None) -> MetricOutput:
    """The standard ``compute()`` dict: the ``headline`` values, ``scores`` and ``details`` (one
    per sample) and ``unmeasured`` (``[{"index", "reason"}]``; left out for a metric without a
    judge when every sample was measured).

    With a ``judge``, also its accounting: ``invalid_answers`` (the unmeasured rows per kind of
    invalid judge answer, :func:`shared.kit.invalid_answers.count_invalid`), ``usage``,
    ``Cost`` and, in a dry run, ``dry_run: judge.plan()``. NaN in the headline or the scores
    becomes ``None``.
    """
    from .invalid_answers import count_invalid

    results = tuple(results)
    unmeasured = unmeasured_entries(results)
    output: dict[str, Any] = {key: no_nan(value) for key, value in headline.items()}
    output.update(scores=[no_nan(r.score) for r in results],
                  details=[dict(r.details) for r in results])
    if judge is None:
        if unmeasured:
            output["unmeasured"] = unmeasured
        return MetricOutput(output, results)
    output.update(
        unmeasured=unmeasured,
        invalid_answers=count_invalid(unmeasured),
        usage=judge.usage.as_dict(),
        Cost=judge.cost,
    )
    if judge.usage.cached_prompt_tokens:  # what the provider's prompt cache saved, in USD
        output["usage"]["cache_saving"] = judge.cache_saving
    if judge.config.dry_run:
        output["dry_run"] = judge.plan()
    return MetricOutput(output, results)
