"""``score --task COLUMN --pass-k 1,2,4 [--success-at X]``: several trials per task in one scored
run, read as pass^k and pass@k (``pass_k``) per k, for the table, the JSON summary, the HTML
report and the gates ``pass^K>=X`` / ``pass@K>=X``.

A row is one trial of the task named in its ``--task`` cell; it succeeds when the metric's
per-row score (a metric with several: its first, rouge's rouge1) reaches ``--success-at``
(default: the top of the metric's score range, e.g. 1.0). An unmeasured row is no trial: it is
left out (a judge's fault is not the agent's), and the table says how many were.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..base.errors import UserInputError
from .pass_k import estimate

PASS_GATE = re.compile(r"\s*pass([\^@])([0-9]+)\s*(>=|<=)\s*(.*?)\s*")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
HEADER = ["estimate", "value", "interval", "tasks"]


def parse_ks(text: str) -> tuple[int, ...]:
    """``"1,2,4"`` -> ``(1, 2, 4)``: whole numbers >= 1, no repeats (one line otherwise)."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isdigit() and int(part) >= 1 for part in parts):
        raise UserInputError(f"--pass-k {text!r}: give whole numbers >= 1 separated by commas, "
                             "e.g. 1,2,4")
    ks = tuple(int(part) for part in parts)
    if len(set(ks)) != len(ks):
        raise UserInputError(f"--pass-k {text!r}: a k is repeated")
    return ks


def is_pass_gate(text: Any) -> bool:
    return isinstance(text, str) and PASS_GATE.fullmatch(text) is not None


@dataclass(frozen=True)
class PassGate:
    """A gate on pass^k or pass@k: ``kind`` ("pass^k"/"pass@k"), ``k``, op, threshold."""

    kind: str
    k: int
    op: str
    threshold: float
    text: str

    @classmethod
    def parsed(cls, text: str, ks: Sequence[int]) -> PassGate:
        match = PASS_GATE.fullmatch(text)
        assert match is not None
        mark, k, op, number = match.groups()
        if not _NUMBER.fullmatch(number) or not 0.0 <= float(number) <= 1.0:
            raise UserInputError(f"gate {text!r}: X must be a plain decimal number in [0, 1], "
                                 f"got {number!r}")
        if int(k) not in ks:
            raise UserInputError(f"gate {text!r}: k={k} is not among --pass-k "
                                 f"({','.join(map(str, ks)) or 'not given'})")
        return cls(f"pass{mark}k", int(k), op, float(number), f"pass{mark}{k}{op}{number}")


@dataclass(frozen=True)
class TrialOptions:
    """``--task``, ``--pass-k`` and ``--success-at`` of one run, checked together."""

    task: str
    ks: tuple[int, ...]
    metric: str
    success_at: float

    @classmethod
    def checked(cls, task: str | None, pass_k: str | None, success_at: float | None,
                metrics: Sequence[str]) -> TrialOptions | None:
        """The options, or ``None`` without ``--pass-k``; one line naming the flag that is
        wrong: ``--task`` and ``--pass-k`` go together, one metric, ``--success-at`` inside
        its score range."""
        if pass_k is None:
            for flag, value in (("--task", task), ("--success-at", success_at)):
                if value is not None:
                    raise UserInputError(f"{flag} applies to --pass-k K,K,...: give it too")
            return None
        if not task:
            raise UserInputError("--pass-k needs --task COLUMN: the column naming each row's "
                                 "task (each row is one trial)")
        ks = parse_ks(pass_k)
        if len(metrics) != 1 or metrics[0] == "all":
            raise UserInputError("--pass-k reads one metric's trials: give exactly one --metric")
        from ..kit.registry import METRICS

        metric = metrics[0]
        low, high = METRICS[metric].score_range
        at = high if success_at is None else success_at
        if not math.isfinite(at) or not low <= at <= high:
            raise UserInputError(f"--success-at {success_at}: outside {metric}'s score range "
                                 f"[{low:g}, {high:g}]")
        return cls(task, ks, metric, at)

    def check_run(self, dataset: Any, columns: Sequence[str]) -> None:
        """Before any scoring: the task column exists, names a task on every row, and some
        task has as many rows (trials) as the largest k."""
        if self.task not in columns:
            raise UserInputError(f"--task {self.task!r}: INPUT has no such column (its "
                                 f"columns: {', '.join(columns)})")
        tasks = list(dataset[self.task])
        if any(_blank(task) for task in tasks):
            row = next(i for i, task in enumerate(tasks) if _blank(task))
            raise UserInputError(f"--task {self.task!r}: row {row} names no task")
        most = max(Counter(map(str, tasks)).values())
        if most < max(self.ks):
            raise UserInputError(f"--pass-k: k={max(self.ks)} is larger than every task's "
                                 f"number of trials (at most {most}); run more trials or lower k")


def _blank(task: Any) -> bool:
    return task is None or (isinstance(task, float) and math.isnan(task)) or (
        isinstance(task, str) and not task.strip())


@dataclass(frozen=True)
class TrialReport:
    """pass^k and pass@k for each k of one run (``rows``: ``{"estimate", "k", "value", "low",
    "high", "n_tasks"}``), with the trials read."""

    rows: list[dict[str, Any]]
    metric: str
    task: str
    success_at: float
    trials: int
    tasks: int
    unmeasured: int
    alpha: float = 0.05

    def value(self, kind: str, k: int) -> dict[str, Any]:
        return next(r for r in self.rows if r["estimate"] == kind and r["k"] == k)

    def as_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "task_column": self.task, "success_at": self.success_at,
                "tasks": self.tasks, "trials": self.trials, "unmeasured": self.unmeasured,
                "interval": f"Wilson over tasks, {1 - self.alpha:.0%}", "estimates": self.rows}

    def note(self) -> str:
        return (f"{self.metric}: {self.trials} trials of {self.tasks} tasks (column "
                f"{self.task!r}); a trial succeeds at score >= {self.success_at:g}; "
                f"{self.unmeasured} unmeasured rows left out; {1 - self.alpha:.0%} Wilson "
                "interval over tasks")

    def cells(self) -> list[list[str]]:
        return [[f"{r['estimate'].replace('k', str(r['k']))}", f"{r['value']:.4f}",
                 f"[{r['low']:.4f}, {r['high']:.4f}]", str(r["n_tasks"])] for r in self.rows]

    def table(self) -> str:
        from ..runs.summary import format_table

        return format_table(HEADER, self.cells()) + "\n" + self.note()

    def html(self) -> dict[str, Any]:
        return {"header": HEADER, "rows": self.cells(), "note": self.note()}


def trial_report(scored: Any, options: TrialOptions, alpha: float = 0.05) -> TrialReport:
    """pass^k and pass@k of each k over a scored run's rows (the module docstring says how)."""
    from ..kit.registry import METRICS
    from ..runs.chunks import score_column_names
    from .comparison import load_run

    spec = METRICS[options.metric]
    column = score_column_names(options.metric, spec)[spec.headline[0]]
    frame = load_run(scored, "scored")
    successes: dict[Any, list[bool]] = {}
    unmeasured = 0
    for task, score in zip(frame[options.task].tolist(), frame[column].tolist(), strict=True):
        if score is None or (isinstance(score, float) and math.isnan(score)):
            unmeasured += 1
            continue
        if _blank(task):
            raise UserInputError(f"--task {options.task!r}: a row names no task")
        key = task if isinstance(task, Hashable) else json.dumps(task, default=str)
        successes.setdefault(key, []).append(float(score) >= options.success_at)
    if not successes:
        raise UserInputError(f"--pass-k: no row of {options.metric} was measured")
    rows = []
    for kind in ("pass^k", "pass@k"):
        for k in options.ks:
            rows.append({"estimate": kind, **estimate(kind, successes, k, alpha)})
    return TrialReport(rows, options.metric, options.task, options.success_at,
                       sum(map(len, successes.values())), len(successes), unmeasured, alpha)
