"""What ``score`` says about its run: the summary it prints after scoring
(:func:`print_run_summary`) and, when the judge is the embedded default, a warning before the run
and each judge metric's measured agreement with people under its summary, so the numbers of a
tiny local model are never read bare."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig

__all__ = ["note_embedded_judge", "print_embedded_judge_notes", "print_run_summary"]


def note_embedded_judge(judge: JudgeConfig, metrics: Iterable[str], dry_run: bool) -> None:
    """Say so on stderr when the command's judge (or one of its panel's) is the embedded
    default and one of ``metrics`` asks a judge."""
    from ..engine.config import judge_configs
    from ..kit.registry import METRICS

    embedded = any(c.is_embedded for c in judge_configs(judge))
    if embedded and not dry_run and any(METRICS[n].judge for n in metrics):
        print("judge: the embedded SmolLM2-135M-Instruct on this CPU (tiny and slow: a demo, "
              "not a real evaluation; point --provider/--model/--base-url at a strong judge)",
              file=sys.stderr)


def print_embedded_judge_notes(summary: Any, judge: JudgeConfig) -> None:
    """Under `score`'s summary: with the embedded judge (``judge``: the command's, no panel),
    that it is a pipeline demo (said once) and a table of each judge metric's measured
    agreement with people (``shared/analysis/agreement_figures.json``), so its numbers are not
    read bare."""
    from ..analysis.embedded_judge import AGREEMENT_HEADER, EMBEDDED_JUDGE_CAVEAT, agreement_rows
    from ..runs.summary import format_table

    if summary.dry_run or not judge.is_embedded:
        return
    rows = agreement_rows([m.metric for m in summary.metrics if m.judge])
    if rows:
        print(f"embedded judge: {EMBEDDED_JUDGE_CAVEAT}; its agreement with people, measured "
              "by `make agreement` (bench/AGREEMENT.md):")
        print(format_table(list(AGREEMENT_HEADER), [list(r.values()) for r in rows]))


def print_run_summary(summary: Any, judge: Any, source: str) -> bool:
    """What ``score`` prints after scoring ``source`` (the input, the spans): the skipped metrics,
    the table, the embedded judge's notes and a dry run's plan. True for a dry run (nothing to
    write); a run where no metric had its columns is a one-line error."""
    from ..runs.summary import total_plan

    for name, reason in summary.skipped.items():
        print(f"skipped {name}: {reason}", file=sys.stderr)
    if not summary.metrics:
        raise UserInputError(f"no metric to run: {source} has none of the columns they need")
    print(summary.table())
    print_embedded_judge_notes(summary, judge)
    if not summary.dry_run:
        return False
    plan = total_plan(summary.metrics)
    cost = "unknown (no price for this model)" if plan["cost"] is None else f"${plan['cost']:.4f}"
    print(f"dry run: {plan['requests']:,} requests, estimated cost {cost}; nothing was sent")
    return True

