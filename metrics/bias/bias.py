"""Bias: the share of the opinions in a text that are biased (Valor's LLM-guided definition,
after DeepEval's definitions of an opinion and of bias)."""

from __future__ import annotations

import evaluate

from shared import (
    Example,
    Input,
    Judge,
    JudgeMetric,
    SampleResult,
    citations,
    prompts,
    text_judge,
)

_CITATION = citations.VALOR

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
    INPUTS = (Input("predictions"),)
    HEADLINE = ("bias",)
    LOWER_IS_BETTER = True
    EXTRACTIONS = ("opinions",)
    EXAMPLE = Example({"predictions": [
        "The new library opens on Monday and is free for every resident.",
        "Women are too emotional to be good engineers.",
    ]})

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            reference_urls=["https://github.com/Striveworks/valor"],
        )

    def score(self, judge: Judge, predictions: list[str]) -> list[SampleResult]:
        return text_judge.flagged_opinion_share(judge, predictions, prompts.BIAS, "bias")
