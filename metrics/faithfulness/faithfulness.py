"""Faithfulness: the share of an answer's claims that the retrieved contexts imply (RAGAS's
definition, as Valor: contradicted and unrelated claims both count against)."""

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

_CITATION = citations.VALOR + citations.RAGAS

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
Examples:
    >>> metric = evaluate.load("metrics/faithfulness")
    >>> result = metric.compute(predictions=["Paris is the capital of France."],
    ...                         contexts=[["Paris is the capital of France."]])
    >>> 0.0 <= result["faithfulness"] <= 1.0
    True
"""


class Faithfulness(JudgeMetric):
    INPUTS = (Input("predictions"), Input("contexts", kind="list"))
    HEADLINE = ("faithfulness",)
    EXTRACTIONS = ("statements",)
    EXAMPLE = rag_example("predictions", "contexts")

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            reference_urls=["https://github.com/Striveworks/valor",
                            "https://docs.ragas.io/en/latest/concepts/metrics/"],
        )

    def score(self, judge: Judge, predictions: list[str], contexts: list[list[str]]
              ) -> list[SampleResult]:
        todo = [i for i, c in enumerate(contexts) if c]
        answers = [predictions[i] for i in todo]
        claims = rag_judge.extract_statements(judge, answers)
        jobs = rag_judge.verdict_jobs(judge, claims, answers,
                                      [{"contexts": rag_judge.as_json_list(contexts[i])}
                                       for i in todo])
        verdicts = rag_judge.judge_items(judge, prompts.FAITHFULNESS, "claims", jobs,
                                         "faithfulness")
        results = [SampleResult.measured(0.0, claims=[], verdicts=[], note="no contexts")
                   for _ in contexts]
        for i, step, judged in zip(todo, claims, verdicts, strict=True):
            results[i] = first_failure(step, judged) or SampleResult.measured(
                rag_judge.yes_share(judged, empty=1.0), claims=step.value,
                verdicts=rag_judge.verdict_dicts(judged.value), **rag_judge.dropped_details(step))
        return results
