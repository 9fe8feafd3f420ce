"""G-Eval: a judge rates a text against the user's own criteria on an integer scale; the score is
the probability-weighted mean of the scale's score tokens (Liu et al. 2023)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from judge_metrics import (About, Example, Input, Judge, JudgeMetric, Option, SampleResult,
                           citations, mean_measured, scoring, user_criteria)

_DESCRIPTION = """\
G-Eval rates each text against criteria you write ("Is the answer concise and polite?") on an
integer scale (default 1 to 5). The judge answers with one score token, and the score is the
probability-weighted mean of the scale's scores: sum(s * P(s)), with P renormalised over the
scale (exact from the full next-token distribution on the local judge, from the top-20
log-probabilities on an OpenAI-compatible one, the written score where a model gives no
log-probabilities). With samples=N the distribution is instead the share of N answers sampled at
temperature 1 naming each score (the paper's own estimate, N requests per sample). Each sample's
score is rescaled to 0-1 over the scale.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the texts to rate.
    questions (list of str, optional): the questions they answer, shown to the judge.
    references (list of str or list of list of str, optional): reference answers, shown.
    contexts (list of list of str, optional): retrieved contexts, shown.
    sources (list of str, optional): the texts the predictions summarise or transform, shown.
Returns:
    g_eval (float or None): mean 0-1 score over the measured samples.
    pass_rate (float or None): with threshold, the share of measured samples at or above it.
    scores, details, unmeasured, usage, Cost: per-sample 0-1 scores; per sample raw_score,
        probabilities, score_method (and samples, sampled_scores, reason, passed); samples
        that could not be judged;
        call counts and cost.
"""


class GEval(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.GEVAL,
                  ("https://arxiv.org/abs/2303.16634", "https://github.com/nlpyang/geval"))
    INPUTS = (Input("predictions"), Input("questions", required=False),
              Input("references", kind="texts", required=False),
              Input("contexts", kind="list", required=False), Input("sources", required=False))
    OPTIONS = (
        Option("criteria", str, None, type_doc="str", default_doc="required", required=True,
               check=user_criteria.criteria_text,
               doc="what the judge rates, in your words (e.g. 'Is the answer concise?')"),
        Option("evaluation_steps", list, None, nullable=True, type_doc="list of str or None",
               check=user_criteria.evaluation_steps,
               doc="steps the judge follows, shown numbered after the criteria; None: the "
               "criteria alone (no steps are generated; the card says why)"),
        Option("rubric", dict, None, nullable=True, type_doc="dict or None",
               check=user_criteria.rubric,
               doc='what each score means, e.g. {"1": "rude", "5": "warm and polite"}'),
        Option("score_range", list, (1, 5), type_doc="[low, high] ints, 0 <= low < high <= 9",
               check=user_criteria.score_range,
               doc="the integer scale; each score must be one answer token, so single digits"),
        Option("threshold", float, None, nullable=True, range=(0, 1),
               doc="a 0-1 score at or above it passes: details[i]['passed'] and pass_rate"),
        Option("samples", int, None, nullable=True, range=(1, 100),
               doc="G-Eval's own estimate: N answers per sample at temperature 1 (each seeded "
               "apart where the provider takes a seed), the score distribution their shares; "
               "N requests per sample instead of 1. For judges without log-probabilities "
               "(details[i]['samples'], ['sampled_scores'])"),
        Option("explain", bool, False,
               doc="a second request per sample for a short reason of its score "
               "(details[i]['reason'])"),
    )
    HEADLINE = ("g_eval",)
    ROUNDS = ("score",)
    SCORING_PROMPTS = ("g_eval",)
    PREFERS = (("logprobs", True),)  # else the written label (score_method "sampled")
    DECISION_THRESHOLD = 0.5  # agree: the middle of the 0-1 score, i.e. of the scale
    EXAMPLE = Example({
        "questions": ["Where is my refund?", "Where is my refund?"],
        "predictions": ["Thanks for your patience! Your refund was sent today and should arrive "
                        "within three days.", "Read the FAQ. Refunds take time."],
    }, options={"criteria": "Is the reply polite and helpful to the customer?"})

    @classmethod
    def sent_prompts(cls, criteria: str = "{criteria}",
                     evaluation_steps: tuple[str, ...] | None = None,
                     rubric: dict[int, str] | None = None, score_range: tuple[int, int] = (1, 5),
                     explain: bool = False, **options: Any) -> tuple[Any, ...]:
        """Its prompt, written from the criteria, steps, rubric and scale (with ``explain``,
        the reason's too); without criteria, ``{criteria}`` stands in for them."""
        scale = _scale(criteria, evaluation_steps, rubric, score_range)
        return user_criteria.g_eval_prompts(scale, explain)

    def score(self, judge: Judge, predictions: list[str], questions: list[str] | None,
              references: list[list[str]] | None, contexts: list[list[str]] | None,
              sources: list[str] | None, criteria: str,
              evaluation_steps: tuple[str, ...] | None, rubric: dict[int, str] | None,
              score_range: tuple[int, int], threshold: float | None, samples: int | None,
              explain: bool) -> list[SampleResult]:
        scale = _scale(criteria, evaluation_steps, rubric, score_range)
        shown = user_criteria.sample_materials(len(predictions), questions, references,
                                                contexts, sources)
        readings = user_criteria.rate(judge, scale, predictions, shown, samples)
        raw = [scoring.expected_score(r.value.probabilities) if r.ok else None for r in readings]
        reasons = (user_criteria.explain(judge, scale, predictions, shown, raw) if explain
                   else [None] * len(predictions))
        return [SampleResult.first_failure(reading)
                or _result(reading.value, raw_score, reason, scale, threshold)
                for reading, raw_score, reason in zip(readings, raw, reasons, strict=True)]

    def aggregates(self, results: list[SampleResult], threshold: float | None = None,
                   **options: Any) -> dict[str, Any]:
        headline = super().aggregates(results)
        if threshold is not None:
            headline["pass_rate"] = mean_measured(
                r.details["passed"] for r in results if r.is_measured)
        return headline

    def panel_details(self, score: float, judged: Sequence[SampleResult],
                      aggregate: Callable[[Sequence[float]], float],
                      score_range: tuple[int, int] = (1, 5), threshold: float | None = None,
                      **options: Any) -> dict[str, Any]:
        """A panel's sample: its raw score on the scale and, with a threshold, whether it
        passes, both from the panel score (so pass_rate is the panel's)."""
        low, high = score_range
        details: dict[str, Any] = {"raw_score": low + score * (high - low)}
        if threshold is not None:
            details["passed"] = score >= threshold
        return details


def _scale(criteria: str, evaluation_steps: tuple[str, ...] | None,
           rubric: dict[int, str] | None, score_range: tuple[int, int]) -> Any:
    return user_criteria.Criteria(criteria, evaluation_steps or (), rubric or {}, *score_range)


def _result(reading: Any, raw_score: float, reason: Any, scale: Any,
            threshold: float | None) -> SampleResult:
    score = scoring.rescaled(raw_score, scale.low, scale.high)
    details: dict[str, Any] = {
        "raw_score": raw_score, "probabilities": reading.probabilities,
        "score_method": reading.method, "label_mass": reading.mass,
        "evaluation_steps": list(scale.steps)}
    if reading.samples is not None:
        details["samples"] = len(reading.samples)
        details["sampled_scores"] = [None if s is None else int(s) for s in reading.samples]
    if reason is not None:  # a failed reason keeps the score: the reason says why it is missing
        details["reason"] = reason.value["reason"] if reason.ok else None
        if not reason.ok:
            details["reason_error"] = reason.error
    if threshold is not None:
        details["passed"] = score >= threshold
    return SampleResult.measured(score, **details)
