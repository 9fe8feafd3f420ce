"""Context recall: the share of the reference answer's statements that the retrieved contexts
support (Valor's LLM-guided definition, after RAGAS)."""

from __future__ import annotations

from typing import Any

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
    scoring,
)

_CITATION = citations.VALOR

_DESCRIPTION = """\
Context recall is the proportion of the statements of the reference answer that can be
attributed to the retrieved contexts. A judge first splits the reference into statements (the
same extraction as answer correctness), then says for each whether the contexts state or support
it. With several references, the best reference's score counts. A sample with no contexts
scores 0.0; a reference with no statements scores 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    contexts (list of list of str): per sample, the retrieved contexts (may be empty).
    references (list of str or list of list of str): per sample, the reference answer or answers.
Returns:
    context_recall (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, each reference's statements and
        verdicts with the judge's reasons, samples that could not be judged, call counts and cost.
Examples:
    >>> metric = evaluate.load("metrics/context_recall")
    >>> result = metric.compute(contexts=[["Paris is the capital of France."]],
    ...                         references=["Paris is the capital of France."])
    >>> 0.0 <= result["context_recall"] <= 1.0
    True
"""


class ContextRecall(JudgeMetric):
    INPUTS = (Input("contexts", kind="list"), Input("references", kind="texts"))
    HEADLINE = ("context_recall",)
    EXTRACTIONS = ("statements",)
    EXAMPLE = rag_example("contexts", "references")

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=_DESCRIPTION,
            citation=_CITATION,
            inputs_description=self.describe_inputs(_KWARGS_DESCRIPTION),
            features=self.input_features(),
            reference_urls=["https://github.com/Striveworks/valor"],
        )

    def score(self, judge: Judge, contexts: list[list[str]], references: list[list[str]]
              ) -> list[SampleResult]:
        pairs = [(i, reference)
                 for i, (c, refs) in enumerate(zip(contexts, references, strict=True))
                 if c for reference in refs]
        texts = [reference for _, reference in pairs]
        statements = rag_judge.extract_statements(judge, texts)
        jobs = rag_judge.verdict_jobs(judge, statements, texts,
                                      [{"contexts": rag_judge.as_json_list(contexts[i])}
                                       for i, _ in pairs])
        verdicts = rag_judge.judge_items(judge, prompts.CONTEXT_RECALL, "statements", jobs,
                                         "context_recall")
        per_sample: dict[int, list[tuple[Any, Any]]] = {}
        for (i, _), step, judged in zip(pairs, statements, verdicts, strict=True):
            per_sample.setdefault(i, []).append((step, judged))
        return [
            SampleResult.measured(0.0, references=[], note="no contexts") if not sample_contexts
            else first_failure(*(s for pair in per_sample[i] for s in pair))
            or _recall(per_sample[i])
            for i, sample_contexts in enumerate(contexts)
        ]


def _recall(steps: list[tuple[Any, Any]]) -> SampleResult:
    """The best reference's share of statements the contexts support."""
    per_reference = [{"statements": step.value, "score": rag_judge.yes_share(judged),
                      "verdicts": rag_judge.verdict_dicts(judged.value)}
                     for step, judged in steps]
    return SampleResult.measured(scoring.best([r["score"] for r in per_reference]),
                                 references=per_reference,
                                 **rag_judge.dropped_details(*(step for step, _ in steps)))
