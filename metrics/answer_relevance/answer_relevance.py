"""Answer relevance: the share of an answer's statements that are relevant to the question
(Valor's LLM-guided definition, after DeepEval)."""

from __future__ import annotations

import evaluate

from shared import (
    Input,
    Judge,
    JudgeMetric,
    SampleResult,
    citations,
    first_failure,
    prompts,
    rag_example,
    rag_judge,
)

_CITATION = citations.VALOR

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
Examples:
    >>> metric = evaluate.load("metrics/answer_relevance")
    >>> result = metric.compute(questions=["What is the capital of France?"],
    ...                         predictions=["Paris is the capital of France."])
    >>> 0.0 <= result["answer_relevance"] <= 1.0
    True
"""


class AnswerRelevance(JudgeMetric):
    INPUTS = (Input("questions"), Input("predictions"))
    HEADLINE = ("answer_relevance",)
    EXTRACTIONS = ("statements",)
    EXAMPLE = rag_example("questions", "predictions")

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            reference_urls=["https://github.com/Striveworks/valor"],
        )

    def score(self, judge: Judge, questions: list[str], predictions: list[str]
              ) -> list[SampleResult]:
        statements = rag_judge.extract_statements(judge, predictions, questions)
        jobs = rag_judge.verdict_jobs(judge, statements, predictions,
                                      [{"question": question} for question in questions])
        verdicts = rag_judge.judge_items(judge, prompts.ANSWER_RELEVANCE, "statements", jobs,
                                         "answer_relevance")
        return [
            first_failure(step, judged) or SampleResult.measured(
                rag_judge.yes_share(judged), statements=step.value,
                verdicts=rag_judge.verdict_dicts(judged.value), **rag_judge.dropped_details(step))
            for step, judged in zip(statements, verdicts, strict=True)
        ]
