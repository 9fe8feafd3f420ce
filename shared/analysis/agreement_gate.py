"""A gate on a panel's ``judge_agreement`` (``score --gate 'l3score.judge_agreement>=0.6'``):
Krippendorff's alpha among the judges is a value of the whole run, not a mean of rows, so the
gate reads it (and its bootstrap interval, for ``--gate-on lower/upper``) from the metric's
output or the run's summary, never from a score column."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..base.errors import UserInputError
from ..runs.summary import BatchSummary

AGREEMENT = "judge_agreement"
#: Krippendorff's alpha is at most 1; below -1 it says nothing a gate could use.
AGREEMENT_RANGE = (-1.0, 1.0)


def agreement_of(source: Any, metric: str, gate_text: str) -> tuple[float | None, Any]:
    """``(judge_agreement, judge_agreement_ci)`` of ``metric`` in ``source`` (a metric's
    ``compute()`` output, or ``score_dataset``'s ``(scored, summary)`` pair)."""
    if isinstance(source, Mapping) and AGREEMENT in source:
        return source.get(AGREEMENT), source.get("judge_agreement_ci")
    if isinstance(source, tuple) and len(source) == 2 and isinstance(source[1], BatchSummary):
        for found in source[1].metrics:
            if found.metric == metric:
                panel = found.panel or {}
                return found.aggregates.get(AGREEMENT), panel.get("judge_agreement_ci")
    raise UserInputError(f"gate {gate_text!r}: judge_agreement is a value of a panel's whole "
                         "run: gate it on the metric's compute() output or in `score --gate` "
                         "with two or more judges")


def run_agreement(source: Any, gate: Any) -> tuple[float | None, float | None, float | None]:
    """The alpha a ``judge_agreement`` gate reads and its interval's ends (``None`` where
    undefined)."""
    alpha, interval = agreement_of(source, gate.metric, gate.text)
    low, high = interval if interval else (None, None)
    return alpha, low, high
