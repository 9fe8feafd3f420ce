"""A check's failure rate with its interval, and its honest outcome.

The interval is Clopper-Pearson's (the "exact" binomial interval, from ``scipy.stats``): it
never has zero width and it holds its coverage at any n, which matters because a card decides
on rates near 0 from a few dozen rows. Its price is width: with no failure at all, the 95 %
interval's upper end is about 3.7 / n, so a tolerance of 0.05 needs about 74 rows to pass.

Outcome: ``pass`` when the whole interval is at or under the tolerance, ``fail`` when it is
wholly above, else ``inconclusive``, with about how many rows at the same rate would settle it.
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_TOLERANCE = 0.05
CONFIDENCE = 0.95
_MAX_ROWS = 10_000_000


def rate_interval(failures: int, n: int, confidence: float = CONFIDENCE
                  ) -> tuple[float, float, float]:
    """(share, low, high): ``failures`` of ``n`` rows with the Clopper-Pearson interval."""
    from scipy.stats import binomtest

    if n < 1:
        raise ValueError("no row to rate")
    found = binomtest(failures, n).proportion_ci(confidence_level=confidence, method="exact")
    return failures / n, float(found.low), float(found.high)


def outcome_of(low: float, high: float, tolerance: float) -> str:
    if high <= tolerance:
        return "pass"
    if low > tolerance:
        return "fail"
    return "inconclusive"


def rows_to_settle(value: float, n: int, tolerance: float,
                   confidence: float = CONFIDENCE) -> int | None:
    """About how many rows, at the same failure rate, would make the outcome pass or fail;
    ``None`` when the rate is the tolerance itself (no number of rows settles it)."""
    if n < 1:
        return None
    if math.isclose(value, tolerance, abs_tol=1e-12):
        return None

    def settled(rows: int) -> bool:
        low, high = rate_interval(round(value * rows), rows, confidence)[1:]
        return outcome_of(low, high, tolerance) != "inconclusive"

    high_end = n
    while not settled(high_end):
        if high_end >= _MAX_ROWS:
            return None
        high_end *= 2
    low_end = max(1, high_end // 2)
    while low_end < high_end:  # the settled region need not start cleanly: a close estimate
        middle = (low_end + high_end) // 2
        if settled(middle):
            high_end = middle
        else:
            low_end = middle + 1
    return high_end


def rate_entry(name: str, kind: str, failures: int, n: int, tolerance: float,
               delta: float) -> dict[str, Any]:
    """One check's entry of the report (its ``examples`` are added by the caller)."""
    entry: dict[str, Any] = {"name": name, "kind": kind, "n": n, "failures": failures,
                             "tolerance": tolerance, "delta": delta}
    if n == 0:
        entry.update(rate={"value": None, "low": None, "high": None}, outcome="inconclusive",
                     note="no row to measure (none edited, or every one unmeasured)")
        return entry
    value, low, high = rate_interval(failures, n)
    entry.update(rate={"value": value, "low": low, "high": high},
                 outcome=outcome_of(low, high, tolerance))
    if entry["outcome"] == "inconclusive":
        rows = rows_to_settle(value, n, tolerance)
        entry["note"] = ("the rate sits at the tolerance: more rows will not settle it"
                         if rows is None else f"about {rows} rows at this rate would settle "
                         f"it; {n} now")
    return entry
