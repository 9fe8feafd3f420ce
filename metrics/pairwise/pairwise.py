"""Pairwise preference: which of two answers a judge prefers, asked in both orders so that the
judge's preference for the first-shown answer cancels (position bias: Zheng et al. 2023)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from judge_metrics import (About, Example, Input, Judge, JudgeMetric, Option, SampleResult,
                           citations, scoring, stats, user_criteria)

DEFAULT_CRITERIA = ("Which answer is more helpful and correct, and better grounded in the given "
                    "context and reference where there are any?")

_DESCRIPTION = """\
Pairwise preference compares each prediction with a baseline answer (A/B testing a prompt or a
model). The judge sees both answers twice, once in each order, and P(the prediction is better)
is read from its A/B answer token's probabilities in each order (exact on the local judge, from
the top-20 log-probabilities on an OpenAI-compatible one). A sample's score is the mean over the
two orders, so a judge that favours whichever answer it sees first gains nothing: 0.5 means no
preference. win_rate is the mean score; swapping predictions and baselines gives 1 - score.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the answers of the system under test.
    baseline_predictions (list of str): the answers it is compared with.
    questions (list of str, optional): the questions, shown to the judge.
    references (list of str or list of list of str, optional): reference answers, shown.
    contexts (list of list of str, optional): retrieved contexts, shown.
Returns:
    win_rate (float or None): mean P(prediction preferred) over the measured samples.
    win_rate_ci ([float, float] or None): its seeded 95% bootstrap interval.
    wins, ties, losses (int): samples above, within and below the tie band around 0.5.
    tie_band (float): the tie band used.
    position_consistency (float or None): share of samples whose two orders pick the same answer.
    position_bias (float or None): mean P(the first-shown answer wins) - 0.5.
    scores, details, unmeasured, usage, Cost: per-sample scores; per sample outcome, consistent
        and both orders' probabilities; samples that could not be judged; calls and cost.
"""


class Pairwise(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.ZHENG_MT_BENCH,
                  ("https://arxiv.org/abs/2306.05685",))
    INPUTS = (Input("predictions"), Input("baseline_predictions"),
              Input("questions", required=False),
              Input("references", kind="texts", required=False),
              Input("contexts", kind="list", required=False))
    OPTIONS = (
        Option("criteria", str, DEFAULT_CRITERIA, check=user_criteria.criteria_text,
               doc="what makes an answer better, in your words"),
        Option("tie_band", float, 0.05, range=(0, 0.5),
               doc="a score within this distance of 0.5 (inclusive) is a tie"),
    )
    HEADLINE = ("win_rate",)
    ROUNDS = ("preference in both orders",)
    SCORING_PROMPTS = ("pairwise",)
    PREFERS = (("logprobs", True),)  # else the written label (score_method "sampled")
    DECISION_THRESHOLD = 0.5  # agree: above it, the judge prefers the prediction
    EXAMPLE = Example({
        "questions": ["What is the capital of France?", "When was the Eiffel Tower completed?"],
        "predictions": ["The capital of France is Paris.", "It was completed in 1889."],
        "baseline_predictions": ["France's capital is Lyon.", "The Eiffel Tower was completed "
                                 "in 1889 for the World's Fair."],
    })

    @classmethod
    def sent_prompts(cls, criteria: str = DEFAULT_CRITERIA, **options: Any) -> tuple[Any, ...]:
        """Its prompt, written from the criteria (the same in either order)."""
        return user_criteria.pairwise_prompts(criteria)

    def score(self, judge: Judge, predictions: list[str], baseline_predictions: list[str],
              questions: list[str] | None, references: list[list[str]] | None,
              contexts: list[list[str]] | None, criteria: str, tie_band: float,
              ) -> list[SampleResult]:
        shown = user_criteria.sample_materials(len(predictions), questions, references,
                                                contexts)
        steps = user_criteria.prefer(judge, criteria, predictions, baseline_predictions, shown)
        return [SampleResult.first_failure(step) or _result(*step.value, tie_band)
                for step in steps]

    def aggregates(self, results: list[SampleResult], tie_band: float = 0.05,
                   **options: Any) -> dict[str, Any]:
        measured = [r for r in results if r.is_measured]
        scores = [r.score for r in measured]
        preferences = [scoring.Preference(*(o["p_prediction"] for o in r.details["orders"]))
                       for r in measured]
        return {
            **super().aggregates(results),
            "win_rate_ci": list(stats.bootstrap_ci(scores)) if scores else None,
            **scoring.pairwise_summary(preferences, tie_band, scores),
            "tie_band": tie_band,
        }

    def panel_details(self, score: float, judged: Sequence[SampleResult],
                      aggregate: Callable[[Sequence[float]], float], tie_band: float = 0.05,
                      **options: Any) -> dict[str, Any]:
        """A panel's sample: its outcome from the panel score; each order's P(prediction
        preferred) combined over the judges as the scores are, so position consistency and bias
        describe the panel as one judge."""
        shown = [aggregate([r.details["orders"][k]["p_prediction"] for r in judged])
                 for k in range(2)]
        preference = scoring.Preference(*shown)
        return {"outcome": scoring.outcome(score, tie_band),
                "consistent": preference.consistent,
                "orders": [{"shown_first": "prediction", "p_prediction": shown[0]},
                           {"shown_first": "baseline", "p_prediction": shown[1]}]}


def _result(preference: Any, orders: list[dict[str, Any]], tie_band: float) -> SampleResult:
    return SampleResult.measured(
        preference.score, outcome=scoring.outcome(preference.score, tie_band),
        consistent=preference.consistent, orders=orders)
