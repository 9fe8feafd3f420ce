"""The base of the opinion metrics, bias and toxicity (Valor's LLM-guided definitions, after
DeepEval's definitions of an opinion): a judge lists the writer's opinions, then gives each a
verdict under the metric's own rubric; the score is the share of opinions judged "yes" (0.0 for
a text with no opinions), and lower is better."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from . import citations
from .about import About
from .judge_metric import JudgeMetric
from .metric_base import Input
from .steps.chains import opinion_verdicts
from .steps.extraction import OPINIONS

if TYPE_CHECKING:
    from ..engine.runner import Judge
    from .results import SampleResult
    from .steps.verdicts import VerdictStep

_ARGUMENTS = """\
Args:
    predictions (list of str): the texts to evaluate.
Returns:
    {name} (float or None): mean over the measured samples (lower is better).
    scores, details, unmeasured, usage, Cost: per-sample scores, the opinions and verdicts with
        the judge's reasons, samples that could not be judged, call counts and cost.
"""


class OpinionShare(JudgeMetric):
    """A subclass declares its ``ABOUT`` (:meth:`about`: its own description), ``RUBRIC`` (its
    verdict step, e.g. ``steps.BIAS``) and ``EXAMPLE``; the rubric's prompt names the rest: the
    headline score and the prompt the score is read from (``bias``, ``toxicity``), sent after
    the opinions' extraction (its ``PROMPTS``)."""

    INPUTS = (Input("predictions"),)
    LOWER_IS_BETTER = True
    ROUNDS = ("opinions", "verdicts")
    RUBRIC: ClassVar[VerdictStep]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        name = cls.RUBRIC.template.name
        cls.HEADLINE, cls.SCORING_PROMPTS = (name,), (name,)
        cls.PROMPTS = (OPINIONS, cls.RUBRIC)
        super().__init_subclass__(**kwargs)

    @staticmethod
    def about(name: str, description: str) -> About:
        """The ``ABOUT`` of the opinion metric ``name``: its ``description`` and the arguments
        every opinion metric takes."""
        return About(description, _ARGUMENTS.format(name=name), citations.VALOR)

    def score(self, judge: Judge, predictions: list[str]) -> list[SampleResult]:
        judged = opinion_verdicts(judge, self.RUBRIC, predictions)
        return [chain.failure() or chain.scored(chain.yes_share()) for chain in judged]


# evaluate.load instantiates the first non-abstract EvaluationModule subclass in a metric script's
# namespace; this base class, imported there, would be found before the metric's own class.
OpinionShare.__abstractmethods__ = frozenset({"RUBRIC"})
