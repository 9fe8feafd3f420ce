"""Faithfulness: the share of an answer's claims that the retrieved contexts imply (RAGAS's
definition, as Valor: contradicted and unrelated claims both count against)."""

from __future__ import annotations

from judge_metrics import (About, Input, Judge, JudgeMetric, SampleResult, citations, rag_example,
                           steps)

_DESCRIPTION = """\
Faithfulness is the proportion of the claims in an answer that the retrieved contexts imply. A
judge first splits the answer into claims (the same statement extraction as answer relevance),
then says for each claim whether the contexts state it or it follows from them; a claim the
contexts contradict or do not mention counts against. An answer with no claims scores 1.0; a
sample with no contexts scores 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    predictions (list of str): the answers to evaluate.
    contexts (list of list of str): per sample, the retrieved contexts (may be empty).
Returns:
    faithfulness (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the claims and verdicts with the
        judge's reasons, samples that could not be judged, call counts and cost.
"""


class Faithfulness(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR + citations.RAGAS,
                  ("https://github.com/Striveworks/valor",
                   "https://docs.ragas.io/en/latest/concepts/metrics/"))
    INPUTS = (Input("predictions"), Input("contexts", kind="list"))
    HEADLINE = ("faithfulness",)
    ROUNDS = ("claims", "faithfulness verdicts")
    SCORING_PROMPTS = ("faithfulness",)
    PROMPTS = (steps.STATEMENTS, steps.FAITHFULNESS)
    EXAMPLE = rag_example("predictions", "contexts")

    def score(self, judge: Judge, predictions: list[str], contexts: list[list[str]]
              ) -> list[SampleResult]:
        todo = [i for i, c in enumerate(contexts) if c]
        shown = [{"contexts": steps.as_json_list(contexts[i])} for i in todo]
        judged = steps.statement_verdicts(judge, steps.FAITHFULNESS,
                                          [predictions[i] for i in todo], shown)
        results = [SampleResult.measured(0.0, claims=[], verdicts=[], note="no contexts")
                   for _ in contexts]
        for i, chain in zip(todo, judged, strict=True):  # no claims: 1.0
            results[i] = chain.failure() or chain.scored(chain.yes_share(empty=1.0))
        return results
