"""Answer relevance: the share of an answer's statements that are relevant to the question
(Valor's LLM-guided definition, after DeepEval)."""

from __future__ import annotations

from typing import Any

import evaluate

from shared import (
    Input,
    ValidatedMetric,
    get_judge,
    judge_output,
    mean_measured,
    prompts,
    rag_example,
    rag_judge,
    scoring,
    split_judge_options,
)

_CITATION = """\
@misc{valor_lite,
  title={Valor: text generation metrics (valor-lite)},
  author={Striveworks},
  howpublished={\\url{https://github.com/Striveworks/valor}},
  year={2024}
}
"""

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


class AnswerRelevance(ValidatedMetric):
    INPUTS = (Input("questions"), Input("predictions"))
    HEADLINE = ("answer_relevance",)
    USES_JUDGE = True
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

    def _compute(
        self, questions: list[str], predictions: list[str], **options: Any
    ) -> dict[str, Any]:
        config, options = split_judge_options(options)
        judge = get_judge(config)
        statements = rag_judge.extract_statements(judge, predictions, questions)
        jobs = []
        for question, prediction, step in zip(questions, predictions, statements, strict=True):
            items = rag_judge.items_or_estimate(judge, step, prediction)
            jobs.append(None if items is None
                        else rag_judge.VerdictJob(items, {"question": question}))
        verdicts = rag_judge.judge_items(judge, prompts.ANSWER_RELEVANCE, "statements", jobs,
                                         "answer_relevance")
        results = rag_judge.SampleResults(len(predictions))
        for i, (step, judged) in enumerate(zip(statements, verdicts, strict=True)):
            if results.first_error(i, step, judged):
                continue
            flags = [v.yes for v in judged.value]
            results.score(i, scoring.proportion(flags, empty=0.0), statements=step.value,
                          verdicts=rag_judge.verdict_dicts(judged.value),
                          **rag_judge.dropped_details(step))
        return judge_output({"answer_relevance": mean_measured(results.scores)}, results.scores,
                            results.details, results.unmeasured, judge)
