"""L3Score: semantic similarity of a free-form answer to a reference answer, read from an LLM
judge's log-probabilities of "Yes" and "No" (SPIQA, arXiv:2407.09413)."""

from __future__ import annotations

from typing import Any

from judge_metrics import (About, Example, Input, Judge, JudgeMetric, Option, SampleResult,
                           exact_yes_probability, judge_fault, l3score_breakdown, prompts,
                           validation)

_CITATION = """\
@article{pramanick2024spiqa,
  title={SPIQA: A Dataset for Multimodal Question Answering on Scientific Papers},
  author={Pramanick, Shraman and Chellappa, Rama and Venugopalan, Subhashini},
  journal={arXiv preprint arXiv:2407.09413},
  year={2024}
}
"""

_DESCRIPTION = """\
L3Score evaluates how semantically close a generated answer is to a reference answer for a given
question. An LLM judge is asked, with the SPIQA prompt, whether the two answers have a similar
meaning, and the score is read from the log-probabilities of "Yes" and "No" on its first answer
token: exp(l_yes) / (exp(l_yes) + exp(l_no)) over the top-5 list, 0 when neither appears, and an
estimate for the missing side when only one appears. Scores are comparable only under the same
judge model.
"""

_KWARGS_DESCRIPTION = """\
Args:
    questions (list of str): the questions.
    predictions (list of str): the answers to evaluate.
    references (list of str): the ground-truth answers.
Returns:
    L3Score (float or None): mean score over the measured samples (None if none was measured).
    Cost (float or None): total cost of the judge calls in USD (None when the price is unknown).
    scores, details, unmeasured, usage: per-sample scores, the top-5 list and which entries
        matched, samples that could not be judged with the reason, and call/token counts.
    invalid_answers (dict): the unmeasured samples per kind of invalid judge answer.
Examples:
    >>> l3score = evaluate.load("metrics/l3score")
    >>> result = l3score.compute(questions=["What is the capital of France?"],
    ...                          predictions=["Paris"], references=["Paris"])
    >>> sorted(result)
    ['Cost', 'L3Score', 'details', 'invalid_answers', 'scores', 'unmeasured', 'usage']
"""

TOP_K = 5


class L3Score(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, _CITATION,
                  reference_urls=("https://arxiv.org/abs/2407.09413",),
                  homepage="https://huggingface.co/spaces/nhop/L3Score",
                  codebase_urls=("https://github.com/google/spiqa",))
    INPUTS = (Input("questions"), Input("predictions"), Input("references"))
    OPTIONS = (
        Option("exact", bool, False, nullable=True, type_doc="bool",
               check=lambda name, value: False if value is None else validation.flag(name, value),
               doc="local judge only: score P(Yes) / (P(Yes) + P(No)) from the full next-token "
               "distribution instead of the top-5 rule"),
    )
    HEADLINE = ("L3Score",)
    ROUNDS = ("yes/no",)
    SCORING_PROMPTS = ("l3score",)
    PROMPTS = (prompts.L3SCORE,)
    REQUIRES = (("top_logprobs", TOP_K),)
    EXAMPLE = Example({
        "questions": ["What is the capital of France?", "What is the capital of Germany?"],
        "predictions": ["Paris", "Moscow"],
        "references": ["Paris", "Berlin"],
    })

    def score(self, judge: Judge, questions: list[str], predictions: list[str],
              references: list[str], exact: bool = False) -> list[SampleResult]:
        if exact:
            judge.require("full_distribution", "exact=True (use exact=False for the top-5 rule)")
        requests = [prompts.L3SCORE.request(question=q, gt=r, answer=p)
                    for q, p, r in zip(questions, predictions, references, strict=True)]
        outcomes = judge.yes_no(requests, top_k=TOP_K, desc="l3score")
        return [SampleResult.first_failure(outcome) or _score(outcome.value, exact)
                for outcome in outcomes]


def _score(answer: Any, exact: bool) -> SampleResult:
    """The L3Score of one Yes/No answer; unmeasured when the answer cannot be read."""
    try:
        breakdown = l3score_breakdown(answer.top).as_dict()
    except (TypeError, ValueError) as malformed:  # a top-k list no backend should return
        return judge_fault(str(malformed))
    top5_score = breakdown.pop("score")
    if not exact:
        return SampleResult.measured(top5_score, mode="top5", **breakdown)
    if answer.p_yes is None or answer.p_no is None:
        return judge_fault("the judge returned no exact Yes/No probabilities")
    return SampleResult.measured(
        exact_yes_probability(answer.p_yes, answer.p_no), mode="exact", p_yes=answer.p_yes,
        p_no=answer.p_no, top5_score=top5_score, **breakdown)
