"""Reliability over repeated trials: pass^k and pass@k with an interval over tasks.

``successes`` maps each task to its trials' outcomes (``True``/``False``, or 1/0). For a task
with ``c`` successes in ``n`` trials:

- pass^k (tau2-bench's estimator): ``C(c, k) / C(n, k)``, the chance that ``k`` trials drawn
  without replacement from its ``n`` all succeed, an unbiased estimate of ``p**k``;
- pass@k (Chen et al. 2021, the unbiased estimator): ``1 - C(n - c, k) / C(n, k)``, the chance
  that at least one of them succeeds.

The value is the mean over tasks. The interval is over tasks: Wilson's score interval for the
mean of the per-task values with the number of tasks as its sample size. Each task's value lies
in [0, 1], so its variance is at most ``m (1 - m)``, the variance Wilson's interval assumes: the
interval is conservative where tasks sit between 0 and 1, and, unlike a bootstrap over tasks,
it does not collapse to a point when every task failed (or succeeded), where pass^k of a hard
benchmark lives. ``tests/shared/test_pass_k.py`` checks its coverage by simulation at 10, 30
and 100 tasks (docs/CONVERSATIONS.md gives the figures).

A task with fewer than ``k`` trials is left out of that ``k`` with a warning
(:class:`FewTrialsWarning`) naming how many and which; ``k`` larger than every task's trials is
a one-line error.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Mapping, Sequence
from numbers import Real
from typing import Any

from ..base.errors import UserInputError
from ..kit import stats

KINDS = ("pass^k", "pass@k")


class FewTrialsWarning(UserWarning):
    """Some tasks have fewer trials than ``k``: they were left out of that ``k``."""


def _outcome(task: Hashable, value: Any) -> bool:
    if hasattr(value, "item") and not isinstance(value, (bool, int, float)):
        value = value.item()  # a numpy scalar
    if isinstance(value, bool):
        return value
    if isinstance(value, Real) and value in (0, 1):
        return bool(value)
    raise UserInputError(f"successes[{task!r}]: a trial's outcome is True/False (or 1/0), got "
                         f"{value!r}")


def _checked(successes: Any, k: Any, alpha: Any) -> dict[Hashable, list[bool]]:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise UserInputError(f"k must be a whole number >= 1, got {k!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, Real) or not 0 < alpha < 1:
        raise UserInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    if not isinstance(successes, Mapping) or not successes:
        raise UserInputError("successes must be a non-empty mapping task -> list of trial "
                             f"outcomes, got {type(successes).__name__}")
    out = {}
    for task, trials in successes.items():
        if hasattr(trials, "tolist") and not isinstance(trials, (str, bytes)):
            trials = trials.tolist()  # a numpy array, a pandas Series
        if isinstance(trials, (str, bytes, Mapping)) or not isinstance(trials, Sequence):
            raise UserInputError(f"successes[{task!r}] must be a list of trial outcomes, got "
                                 f"{type(trials).__name__}")
        out[task] = [_outcome(task, value) for value in trials]
    return out


def task_value(kind: str, successes: int, trials: int, k: int) -> float:
    """One task's pass^k or pass@k from its ``successes`` in ``trials`` (``trials >= k``)."""
    if kind == "pass^k":
        return math.comb(successes, k) / math.comb(trials, k)
    return 1.0 - math.comb(trials - successes, k) / math.comb(trials, k)


def estimate(kind: str, successes: Any, k: Any, alpha: Any = 0.05) -> dict[str, Any]:
    """``{value, low, high, n_tasks, k}`` of ``kind`` ("pass^k" or "pass@k"); the module
    docstring says how."""
    tasks = _checked(successes, k, alpha)
    counts = {task: (sum(trials), len(trials)) for task, trials in tasks.items()}
    kept = {task: c for task, c in counts.items() if c[1] >= k}
    if not kept:
        most = max(n for _, n in counts.values())
        raise UserInputError(f"{kind.replace('k', str(k))}: k={k} is larger than every task's "
                             f"number of trials (at most {most}); run more trials or lower k")
    if len(kept) < len(counts):
        short = [task for task in counts if task not in kept]
        shown = ", ".join(map(repr, short[:5])) + (", ..." if len(short) > 5 else "")
        warnings.warn(f"{kind.replace('k', str(k))}: {len(short)} of {len(counts)} tasks have "
                      f"fewer than {k} trials and are left out ({shown})", FewTrialsWarning,
                      stacklevel=3)
    values = [task_value(kind, c, n, k) for c, n in kept.values()]
    value = math.fsum(values) / len(values)
    low, high = stats.wilson_interval(value, len(values), 1 - float(alpha))
    return {"value": value, "low": low, "high": high, "n_tasks": len(values), "k": k}


def pass_hat_k(successes: Mapping[Hashable, Sequence[bool]], k: int, *, alpha: float = 0.05
               ) -> dict[str, Any]:
    """pass^k: the mean over tasks of ``C(c, k) / C(n, k)`` (tau2-bench), with Wilson's
    interval over tasks at level ``1 - alpha``: ``{value, low, high, n_tasks, k}``. A task with
    fewer than ``k`` trials is left out with a :class:`FewTrialsWarning`."""
    return estimate("pass^k", successes, k, alpha)


def pass_at_k(successes: Mapping[Hashable, Sequence[bool]], k: int, *, alpha: float = 0.05
              ) -> dict[str, Any]:
    """pass@k: the mean over tasks of ``1 - C(n - c, k) / C(n, k)`` (Chen et al. 2021's
    unbiased estimator), with Wilson's interval over tasks at level ``1 - alpha``: ``{value,
    low, high, n_tasks, k}``. A task with fewer than ``k`` trials is left out with a
    :class:`FewTrialsWarning`."""
    return estimate("pass@k", successes, k, alpha)
