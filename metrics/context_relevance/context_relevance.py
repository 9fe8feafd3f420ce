"""Context relevance: the share of the retrieved contexts that are relevant to the question
(Valor's LLM-guided definition, after DeepEval)."""

from __future__ import annotations

from judge_metrics import (About, Input, Judge, JudgeMetric, SampleResult, citations, rag_example,
                           steps)

_DESCRIPTION = """\
Context relevance is the proportion of the retrieved contexts that are relevant to the question:
a context is relevant if any part of it helps to answer the question. One judge request per
sample gives a yes/no verdict per context. A sample with no contexts scores 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    questions (list of str): the questions.
    contexts (list of list of str): per sample, the retrieved contexts (may be empty).
Returns:
    context_relevance (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the verdict and reason per
        context, samples that could not be judged, call counts and cost.
"""


class ContextRelevance(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("questions"), Input("contexts", kind="list"))
    HEADLINE = ("context_relevance",)
    ROUNDS = ("relevance verdicts",)
    SCORING_PROMPTS = ("context_relevance",)
    PROMPTS = (steps.CONTEXT_RELEVANCE,)
    EXAMPLE = rag_example("questions", "contexts")

    def score(self, judge: Judge, questions: list[str], contexts: list[list[str]]
              ) -> list[SampleResult]:
        jobs = [steps.VerdictJob(list(c), {"question": q})
                for q, c in zip(questions, contexts, strict=True)]
        return steps.verdict_share(steps.CONTEXT_RELEVANCE.ask(judge, jobs), empty=0.0)
