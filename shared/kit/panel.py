"""A panel of judges (the ``judges`` judge option): every sample judged by each judge, the
panel's score per sample from theirs, their agreement measured.

:meth:`shared.kit.judge_metric.JudgeMetric._compute` hands a config with ``judges`` here. Each
judge is its own :class:`~shared.engine.runner.Judge` (its own backend, so its own call-cache
keys, usage and cost) and runs the metric's own ``score`` over every sample; nothing a metric
does knows about panels. Then, per sample:

- ``details[i]["judge_scores"]``: each judge's score in the order of ``judges`` (``None``
  where that judge left the sample unmeasured), ``judge_details`` each judge's details, and,
  where some judge failed, ``judge_errors`` (its reason, ``None`` for the others);
- the panel's score: ``panel_aggregate`` (mean, median or majority) of the measured scores; a
  sample is unmeasured only when no judge measured it;
- the metric's panel details (:meth:`~shared.kit.judge_metric.JudgeMetric.panel_details`:
  pairwise's outcome and per-order probabilities, g_eval's raw score and pass), so its own
  ``aggregates`` (win counts, pass rate) read the panel as they read one judge.

The output adds ``judges`` (each judge's own aggregates, unmeasured count, usage and Cost),
``judge_agreement`` (Krippendorff's alpha among the judges), its ``judge_agreement_ci`` and
``judge_agreement_level``, and ``panel_aggregate``; ``usage`` and ``Cost`` are the totals.
docs/PANEL.md explains the choices.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig, endpoint_of, judge_configs
from ..engine.runner import get_judge
from .invalid_answers import count_invalid
from .panel_stats import agreement_level, alpha_interval, combine, is_binary, krippendorff_alpha
from .results import MetricOutput, SampleResult, no_nan, unmeasured_entries

if TYPE_CHECKING:
    from ..engine.runner import Judge

__all__ = ["judge_label", "panel_agreement", "score_panel"]

_USAGE_KEYS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens")


def judge_label(config: JudgeConfig) -> str:
    """``provider/model`` of one judge (``provider`` alone when it has no model name)."""
    model = config.resolved_model()
    return f"{config.provider}/{model}" if model else config.provider


def score_panel(metric: Any, config: JudgeConfig, inputs: Mapping[str, Any],
                options: Mapping[str, Any]) -> MetricOutput:
    """``metric``'s output (a :class:`~shared.kit.judge_metric.JudgeMetric`) with ``config``'s
    panel: each judge scores every sample."""
    configs = judge_configs(config)
    judges = [get_judge(judge_config) for judge_config in configs]
    for judge in judges:  # every judge checked before any judge is asked anything
        for capability, minimum in metric.REQUIRES:
            judge.require(capability, f"{metric.metric_name} ({judge_label(judge.config)})",
                          minimum)
    per_judge = [metric.score_samples(judge, inputs, options) for judge in judges]
    how = config.panel_aggregate
    if how == "majority":
        _check_binary(metric, per_judge)
    results = [_panel_result(metric, [judged[i] for judged in per_judge], how, options)
               for i in range(len(per_judge[0]))]
    agreement = panel_agreement(
        [[r.score if r.is_measured else None for r in judged] for judged in per_judge])
    output: dict[str, Any] = {key: no_nan(value)
                              for key, value in metric.aggregates(results, **options).items()}
    unmeasured = unmeasured_entries(results)
    output.update(
        scores=[no_nan(r.score) for r in results],
        details=[dict(r.details) for r in results],
        unmeasured=unmeasured,
        invalid_answers=count_invalid(unmeasured),
        panel_aggregate=how,
        **agreement,
        judges=[_judge_summary(metric, judge, judged, options)
                for judge, judged in zip(judges, per_judge, strict=True)],
        usage={key: sum(judge.usage.as_dict()[key] for judge in judges) for key in _USAGE_KEYS},
        Cost=_total([judge.cost for judge in judges]),
    )
    if config.dry_run:
        plans = [judge.plan() for judge in judges]
        output["dry_run"] = {
            **{key: sum(plan[key] for plan in plans)
               for key in ("requests", "prompt_tokens", "completion_tokens")},
            "cost": _total([plan["cost"] for plan in plans]),
        }
    return MetricOutput(output, results)


def panel_agreement(judge_scores: Sequence[Sequence[float | None]]) -> dict[str, Any]:
    """``judge_agreement`` (Krippendorff's alpha; ``None`` when undefined),
    ``judge_agreement_ci`` (its seeded 95% bootstrap interval over samples) and
    ``judge_agreement_level`` (``"nominal"`` for 0/1 scores, else ``"interval"``) of one list of
    scores per judge (``None``: unmeasured)."""
    if len(judge_scores) < 2 or not judge_scores[0]:
        return {"judge_agreement": None, "judge_agreement_ci": None,
                "judge_agreement_level": None}
    matrix = np.array([[np.nan if s is None else float(s) for s in scores]
                       for scores in judge_scores], dtype=np.float64).T
    level = agreement_level(matrix)
    return {"judge_agreement": krippendorff_alpha(matrix, level),
            "judge_agreement_ci": alpha_interval(matrix, level),
            "judge_agreement_level": level}


def _panel_result(metric: Any, judged: Sequence[SampleResult], how: str,
                  options: Mapping[str, Any]) -> SampleResult:
    scores = [no_nan(r.score) if r.is_measured else None for r in judged]
    errors = [r.unmeasured_reason for r in judged]
    panel: dict[str, Any] = {"judge_scores": scores}
    if any(errors):
        panel["judge_errors"] = errors
    panel["judge_details"] = [dict(r.details) for r in judged]
    measured = [r for r, score in zip(judged, scores, strict=True) if score is not None]
    if not measured:
        reasons = "; ".join(f"judge {index + 1}: {error}" for index, error in enumerate(errors))
        return SampleResult.unmeasured(f"no judge measured this sample ({reasons})", **panel)
    score = combine([r.score for r in measured], how)
    aggregate: Callable[[Sequence[float]], float] = \
        lambda values: combine(values, "mean" if how == "majority" else how)  # noqa: E731
    details = {**metric.panel_details(score, measured, aggregate, **options), **panel}
    if how == "majority" and 2 * sum(r.score for r in measured) == len(measured):
        details["panel_tie"] = True
    return SampleResult(score, details)


def _check_binary(metric: Any, per_judge: Sequence[Sequence[SampleResult]]) -> None:
    for index, judged in enumerate(per_judge):
        scores = [r.score for r in judged if r.is_measured]
        if not is_binary(scores):
            other = next(s for s in scores if s not in (0, 1))
            raise UserInputError(
                f"panel_aggregate='majority' takes 0/1 scores; {metric.name} gave {other!r} "
                f"(judge {index + 1}): use 'mean' or 'median' (the judges' answers are cached, "
                "so running again costs no request)")


def _judge_summary(metric: Any, judge: Judge, judged: Sequence[SampleResult],
                   options: Mapping[str, Any]) -> dict[str, Any]:
    """One judge's part of a panel's output: who it is, the metric's aggregates over its own
    scores, what it left unmeasured, and what it spent."""
    config = judge.config
    unmeasured = unmeasured_entries(judged)
    summary: dict[str, Any] = {
        "judge": judge_label(config), "provider": config.provider,
        "model": config.resolved_model(),
        "base_url": endpoint_of(config.resolved_base_url()) or None,
        **{key: no_nan(value) for key, value in metric.aggregates(list(judged),
                                                                   **options).items()},
        "unmeasured": len(unmeasured),
        "invalid_answers": count_invalid(unmeasured),
        "usage": judge.usage.as_dict(),
        "Cost": judge.cost,
    }
    if config.dry_run:
        summary["dry_run"] = judge.plan()
    return summary


def _total(costs: Sequence[float | None]) -> float | None:
    """The sum of the judges' costs; ``None`` when any is unknown (a total that leaves one out
    would read as the whole bill)."""
    return None if any(cost is None for cost in costs) else float(sum(costs))
