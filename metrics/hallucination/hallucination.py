"""Hallucination: the share of the retrieved contexts that the answer contradicts (Valor's
LLM-guided definition, after DeepEval). Lower is better."""

from __future__ import annotations

from judge_metrics import (About, Input, InputError, Judge, JudgeMetric, SampleResult, citations,
                           rag_example, steps)

_DESCRIPTION = """\
Hallucination is the proportion of the retrieved contexts that the answer contradicts. One judge
request per sample says, for each context, whether the answer directly contradicts it (agreeing
with a context, or not addressing it, is no contradiction). Lower is better: 0.0 means no
context is contradicted. Every sample needs at least one context.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the answers to evaluate.
    contexts (list of list of str): per sample, the retrieved contexts (at least one).
Returns:
    hallucination (float or None): mean over the measured samples (lower is better).
    scores, details, unmeasured, usage, Cost: per-sample scores, the verdict and reason per
        context ("yes": contradicted), samples that could not be judged, call counts and cost.
"""


class Hallucination(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("predictions"), Input("contexts", kind="list"))
    HEADLINE = ("hallucination",)
    ROUNDS = ("contradiction verdicts",)
    SCORING_PROMPTS = ("hallucination",)
    PROMPTS = (steps.HALLUCINATION,)
    LOWER_IS_BETTER = True
    EXAMPLE = rag_example("predictions", "contexts")

    def score(self, judge: Judge, predictions: list[str], contexts: list[list[str]]
              ) -> list[SampleResult]:
        for i, sample in enumerate(contexts):
            if not sample:
                raise InputError(
                    "contexts", i, "is empty: hallucination needs at least one context per sample"
                )
        jobs = [steps.VerdictJob(list(c), {"text": p})
                for p, c in zip(predictions, contexts, strict=True)]
        return steps.verdict_share(steps.HALLUCINATION.ask(judge, jobs))
