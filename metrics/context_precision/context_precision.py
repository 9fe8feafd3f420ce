"""Context precision: are the useful retrieved contexts ranked first? (Valor's LLM-guided
definition, the same computation as RAGAS and DeepEval.)"""

from __future__ import annotations

from typing import Any

from judge_metrics import (About, Input, Judge, JudgeMetric, Outcome, SampleResult, citations,
                           rag_example, scoring, steps, validation)

_DESCRIPTION = """\
Context precision scores the order of the retrieved contexts. A judge says, for each context in
order, whether it is useful for arriving at the reference answer to the question (with several
references, a context is useful if it is useful for any of them). The score is
sum_k(precision@k * v_k) / sum_k(v_k), where v_k is 1 when the k-th context is useful and
precision@k is the share of useful contexts among the first k. All contexts not useful: 0.0; no
contexts and no references: 1.0; exactly one of the two empty: 0.0.
"""

_KWARGS_DESCRIPTION = """\
Args:
    questions (list of str): the questions.
    contexts (list of list of str): per sample, the retrieved contexts in rank order (may be
        empty).
    references (list of str or list of list of str): per sample, the reference answer or
        answers (an empty list means no reference).
Returns:
    context_precision (float or None): mean over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample scores, the verdicts per reference and
        the merged usefulness of each context, samples that could not be judged, call counts and
        cost.
"""


class _References(Input):
    """A reference or references per sample; an empty list (no reference) is allowed."""

    def validate(self, values: Any) -> list[Any]:
        return validation.text_or_texts(self.name, values, allow_no_items=True)


class ContextPrecision(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (
        Input("questions"),
        Input("contexts", kind="list"),
        _References("references", kind="texts"),
    )
    HEADLINE = ("context_precision",)
    ROUNDS = ("usefulness verdicts",)
    SCORING_PROMPTS = ("context_precision",)
    PROMPTS = (steps.CONTEXT_PRECISION,)
    EXAMPLE = rag_example("questions", "contexts", "references")

    def score(self, judge: Judge, questions: list[str], contexts: list[list[str]],
              references: list[list[str]]) -> list[SampleResult]:
        jobs: list[steps.VerdictJob] = []
        owners: list[int] = []
        for i, (question, sample_contexts, refs) in enumerate(
                zip(questions, contexts, references, strict=True)):
            if not sample_contexts or not refs:
                continue
            for reference in refs:
                jobs.append(steps.VerdictJob(list(sample_contexts),
                                             {"question": question, "reference": reference}))
                owners.append(i)
        verdicts = steps.CONTEXT_PRECISION.ask(judge, jobs)
        per_sample: dict[int, list[Outcome]] = {}
        for i, judged in zip(owners, verdicts, strict=True):
            per_sample.setdefault(i, []).append(judged)
        return [
            SampleResult.first_failure(*per_sample.get(i, []))
            or _precision(per_sample.get(i, []), len(sample_contexts), len(refs))
            for i, (sample_contexts, refs) in enumerate(zip(contexts, references, strict=True))
        ]


def _precision(judged: list[Outcome], n_contexts: int, n_references: int) -> SampleResult:
    """The best reference's average precision of the contexts, from each reference's
    verdicts (one per context)."""
    per_reference = [[v.yes for v in step.value] for step in judged]
    useful = scoring.any_verdicts(per_reference, n_contexts) if per_reference else []
    return SampleResult.measured(
        scoring.context_precision(per_reference, n_contexts, n_references), useful=useful,
        verdicts=[steps.verdict_dicts(step.value) for step in judged])
