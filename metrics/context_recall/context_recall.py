"""Context recall: the share of the reference answer's statements that the retrieved contexts
support (Valor's LLM-guided definition, after RAGAS)."""

from __future__ import annotations

from judge_metrics import (About, Input, Judge, JudgeMetric, SampleResult, citations, rag_example,
                           scoring, steps)

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
"""


class ContextRecall(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR)
    INPUTS = (Input("contexts", kind="list"), Input("references", kind="texts"))
    HEADLINE = ("context_recall",)
    ROUNDS = ("statements", "attribution verdicts")
    SCORING_PROMPTS = ("context_recall",)
    PROMPTS = (steps.STATEMENTS, steps.CONTEXT_RECALL)
    EXAMPLE = rag_example("contexts", "references")

    def score(self, judge: Judge, contexts: list[list[str]], references: list[list[str]]
              ) -> list[SampleResult]:
        pairs = [(i, reference)
                 for i, (c, refs) in enumerate(zip(contexts, references, strict=True))
                 if c for reference in refs]
        shown = [{"contexts": steps.as_json_list(contexts[i])} for i, _ in pairs]
        judged = steps.statement_verdicts(judge, steps.CONTEXT_RECALL,
                                          [reference for _, reference in pairs], shown)
        per_sample: dict[int, list[steps.ItemVerdicts]] = {}
        for (i, _), chain in zip(pairs, judged, strict=True):
            per_sample.setdefault(i, []).append(chain)
        return [
            SampleResult.measured(0.0, references=[], note="no contexts") if not sample_contexts
            else steps.first_failure_of(per_sample[i]) or _recall(per_sample[i])
            for i, sample_contexts in enumerate(contexts)
        ]


def _recall(chains: list[steps.ItemVerdicts]) -> SampleResult:
    """The best reference's share of statements the contexts support."""
    per_reference = [{"statements": chain.items.value, "score": chain.yes_share(),
                      "verdicts": steps.verdict_dicts(chain.verdicts.value)}
                     for chain in chains]
    return SampleResult.measured(scoring.best([r["score"] for r in per_reference]),
                                 references=per_reference,
                                 **steps.dropped_details(*(chain.items for chain in chains)))
