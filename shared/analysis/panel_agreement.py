"""``agree`` with a panel of judges: the panel and each of its judges against the same human
labels, side by side, with the judges' agreement among themselves.

Each judge's per-row scores are the ``<metric>_judge_<k>`` columns of the scored rows
(:mod:`shared.runs.panel_columns`); each is compared with the labels exactly as the panel's
score column is (same threshold, groups, seed and resamples), so the columns of the table differ
only in whose scores they hold."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from ..runs.panel_columns import judge_column
from ..runs.summary import format_table

__all__ = ["add_judges", "panel_name", "side_by_side"]


def panel_name(config: Any) -> str:
    """A panel's judges as one name: ``provider/model + provider/model``."""
    from ..engine.config import judge_configs
    from ..kit.panel import judge_label

    return " + ".join(judge_label(judge) for judge in judge_configs(config))


def add_judges(report: Any, scored: Any, metric: str, summary: Any,
               compare_column: Callable[[Sequence[Any]], Any]) -> None:
    """Fill ``report.judges`` (one entry per judge: its name, rows compared, unmeasured rows
    and statistics) and ``report.judge_agreement`` when ``summary`` (the metric's
    :class:`~shared.runs.summary.MetricSummary`) is a panel's; ``compare_column(scores)`` is the
    report's own comparison applied to other scores."""
    panel = getattr(summary, "panel", None)
    if not panel:
        return
    judges = []
    for index, judge in enumerate(panel["judges"]):
        alone = compare_column(scored[judge_column(metric, index)])
        judges.append({"judge": judge["judge"], "n": alone.n, "unmeasured": alone.unmeasured,
                       "statistics": [asdict(s) for s in alone.statistics]})
    report.judges = judges
    report.judge_agreement = {key: panel.get(key) for key in (
        "judge_agreement", "judge_agreement_ci", "judge_agreement_level")}


def side_by_side(report: Any) -> str:
    """The panel's statistics and each judge's, one column each (value and interval)."""
    judges: list[Mapping[str, Any]] = report.judges or []
    header = ["statistic", "panel", *(f"judge {i + 1}" for i in range(len(judges)))]
    per_judge = [{s["name"]: s for s in judge["statistics"]} for judge in judges]
    rows = [["rows compared", str(report.n), *(str(j["n"]) for j in judges)]]
    for statistic in report.statistics:
        rows.append([statistic.name, _cell(statistic.value, statistic.low, statistic.high),
                     *(_cell(*(j.get(statistic.name, {}).get(k) for k in ("value", "low",
                                                                          "high")))
                       for j in per_judge)])
    lines = ["the panel and each judge against the labels:",
             *(f"  judge {i + 1}: {j['judge']}" for i, j in enumerate(judges)),
             format_table(header, rows)]
    agreement = report.judge_agreement or {}
    alpha = agreement.get("judge_agreement")
    interval = agreement.get("judge_agreement_ci")
    lines.append(
        "agreement among the judges (Krippendorff's alpha, "
        f"{agreement.get('judge_agreement_level') or '-'}): "
        + ("undefined" if alpha is None else f"{alpha:.4f}")
        + (f" [{interval[0]:.4f}, {interval[1]:.4f}]" if interval else ""))
    return "\n".join(lines)


def _cell(value: float | None, low: float | None, high: float | None) -> str:
    if value is None:
        return "n/a"
    if low is None or high is None:
        return f"{value:.4f}"
    return f"{value:.4f} [{low:.4f}, {high:.4f}]"
