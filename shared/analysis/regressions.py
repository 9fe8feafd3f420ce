"""Did B regress against A? ``compare --fail-on-regression``'s decision, per compared score.

A score regressed when B is worse than A in the metric's own direction (lower is better for
the metrics whose ``LOWER_IS_BETTER`` is set: hallucination, toxicity, bias), its Holm-adjusted
p-value (across the report's scores) is below ``alpha``, and ``|delta|`` is at least
``min_delta``. An improvement, or a change the paired test cannot tell from noise, is not one.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ..base.errors import UserInputError
from .comparison import CompareReport, json_ready, score_columns
from .gates import checks_html

DEFAULT_ALPHA = 0.05
REGRESSION_HEADER = ["score", "delta B-A", "interval", "p", "p (Holm)", "result"]


@dataclass(frozen=True)
class RegressionCheck:
    """One compared score, and whether B regressed on it."""

    column: str
    higher_is_better: bool
    delta: float | None
    low: float | None
    high: float | None
    p_value: float | None
    p_holm: float | None
    alpha: float = DEFAULT_ALPHA
    min_delta: float = 0.0

    @property
    def name(self) -> str:
        return self.column

    @property
    def worse(self) -> bool:
        """B worse than A in the metric's direction."""
        if self.delta is None:
            return False
        return self.delta < 0 if self.higher_is_better else self.delta > 0

    @property
    def regressed(self) -> bool:
        return (self.worse and self.p_holm is not None and self.p_holm < self.alpha
                and abs(self.delta or 0.0) >= self.min_delta)

    @property
    def passed(self) -> bool:
        return not self.regressed

    @property
    def label(self) -> str:
        return self.column + ("" if self.higher_is_better else " (lower is better)")

    @property
    def message(self) -> str:
        """One line: the decision and its numbers."""
        if self.regressed:
            verdict = (f"B is worse than A (p (Holm) {_p(self.p_holm)} < alpha {self.alpha:g}, "
                       f"|delta| >= {self.min_delta:g})")
        elif self.worse and self.p_holm is not None and self.p_holm < self.alpha:
            verdict = f"worse, but |delta| < min delta {self.min_delta:g}"
        elif self.worse:
            verdict = f"worse, not significant at alpha {self.alpha:g}"
        else:
            verdict = "no regression"
        return (f"{self.label}: {verdict}; delta {_signed(self.delta)} "
                f"[{_signed(self.low)}, {_signed(self.high)}], p {_p(self.p_value)}, "
                f"p (Holm) {_p(self.p_holm)}")

    def as_dict(self) -> dict[str, Any]:
        """``compare --json``'s entry: the numbers, the rule and the decision."""
        return json_ready({**asdict(self), "worse": self.worse, "regressed": self.regressed})

    def cells(self) -> list[str]:
        """The row of :data:`REGRESSION_HEADER` without the result."""
        return [self.label, _signed(self.delta), f"[{_signed(self.low)}, {_signed(self.high)}]",
                _p(self.p_value), _p(self.p_holm)]


def check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 1.0 or math.isnan(alpha):
        raise UserInputError(f"--alpha must be in (0, 1), got {alpha}")


def check_min_delta(min_delta: float) -> None:
    if not 0.0 <= min_delta < math.inf:
        raise UserInputError(f"--min-delta must be a number >= 0, got {min_delta}")


def regression_checks(report: CompareReport, *, alpha: float = DEFAULT_ALPHA,
                      min_delta: float = 0.0) -> list[RegressionCheck]:
    """One :class:`RegressionCheck` per compared score of ``report``."""
    check_alpha(alpha)
    check_min_delta(min_delta)
    return [RegressionCheck(c.column, c.higher_is_better, c.delta, c.low, c.high, c.p_value,
                            c.p_holm, alpha, min_delta) for c in report.columns]


def regressions_text(checks: Sequence[RegressionCheck]) -> str:
    """What ``compare`` prints under its table: each regression, or that there is none."""
    found = [c for c in checks if c.regressed]
    if not checks:
        return "regressions: none (no score compared)"
    rule = (f"B worse than A in the metric's direction, p (Holm) < {checks[0].alpha:g}, "
            f"|delta| >= {checks[0].min_delta:g}")
    if not found:
        return f"regressions ({rule}): none"
    return "\n".join([f"regressions ({rule}): {len(found)}",
                      *(f"  REGRESSION {c.message}" for c in found)])


def regressions_html(checks: Sequence[RegressionCheck]) -> dict[str, Any]:
    """The reports' block of the checks (``gates.checks_html``)."""
    return checks_html("Regressions", REGRESSION_HEADER, checks, note=regressions_text(checks))


def shared_scores(columns_a: Iterable[str], columns_b: Iterable[str],
                  metrics: Sequence[str] | None = None) -> list[str]:
    """What ``compare`` would compare, known before any scoring: the score columns both runs
    hold, or, when the runs are scored first with ``metrics``, the metrics that both inputs
    have the columns for."""
    if metrics:
        from ..runs.batch import select_metrics

        both = set(select_metrics(metrics, columns_b)[0])
        return [m for m in select_metrics(metrics, columns_a)[0] if m in both]
    in_b = score_columns(list(columns_b))
    return [c for c in score_columns(list(columns_a)) if c in in_b]


def _signed(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.4f}"


def _p(value: float | None) -> str:
    return "n/a" if value is None else (f"{value:.2e}" if value < 1e-4 else f"{value:.4f}")
