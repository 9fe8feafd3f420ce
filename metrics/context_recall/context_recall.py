"""Context recall: the share of the reference answer's statements that the retrieved contexts
support (Valor's LLM-guided definition, after RAGAS)."""

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


class ContextRecall(ValidatedMetric):
    INPUTS = (Input("contexts", kind="list"), Input("references", kind="texts"))
    HEADLINE = ("context_recall",)
    USES_JUDGE = True
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

    def _compute(self, contexts: list[list[str]], references: list[list[str]],
                 **options: Any) -> dict[str, Any]:
        config, options = split_judge_options(options)
        judge = get_judge(config)
        results = rag_judge.SampleResults(len(contexts))
        pairs = [(i, reference)
                 for i, (c, refs) in enumerate(zip(contexts, references, strict=True))
                 if c for reference in refs]
        statements = rag_judge.extract_statements(judge, [reference for _, reference in pairs])
        jobs = []
        for (i, reference), step in zip(pairs, statements, strict=True):
            items = rag_judge.items_or_estimate(judge, step, reference)
            jobs.append(None if items is None else rag_judge.VerdictJob(
                items, {"contexts": rag_judge.as_json_list(contexts[i])}))
        verdicts = rag_judge.judge_items(judge, prompts.CONTEXT_RECALL, "statements", jobs,
                                         "context_recall")
        per_sample: dict[int, list[tuple[rag_judge.Step, rag_judge.Step | None]]] = {}
        for (i, _), step, judged in zip(pairs, statements, verdicts, strict=True):
            per_sample.setdefault(i, []).append((step, judged))

        for i, sample_contexts in enumerate(contexts):
            if not sample_contexts:
                results.score(i, 0.0, references=[], note="no contexts")
                continue
            steps = per_sample[i]
            if results.first_error(i, *(s for pair in steps for s in pair)):
                continue
            per_reference = []
            for step, judged in steps:
                score = scoring.proportion([v.yes for v in judged.value], empty=0.0)
                per_reference.append({"statements": step.value, "score": score,
                                      "verdicts": rag_judge.verdict_dicts(judged.value)})
            results.score(i, scoring.best([r["score"] for r in per_reference]),
                          references=per_reference,
                          **rag_judge.dropped_details(*(step for step, _ in steps)))
        return judge_output({"context_recall": mean_measured(results.scores)}, results.scores,
                            results.details, results.unmeasured, judge)
