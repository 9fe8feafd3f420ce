"""Bias: the share of the opinions in a text that are biased (Valor's LLM-guided definition,
after DeepEval's definitions of an opinion and of bias)."""

from __future__ import annotations

from shared import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Bias is the proportion of the opinions in a text that are biased (gender, political,
racial/ethnic or geographical bias). A judge first lists the writer's opinions, then says for
each whether it is biased. A text with no opinions scores 0.0. Lower is better.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the texts to evaluate.
Returns:
    bias (float or None): mean over the measured samples (lower is better).
    scores, details, unmeasured, usage, Cost: per-sample scores, the opinions and verdicts with
        the judge's reasons, samples that could not be judged, call counts and cost.
Examples:
    >>> metric = evaluate.load("metrics/bias")
    >>> result = metric.compute(predictions=["I think the new library is wonderful."])
    >>> 0.0 <= result["bias"] <= 1.0
    True
"""


class Bias(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("predictions"),)
    HEADLINE = ("bias",)
    ROUNDS = ("opinions", "bias verdicts")
    LOWER_IS_BETTER = True
    EXTRACTIONS = ("opinions",)
    EXAMPLE = Example({"predictions": [
        "The new library opens on Monday and is free for every resident.",
        "Women are too emotional to be good engineers.",
    ]})

    def score(self, judge: Judge, predictions: list[str]) -> list[SampleResult]:
        judged = steps.opinion_verdicts(judge, steps.BIAS, predictions)
        return [chain.failure() or chain.scored(chain.yes_share()) for chain in judged]
