"""A run's options, checked once: the one checker of a run's judge, embedding and metric options
(:func:`check_run_options`), for ``score_dataset``, the CLI's commands and the integrations'
rows (:class:`.rows.MetricRows`).

The judge comes in as the :class:`~shared.engine.config.JudgeConfig` a front end already built
(``judge=``), or as judge options among ``options``, converted by the one converter
(:func:`shared.engine.config.judge_config`); an option nobody takes is refused in the words
every front end uses (:func:`shared.base.options.refuse_unknown`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..base.errors import UserInputError
from ..base.options import EMBEDDING_OPTION_NAMES, refuse_unknown
from ..engine.config import JUDGE_OPTION_NAMES, JudgeConfig, judge_config
from ..kit.registry import MetricSpec


@dataclass(frozen=True)
class RunOptions:
    """A run's options, checked: its judge, its embedding options and (for a run of one
    metric) that metric's own options."""

    judge: JudgeConfig
    embedding: dict[str, Any] = field(default_factory=dict)
    metric: dict[str, Any] = field(default_factory=dict)

    def call_options(self, spec: MetricSpec,
                     metric_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The keyword arguments of ``spec``'s ``compute`` calls besides its inputs: the
        judge's options for a judge metric (progress shown by the run, not by each call), the
        embedding's for one that embeds, and its own options on top (``metric_options``, else
        those checked here: a metric's own judge option, ``--option l3score.model=...``, is
        the more specific)."""
        call: dict[str, Any] = {}
        if spec.judge:
            call.update(self.judge.options())
        if spec.embeds:
            call.update(self.embedding)
        call.update(self.metric if metric_options is None else metric_options)
        if spec.judge:
            call["show_progress"] = False
        return call


def check_run_options(options: Mapping[str, Any], *, judge: JudgeConfig | None = None,
                      metric: MetricSpec | None = None) -> RunOptions:
    """``options`` checked before any work. A run of several metrics (``metric=None``) takes
    the judge and embedding options; a run of one metric takes its own options too, and the
    judge's or the embedding's only when it uses them. ``judge``: the config a front end built
    (then ``options`` hold no judge option). Every fault is a one-line
    :class:`~shared.base.errors.UserInputError`: an unknown option (the nearest name said), a
    missing required one, a bad judge."""
    own = {option.name for option in metric.options} if metric is not None else set()
    judge_names = set(JUDGE_OPTION_NAMES) if metric is None or metric.judge else set()
    embed_names = set(EMBEDDING_OPTION_NAMES) if metric is None or metric.embeds else set()
    refuse_unknown(metric.name if metric is not None else "the run", options,
                   own | judge_names | embed_names)
    if metric is not None:
        _check_required(metric, options)
    given = {k: v for k, v in options.items()
             if k in judge_names and k not in own and k != "show_progress"}
    if judge is not None and given:
        raise UserInputError(f"the judge is given twice: judge=JudgeConfig(...) and "
                             f"{', '.join(sorted(given))}; give one")
    if judge is None:
        try:
            judge = judge_config(given)
        except (TypeError, ValueError) as error:
            if isinstance(error, UserInputError):
                raise
            raise UserInputError(str(error)) from None
    return RunOptions(judge,
                      {k: v for k, v in options.items() if k in embed_names and k not in own},
                      {k: v for k, v in options.items() if k in own})


def _check_required(metric: MetricSpec, options: Mapping[str, Any]) -> None:
    """A required option (g_eval's ``criteria``) not given: the option's own refusal, the line
    ``compute`` would say (``criteria is required``)."""
    for option in metric.options:
        if option.required and option.name not in options:
            try:
                option.validate(option.default)
            except (TypeError, ValueError) as error:
                raise UserInputError(str(error)) from None
            raise UserInputError(f"{metric.name} needs the option {option.name}")
