"""Answer relevance: the share of an answer's statements that are relevant to the question
(Valor's LLM-guided definition, after DeepEval)."""

from __future__ import annotations

from judge_metrics import (About, Input, Judge, JudgeMetric, SampleResult, citations, rag_example,
                           steps)

_DESCRIPTION = """\
Answer relevance is the proportion of the statements in an answer that are relevant to the
question. A judge first splits the answer into statements, then says for each whether it helps
to answer the question. An answer with no statements scores 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    questions (list of str): the questions.
    predictions (list of str): the answers to evaluate.
Returns:
    answer_relevance (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the statements and verdicts
        with the judge's reasons, samples that could not be judged, call counts and cost.
"""


class AnswerRelevance(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("questions"), Input("predictions"))
    HEADLINE = ("answer_relevance",)
    ROUNDS = ("statements", "relevance verdicts")
    SCORING_PROMPTS = ("answer_relevance",)
    PROMPTS = (steps.STATEMENTS_WITH_QUESTION, steps.ANSWER_RELEVANCE)
    EXAMPLE = rag_example("questions", "predictions")

    def score(self, judge: Judge, questions: list[str], predictions: list[str]
              ) -> list[SampleResult]:
        asked = [{"question": question} for question in questions]
        judged = steps.statement_verdicts(judge, steps.ANSWER_RELEVANCE, predictions, asked,
                                          questions)
        return [chain.failure() or chain.scored(chain.yes_share()) for chain in judged]
