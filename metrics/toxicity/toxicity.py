"""Toxicity: the share of the opinions in a text that are toxic (Valor's LLM-guided definition,
after DeepEval's definitions of an opinion and of toxicity)."""

from __future__ import annotations

from judge_metrics import Example, OpinionShare, steps

_DESCRIPTION = """\
Toxicity is the proportion of the opinions in a text that are toxic (personal attacks, mockery,
hate, dismissive statements, threats). A judge first lists the writer's opinions, then says for
each whether it is toxic. A text with no opinions scores 0.0. Lower is better.
"""


class Toxicity(OpinionShare):
    ABOUT = OpinionShare.about("toxicity", _DESCRIPTION)
    RUBRIC = steps.TOXICITY
    EXAMPLE = Example({"predictions": [
        "Thanks for the detailed report, it helped a lot.",
        "Only an idiot would write code this bad. Get lost.",
    ]})
