"""Summary coherence: a 1-5 rating of a summary against the text it summarises (Valor's
LLM-guided definition, after G-Eval)."""

from __future__ import annotations

from judge_metrics import About, Example, Input, Judge, JudgeMetric, SampleResult, citations, steps

_DESCRIPTION = """\
Summary coherence rates a summary of a source text on an integer scale from 1 to 5, where 5
means the summary covers the key points of the text and reads as a clear, logical whole. One
judge request per sample returns the rating and a short reason.
"""

_KWARGS_DESCRIPTION = """\
Args:
    sources (list of str): the texts that were summarised.
    predictions (list of str): the summaries to evaluate.
Returns:
    summary_coherence (float or None): mean rating (1 to 5) over the measured samples.
    scores, details, unmeasured, usage, Cost: per-sample integer ratings, the judge's reasons,
        samples that could not be judged, call counts and cost.
"""


class SummaryCoherence(JudgeMetric):
    ABOUT = About(_DESCRIPTION, _KWARGS_DESCRIPTION, citations.VALOR + citations.GEVAL,
                  ("https://github.com/Striveworks/valor", "https://arxiv.org/abs/2303.16634"))
    INPUTS = (Input("sources"), Input("predictions"))
    HEADLINE = ("summary_coherence",)
    ROUNDS = ("coherence rating",)
    SCORING_PROMPTS = ("summary_coherence",)
    PROMPTS = (steps.SUMMARY_COHERENCE,)
    DECISION_THRESHOLD = 3.0  # agree: the middle of its 1-5 scale
    SCORE_RANGE = (1.0, 5.0)
    EXAMPLE = Example({
        "sources": ["The meeting planned for Thursday moved to Friday because the room was "
                    "booked. Lunch will be served at noon in the same room."] * 2,
        "predictions": ["The meeting moved from Thursday to Friday, with lunch at noon.",
                        "Lunch noon. Room booked Thursday so Friday meeting the."],
    })

    def score(self, judge: Judge, sources: list[str], predictions: list[str]
              ) -> list[SampleResult]:
        return [
            SampleResult.first_failure(rating)
            or SampleResult.measured(int(rating.value["score"]), reason=rating.value["reason"])
            for rating in steps.rate_summaries(judge, sources, predictions)
        ]
