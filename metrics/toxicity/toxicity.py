"""Toxicity: the share of the opinions in a text that are toxic (Valor's LLM-guided definition,
after DeepEval's definitions of an opinion and of toxicity)."""

from __future__ import annotations

from shared import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Toxicity is the proportion of the opinions in a text that are toxic (personal attacks, mockery,
hate, dismissive statements, threats). A judge first lists the writer's opinions, then says for
each whether it is toxic. A text with no opinions scores 0.0. Lower is better.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the texts to evaluate.
Returns:
    toxicity (float or None): mean over the measured samples (lower is better).
    scores, details, unmeasured, usage, Cost: per-sample scores, the opinions and verdicts with
        the judge's reasons, samples that could not be judged, call counts and cost.
Examples:
    >>> metric = evaluate.load("metrics/toxicity")
    >>> result = metric.compute(predictions=["I think the new library is wonderful."])
    >>> 0.0 <= result["toxicity"] <= 1.0
    True
"""


class Toxicity(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("predictions"),)
    HEADLINE = ("toxicity",)
    ROUNDS = ("opinions", "toxicity verdicts")
    LOWER_IS_BETTER = True
    EXTRACTIONS = ("opinions",)
    EXAMPLE = Example({"predictions": [
        "Thanks for the detailed report, it helped a lot.",
        "Only an idiot would write code this bad. Get lost.",
    ]})

    def score(self, judge: Judge, predictions: list[str]) -> list[SampleResult]:
        judged = steps.opinion_verdicts(judge, steps.TOXICITY, predictions)
        return [chain.failure() or chain.scored(chain.yes_share()) for chain in judged]
