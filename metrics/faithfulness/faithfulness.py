"""Faithfulness: the share of an answer's claims that the retrieved contexts imply (RAGAS's
definition, as Valor: contradicted and unrelated claims both count against)."""

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
@article{es2023ragas,
  title={RAGAS: Automated Evaluation of Retrieval Augmented Generation},
  author={Es, Shahul and James, Jithin and Espinosa-Anke, Luis and Schockaert, Steven},
  journal={arXiv preprint arXiv:2309.15217},
  year={2023}
}
"""

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


class Faithfulness(ValidatedMetric):
    INPUTS = (Input("predictions"), Input("contexts", kind="list"))
    HEADLINE = ("faithfulness",)
    USES_JUDGE = True
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

    def _compute(
        self, predictions: list[str], contexts: list[list[str]], **options: Any
    ) -> dict[str, Any]:
        config, options = split_judge_options(options)
        judge = get_judge(config)
        results = rag_judge.SampleResults(len(predictions))
        todo = [i for i, c in enumerate(contexts) if c]
        for i, sample in enumerate(contexts):
            if not sample:
                results.score(i, 0.0, claims=[], verdicts=[], note="no contexts")
        claims = rag_judge.extract_statements(judge, [predictions[i] for i in todo])
        jobs = []
        for i, step in zip(todo, claims, strict=True):
            items = rag_judge.items_or_estimate(judge, step, predictions[i])
            jobs.append(None if items is None else rag_judge.VerdictJob(items))
        for job, i in zip(jobs, todo, strict=True):
            if job is not None:
                job.fields["contexts"] = rag_judge.as_json_list(contexts[i])
        verdicts = rag_judge.judge_items(judge, prompts.FAITHFULNESS, "claims", jobs,
                                         "faithfulness")
        for i, step, judged in zip(todo, claims, verdicts, strict=True):
            if results.first_error(i, step, judged):
                continue
            flags = [v.yes for v in judged.value]
            results.score(i, scoring.proportion(flags, empty=1.0), claims=step.value,
                          verdicts=rag_judge.verdict_dicts(judged.value),
                          **rag_judge.dropped_details(step))
        return judge_output({"faithfulness": mean_measured(results.scores)}, results.scores,
                            results.details, results.unmeasured, judge)
