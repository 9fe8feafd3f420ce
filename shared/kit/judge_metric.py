"""The base of every judge metric: its judge options in, its per-sample results out.

A judge metric's script declares its inputs (``INPUTS``), its headline key (``HEADLINE``), its
own options (``OPTIONS``) and one method, ``score(judge, <inputs>, <options>)``: its steps and
its formula, one :class:`~shared.kit.results.SampleResult` per sample. :class:`ValidatedMetric`
checks the inputs and options first; :class:`JudgeMetric` then takes the judge options out of
``compute``'s keyword arguments, makes the judge, and builds the documented output (headline
mean, ``scores``, ``details``, ``unmeasured``, ``invalid_answers``, ``usage``, ``Cost``,
``dry_run``).

Only judge faults become unmeasured samples: a step reports them as a failed
:class:`~shared.base.types.Outcome` and ``SampleResult.first_failure`` turns the first one into the
sample's result. Nothing here catches exceptions, so a programming error still raises.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from ..base.defaults import require_local
from ..base.validation import same_length
from ..engine.backends.registry import KEY_ONLY_DEFAULT, LOCAL, PROVIDERS
from ..engine.config import JudgeConfig, judge_config, judge_configs, judge_options_of
from ..engine.runner import get_judge
from .few_shot import examples_option, show_examples
from .metric_base import ValidatedMetric
from .results import MetricOutput, SampleResult, build_output, mean_measured

if TYPE_CHECKING:
    from ..engine.runner import Judge

__all__ = ["JudgeMetric", "first_failure", "judge_fault", "mean_measured", "require_runnable",
           "split_judge_options"]


def split_judge_options(options: dict[str, Any]) -> tuple[JudgeConfig, dict[str, Any]]:
    """Take the judge options (``JUDGE_OPTION_NAMES``) out of a metric's ``compute`` keyword
    arguments: returns the :class:`JudgeConfig` the one converter makes of them
    (:func:`shared.engine.config.judge_config`) and the remaining options. ``options`` itself is
    not modified. Raises ``ValueError``/``TypeError`` naming a bad option."""
    judged = judge_options_of(options)
    return judge_config(judged), {k: v for k, v in options.items() if k not in judged}


def require_runnable(config: JudgeConfig) -> None:
    """Refuse, before any work, a judge this install cannot run: a local judge (the embedded one
    or a local model file) without the ``local`` extra, in one line that names the extra and the
    hosted alternatives. A dry run sends nothing and needs nothing."""
    if config.dry_run:
        return
    if any(judge.provider == LOCAL for judge in judge_configs(config)):
        hosted = PROVIDERS[KEY_ONLY_DEFAULT]
        require_local("the local judge", (
            f"or point at a hosted judge: provider={KEY_ONLY_DEFAULT!r} ({hosted.key_env[0]}) or "
            "another provider of docs/BACKENDS.md (CLI: --provider, --model, --base-url)"))


# the names metric scripts import (``SampleResult``'s constructors of a failed sample)
judge_fault = SampleResult.judge_fault
first_failure = SampleResult.first_failure


class JudgeMetric(ValidatedMetric):
    """A metric scored by an LLM judge: a subclass declares ``ABOUT`` and implements
    :meth:`score`."""

    USES_JUDGE: ClassVar[bool] = True
    #: What the judge's provider must offer, as ``(capability, minimum)`` pairs of its registry
    #: entry's capabilities (``("top_logprobs", 5)``); a provider without one is refused before
    #: any request, and the card's provider table says which providers can run the metric.
    REQUIRES: ClassVar[tuple[tuple[str, bool | int], ...]] = ()
    #: What it uses when the provider has it and does without otherwise (its card says how):
    #: the docs' provider table shows both.
    PREFERS: ClassVar[tuple[tuple[str, bool | int], ...]] = ()
    #: What the metric asks the judge in one run with its default options, one entry per round
    #: of requests that waits for the round before it (``("opinions", "verdicts")``): with
    #: ``batch=True`` each round is one provider batch. The card and docs/COST.md show it
    #: (:mod:`shared.tools.cards`); a test counts the rounds ``score`` really sends.
    ROUNDS: ClassVar[tuple[str, ...]] = ()
    #: The prompts (names, ``shared.kit.steps.prompts``) whose answers the per-row score is
    #: read from: the metric's ``examples`` option (added to ``OPTIONS`` for every subclass
    #: that names them) is shown before these, and only these (:mod:`shared.kit.few_shot`).
    SCORING_PROMPTS: ClassVar[tuple[str, ...]] = ()
    #: Every prompt the metric sends: templates of ``shared.kit.steps.prompts`` or the judge
    #: steps that send them (``steps.FAITHFULNESS``). This is the one declaration that the
    #: reports, ``assert_metric``'s JUnit property, the alignment profile and the judge card
    #: read (:mod:`shared.kit.sent_prompts`). A metric whose prompts are written from its
    #: options (g_eval, pairwise) overrides :meth:`sent_prompts` instead.
    PROMPTS: ClassVar[tuple[Any, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.SCORING_PROMPTS:  # declared once here, for every judge metric
            cls.OPTIONS = (*(o for o in cls.OPTIONS if o.name != "examples"),
                           examples_option(cls))

    @classmethod
    def sent_prompts(cls, **options: Any) -> tuple[Any, ...]:
        """The prompt templates (``PromptTemplate``) the metric sends with these checked
        options (those of ``OPTIONS`` given, a required one absent when not given): its
        ``PROMPTS`` (typed loosely: importing ``steps`` here would close an import circle)."""
        return tuple(getattr(p, "template", p) for p in cls.PROMPTS)

    @classmethod
    def describe_inputs(cls, description: str) -> str:
        """As :meth:`ValidatedMetric.describe_inputs`; a ``description`` without ``Examples:``
        gets one made from the first sample of ``EXAMPLE``: load, compute, the headline score
        within ``SCORE_RANGE``."""
        text = super().describe_inputs(description)
        if "Examples:" in description or cls.EXAMPLE is None:
            return text
        name = Path(inspect.getfile(cls)).stem
        arguments = [f"{k}={[values[0]]!r}" for k, values in cls.EXAMPLE.inputs.items()]
        arguments += [f"{k}={value!r}" for k, value in cls.EXAMPLE.options.items()]
        low, high = cls.SCORE_RANGE
        return "\n".join([
            text.rstrip("\n"), "Examples:",
            f'    >>> metric = evaluate.load("metrics/{name}")',
            "    >>> result = metric.compute(",
            *(f"    ...     {argument}," for argument in arguments), "    ... )",
            f'    >>> {low!r} <= result["{cls.HEADLINE[0]}"] <= {high!r}', "    True", ""])

    def score(self, judge: Judge, **inputs_and_options: Any) -> Sequence[SampleResult]:
        """The metric's steps and formula: one result per sample. Its parameters after
        ``judge`` are the declared inputs, then the metric's own options (with defaults)."""
        raise NotImplementedError

    def score_samples(self, judge: Judge, inputs: Mapping[str, Any],
                      options: Mapping[str, Any]) -> list[SampleResult]:
        """:meth:`score` with the ``examples`` option taken out of ``options`` and shown to
        the judge before the ``SCORING_PROMPTS`` (:func:`shared.kit.few_shot.show_examples`:
        the judge itself when there are none)."""
        options = dict(options)
        shown = show_examples(judge, options.pop("examples", None), self.SCORING_PROMPTS)
        return list(self.score(shown, **inputs, **options))

    def _compute(self, **arguments: Any) -> MetricOutput:
        inputs = {spec.name: arguments.pop(spec.name, None) for spec in self.INPUTS}
        given = {name: value for name, value in inputs.items() if value is not None}
        if len(given) > 1:  # an optional input given to compute() after add_batch
            same_length(**given)
        config, options = split_judge_options(arguments)  # the rest: declared, checked options
        require_runnable(config)
        if config.judges:  # a panel: this score() once per judge, then their aggregate
            from .panel import score_panel

            return score_panel(self, config, inputs, options)
        judge = get_judge(config)
        for capability, minimum in self.REQUIRES:
            judge.require(capability, self.metric_name, minimum)
        results = self.score_samples(judge, inputs, options)
        return build_output(self.aggregates(results, **options), results, judge)

    def aggregates(self, results: list[SampleResult], **options: Any) -> dict[str, Any]:
        """The output's values over every sample, before ``scores``, ``details``...: the mean
        score under ``HEADLINE[0]``; a metric with more (pairwise's counts) adds them."""
        return {self.HEADLINE[0]: mean_measured(r.score for r in results)}

    def panel_details(self, score: float, judged: Sequence[SampleResult],
                      aggregate: Callable[[Sequence[float]], float],
                      **options: Any) -> dict[str, Any]:
        """With a panel of judges (the ``judges`` option, :mod:`shared.kit.panel`): the details
        of one sample whose panel score is ``score``, from the results of the judges that
        measured it (``judged``), that the metric's :meth:`aggregates` read. ``aggregate``
        combines per-judge numbers as the panel combines scores (mean or median). The panel
        adds ``judge_scores``, ``judge_details`` and ``judge_errors`` itself; a metric whose
        aggregates read only ``score`` needs nothing here."""
        return {}


# evaluate.load instantiates the first non-abstract EvaluationModule subclass in a metric script's
# namespace; this base class would be found before the metric's own class.
JudgeMetric.__abstractmethods__ = frozenset({"score"})
