"""The HTML report of one scored run (``score --html``)."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from . import panel_view
from .page import (
    DEFAULT_MAX_ROWS,
    cell_value,
    describe_judge,
    details_value,
    is_details_column,
    markup_svgs,
    prompts_of,
    render,
    sample_rows,
    short,
)

if TYPE_CHECKING:
    from ...engine.config import JudgeConfig

# columns shown in the row table (the rest are in the drill-down)
TABLE_INPUTS = ("id", "question", "prediction", "reference", "source")


def write_score_html(
    scored: Any,
    summary: Any = None,
    path: str | os.PathLike[str] = "report.html",
    *,
    judge: JudgeConfig | Mapping[str, Any] | None = None,
    source: str | None = None,
    max_rows: int = DEFAULT_MAX_ROWS,
    seed: int = 0,
    confidence: float = 0.95,
    gates: Mapping[str, Any] | None = None,
    pass_k: Mapping[str, Any] | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """Write the HTML report of one scored run; return the HTML.

    ``scored``: the rows ``score`` writes (a ``datasets.Dataset``, DataFrame, list of dicts or a
    path to the output file). ``summary``: the :class:`~shared.runs.batch.BatchSummary` of the run
    (aggregates, calls, cost, time), when known. ``judge``: the run's judge (its
    ``JudgeConfig``, or its options: provider, model), to name the judge and say when it is the
    embedded default. ``gates``:
    the gates' block (:func:`shared.analysis.gates.gates_html`), shown above the aggregates.
    ``pass_k``: the run's pass^k and pass@k (``TrialReport.html()``, ``score --pass-k``), shown
    below them. ``metric_options``: ``{metric: {option: value}}`` of the run, for the prompts
    written from them (g_eval's, with ``explain`` its reason's). ``seed``: the sample of rows
    a big run's table shows. Each aggregate's interval is ``stats.t_wilson_interval``
    (``confidence``): the gates' and ``assert_metric``'s.
    """
    from ...kit.registry import METRICS
    from ..comparison import load_run, numeric_scores, score_columns
    from . import plots

    if isinstance(scored, (str, os.PathLike)) and source is None:
        source = str(scored)
    frame = load_run(scored, "scored")
    found = score_columns(frame.columns)
    summaries = {m.metric: m for m in (summary.metrics if summary is not None else [])}
    metrics = list(dict.fromkeys([*summaries, *found.values()]))
    judged = any(METRICS[m].judge for m in metrics if m in METRICS)
    judge_info = describe_judge(judge if judge is not None else {}, metrics) if (
        judge is not None or judged) else None
    values = {c: numeric_scores(frame, c, "scored", m) for c, m in found.items()}
    aggregates = [_aggregate(column, metric, values[column], summaries.get(metric), confidence)
                  for column, metric in found.items()]
    svgs = [plots.histogram(values[column], column) for column in found]
    first_column: dict[str, str] = {}
    for column, metric in found.items():
        first_column.setdefault(metric, column)
    unmeasured_rows, reasons = _unmeasured(frame, first_column, values)
    rows_shown, note = sample_rows(len(frame), max_rows, seed)
    judged_by = panel_view.judge_columns(list(frame.columns), metrics)
    panel_values, disagreeing, panels = {}, set(), []
    for metric, judge_columns in judged_by.items():
        own = {c: numeric_scores(frame, c, "scored", metric) for c in judge_columns}
        gaps = panel_view.spread(list(own.values()))
        highlighted = panel_view.most_disagreeing(gaps)
        disagreeing |= highlighted
        panel_values.update(own)
        panel_values[panel_view.spread_column(metric)] = gaps
        panels.append(panel_view.panel_cards(metric, judge_columns, own,
                                             summaries.get(metric), len(highlighted)))
    inputs = [c for c in frame.columns if c not in found and c not in panel_values
              and not is_details_column(c)]
    table_inputs = [c for c in TABLE_INPUTS if c in inputs]
    columns = ([{"key": "#", "label": "#", "num": True}]
               + [{"key": c, "label": c, "num": False} for c in table_inputs]
               + [{"key": c, "label": c, "num": True} for c in [*found, *panel_values]])
    records = frame.to_dict("records") if len(rows_shown) == len(frame) else [
        frame.iloc[i].to_dict() for i in rows_shown]
    rows = [_row(i, record, inputs, table_inputs, {**values, **panel_values}, first_column,
                 i in unmeasured_rows) | {"h": i in disagreeing}
            for i, record in zip(rows_shown, records, strict=True)]
    cost: float | None = 0.0
    for m in summaries.values():
        cost = None if cost is None or m.cost is None else cost + (m.cost if m.judge else 0.0)
    return render(
        "score.html.j2", path, {"columns": columns, "rows": rows},
        title="judge-metrics run report", source=source, n=len(frame), metrics=metrics,
        skipped=dict(summary.skipped) if summary is not None else {},
        judge=judge_info, prompts=prompts_of(metrics, metric_options),
        seconds=f"{sum(m.seconds for m in summaries.values()):.1f} s" if summaries else "—",
        cost="—" if not summaries else (
            "unknown (no price for this model)" if cost is None else f"${cost:.4f}"),
        unmeasured_total=sum(reasons.values()), aggregates=aggregates,
        reasons=[{"metric": m, "reason": r, "count": c} for (m, r), c in reasons.most_common()],
        plots=markup_svgs(svgs), confidence=confidence,
        has_judge_metric=judged, table={"note": note, "has_unmeasured": bool(unmeasured_rows),
                                        "has_disagreement": bool(disagreeing)},
        gates=gates, panels=panels, pass_k=pass_k)


def _aggregate(column: str, metric: str, values: np.ndarray, summary: Any,
               confidence: float) -> dict[str, Any]:
    """One score column's card: the mean of its measured rows with its interval (the gates'),
    and what the run's summary says about its metric."""
    from ...kit import stats
    from ...kit.registry import METRICS
    from ..pairing import column_score_range

    measured = values[np.isfinite(values)]
    low = high = mean = None
    if measured.size:
        mean = float(measured.mean())
        low, high = stats.t_wilson_interval(measured, confidence=confidence,
                                            score_range=column_score_range(column, metric))
    return {
        "metric": metric, "column": column, "mean": mean, "low": low, "high": high,
        "aggregate": summary.aggregates.get(_headline_key(metric, column))
        if summary is not None else None,
        "measured": int(measured.size), "unmeasured": int(values.size - measured.size),
        "judge": METRICS[metric].judge, "calls": summary.calls if summary is not None else 0,
        "seconds": summary.seconds if summary is not None else None}


def _unmeasured(frame: Any, first_column: Mapping[str, str], values: Mapping[str, np.ndarray]
                ) -> tuple[set[int], Counter[tuple[str, str]]]:
    """The rows some metric left unmeasured, and how many per (metric, reason)."""
    from ..comparison import unmeasured_reason

    rows: set[int] = set()
    reasons: Counter[tuple[str, str]] = Counter()
    for metric, column in first_column.items():
        details = frame[f"{metric}_details"].tolist() if f"{metric}_details" in frame else None
        for row in np.flatnonzero(~np.isfinite(values[column])).tolist():
            rows.add(row)
            reason = unmeasured_reason(details[row]) if details is not None else ""
            reasons[(metric, reason or "no score")] += 1
    return rows, reasons


def _row(i: int, record: Mapping[str, Any], inputs: list[str], table_inputs: list[str],
         values: Mapping[str, np.ndarray], first_column: Mapping[str, str],
         unmeasured: bool) -> dict[str, Any]:
    """One row of the table (short cells) and its drill-down (every field in full)."""
    from ...kit.registry import METRICS
    from ..comparison import unmeasured_reason

    cells: dict[str, Any] = {"#": i}
    cells.update({c: short(cell_value(record[c])) for c in table_inputs})
    cells.update({c: cell_value(values[c][i]) for c in values})
    sections = [{"title": "Inputs", "fields": [[c, cell_value(record[c])] for c in inputs]},
                {"title": "Scores", "fields": [[c, cell_value(values[c][i])] for c in values]}]
    for metric, column in first_column.items():
        detail = details_value(record.get(f"{metric}_details"))
        fields = []
        if not np.isfinite(values[column][i]):
            fields.append(["unmeasured", unmeasured_reason(detail) or "no score"])
        if isinstance(detail, Mapping):
            fields += [[k, v] for k, v in detail.items() if k != "unmeasured"]
        elif detail is not None:
            fields.append(["details", detail])
        if fields:
            sections.append({"title": f"{metric}: judge statements, verdicts, reasons"
                             if METRICS[metric].judge else f"{metric}: details",
                             "fields": fields})
    return {"id": i, "c": cells, "u": unmeasured, "d": sections,
            "title": f"row {i}" + (f" (id {short(cell_value(record['id']), 100)})"
                                   if "id" in record else "")}


def _headline_key(metric: str, column: str) -> str:
    from ...kit.registry import METRICS

    spec = METRICS[metric]
    if len(spec.headline) == 1:
        return spec.headline[0]
    return column if column in spec.headline else column.removeprefix(f"{metric}_")
