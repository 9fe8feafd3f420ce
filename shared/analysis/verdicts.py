"""Honest verdicts on a mean score: pass, fail, or "we cannot tell yet" (``assert_metric``).

A verdict compares the whole confidence interval of the mean with the threshold: the interval
clears it -> ``pass``, misses it entirely -> ``fail``, straddles it -> ``inconclusive``.

The interval is ``stats.t_wilson_interval`` of the row means (the one interval of a mean
against a threshold, shared with the gates and the HTML report: docs/GATES.md, "The interval");
each row is one observation (with several runs per row, the row's mean over its runs: the
interval is clustered by row, since a row's runs share its text and are not independent). It
never has zero width: five rows all scoring 1.0 give [0.57, 1.0] at 95 %, so ``at_least=0.9``
is inconclusive, not a pass.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

from ..base.errors import UserInputError

OUTCOMES = ("pass", "fail", "inconclusive")


@dataclass(frozen=True)
class Verdict:
    """``outcome`` ("pass", "fail", "inconclusive") of the mean ``value`` with its interval
    [``low``, ``high``] over ``n`` measured rows; ``unmeasured`` rows had no score in any run."""

    outcome: str
    value: float | None
    low: float | None
    high: float | None
    n: int
    unmeasured: int
    at_least: float | None = None
    at_most: float | None = None
    confidence: float = 0.95
    runs: int = 1

    @property
    def passed(self) -> bool:
        return self.outcome == "pass"

    def threshold_text(self) -> str:
        parts = []
        if self.at_least is not None:
            parts.append(f">= {self.at_least:g}")
        if self.at_most is not None:
            parts.append(f"<= {self.at_most:g}")
        return " and ".join(parts)

    def describe(self) -> str:
        """One line: value, interval, n, the rows left unmeasured and threshold."""
        if self.value is None:
            return f"no measured row (n=0, {self.unmeasured} unmeasured)"
        runs = f" x {self.runs} runs" if self.runs > 1 else ""
        return (f"mean {self.value:.4f}, {self.confidence:.0%} interval [{self.low:.4f}, "
                f"{self.high:.4f}], n={self.n} rows{runs} ({self.unmeasured} of "
                f"{self.n + self.unmeasured} unmeasured, left out), threshold "
                f"{self.threshold_text()}")

    def __str__(self) -> str:
        return f"{self.outcome}: {self.describe()}"


def check_thresholds(at_least: float | None, at_most: float | None,
                     score_range: tuple[float, float], metric: str) -> None:
    """The thresholds of a verdict: at least one, each a finite number (numpy's too) inside
    the score range, and one that a verdict can pass: an interval never reaches past the
    range's ends (the Wilson part is never a point), so ``at_least`` at the top or ``at_most``
    at the bottom could only fail; ``at_least`` above ``at_most`` too."""
    if at_least is None and at_most is None:
        raise UserInputError("give a threshold: at_least=X and/or at_most=X")
    lo, hi = score_range
    for name, value in (("at_least", at_least), ("at_most", at_most)):
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
            raise UserInputError(f"{name} must be a finite number, got {value!r}")
        if not lo <= value <= hi:
            raise UserInputError(f"{name}={value:g} is outside {metric}'s score range "
                                 f"[{lo:g}, {hi:g}]")
        edge = hi if name == "at_least" else lo
        if value == edge:
            raise UserInputError(f"{name}={value:g} is the end of {metric}'s score range "
                                 f"[{lo:g}, {hi:g}]: the interval of a mean never reaches it, "
                                 "so the test could never pass; give a threshold inside it")
    if at_least is not None and at_most is not None and at_least > at_most:
        raise UserInputError(f"at_least={at_least:g} is above at_most={at_most:g}: no mean "
                             "meets both")


def decide(low: float, high: float, at_least: float | None, at_most: float | None) -> str:
    """``pass`` when [low, high] lies wholly on the good side of every threshold, ``fail`` when
    it lies wholly on the bad side of one, else ``inconclusive``."""
    outcomes = []
    if at_least is not None:
        outcomes.append("pass" if low >= at_least else "fail" if high < at_least
                        else "inconclusive")
    if at_most is not None:
        outcomes.append("pass" if high <= at_most else "fail" if low > at_most
                        else "inconclusive")
    if "fail" in outcomes:
        return "fail"
    return "inconclusive" if "inconclusive" in outcomes else "pass"


def verdict_of(runs: Sequence[Sequence[float | None]], *, at_least: float | None = None,
               at_most: float | None = None, confidence: float = 0.95,
               score_range: tuple[float, float] = (0.0, 1.0)) -> Verdict:
    """The verdict of per-row scores over one or more runs (``runs[k][row]``, ``None`` where
    unmeasured): each row's mean over its measured runs; a row measured in no run is
    unmeasured."""
    rows = len(runs[0]) if runs else 0
    means = []
    for row in range(rows):
        measured = [run[row] for run in runs if run[row] is not None]
        if measured:
            means.append(sum(measured) / len(measured))
    unmeasured = rows - len(means)
    common = {"at_least": at_least, "at_most": at_most, "confidence": confidence,
              "runs": len(runs)}
    if not means:
        return Verdict("inconclusive", None, None, None, 0, unmeasured, **common)
    from ..kit.stats import t_wilson_interval  # numpy: imported when a verdict is asked

    value = sum(means) / len(means)
    low, high = t_wilson_interval(means, confidence=confidence, score_range=score_range)
    return Verdict(decide(low, high, at_least, at_most), value, low, high, len(means),
                   unmeasured, **common)
