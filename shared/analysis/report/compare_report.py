"""The HTML report of a comparison (``compare --html``, the demo's Compare tab)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from .page import (
    DEFAULT_MAX_ROWS,
    cell_value,
    describe_judge,
    details_value,
    is_details_column,
    is_judge_metric,
    markup_svgs,
    prompts_of,
    render,
    sample_rows,
    short,
)

TOP_DIFFERENCES = 10


def write_compare_html(
    report: Any,
    path: str | os.PathLike[str],
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    seed: int = 0,
    gates: Mapping[str, Any] | None = None,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> str:
    """Write the HTML report of a :class:`~shared.analysis.comparison.CompareReport`; return
    the HTML. ``gates``: the regressions' block (:func:`shared.analysis.regressions.
    regressions_html`), shown above the comparison table. ``metric_options``: ``{metric:
    {option: value}}`` of the runs scored here, for the prompts written from them."""
    from ..comparison import SYSTEM_COLUMNS
    from . import plots

    pairs = report.pairs
    if pairs is None:
        raise ValueError("this CompareReport has no paired rows (it came from JSON?)")
    columns_cmp = report.columns
    labels = [c.column for c in columns_cmp]
    forest = plots.forest(labels, [c.delta for c in columns_cmp], [c.low for c in columns_cmp],
                          [c.high for c in columns_cmp])
    wtl = plots.wins_ties_losses(labels, [c.wins for c in columns_cmp],
                                 [c.ties for c in columns_cmp], [c.losses for c in columns_cmp])
    svgs = [plots.histogram(pairs.scores[c][0], c, other=pairs.scores[c][1]) for c in labels]
    frame_a, frame_b = pairs.a, pairs.b
    task = [c for c in frame_a.columns if c not in SYSTEM_COLUMNS and c in set(frame_b.columns)
            and c not in set(pairs.scores) and not is_details_column(c)]
    systems = [c for c in SYSTEM_COLUMNS if c in frame_a.columns or c in frame_b.columns]
    task_label = next((c for c in ("question", "source", "reference") if c in task), None)
    top = [_top_differences(pairs, c.column, task_label) for c in columns_cmp]
    keep = [row["id"] for entry in top for row in entry["rows"]]
    shown, note = sample_rows(len(pairs.keys), max_rows, seed, keep)
    metrics = list(dict.fromkeys(c.metric for c in columns_cmp))
    columns = ([{"key": "key", "label": "key", "num": False}]
               + ([{"key": task_label, "label": task_label, "num": False}] if task_label else [])
               + [{"key": f"Δ {c}", "label": f"Δ {c} (B−A)", "num": True} for c in labels])
    rows = [_pair_row(pairs, p, labels, task, task_label, systems, metrics) for p in shown]
    runs = [(label.upper(), report.runs[label]) for label in ("a", "b") if label in report.runs]
    embedded = next((describe_judge(run["judge"], metrics) for _, run in runs
                     if run["judge"].get("embedded_default")
                     and any(is_judge_metric(m["metric"]) for m in run["metrics"])), None)
    return render(
        "compare.html.j2", path, {"columns": columns, "rows": rows},
        title="judge-metrics comparison: is B better than A?", r=report, runs=runs,
        prompts=prompts_of(metrics, metric_options) if report.runs else [], embedded=embedded,
        forest=markup_svgs([forest])[0], wtl=markup_svgs([wtl])[0], plots=markup_svgs(svgs),
        top=top, table={"note": note, "has_unmeasured": any(r["u"] for r in rows)},
        gates=gates)


def _cell(frame: Any, rows: list[int], pair: int, column: str | None) -> Any:
    """The cell of ``column`` in the row of ``frame`` behind pair ``pair`` (``None`` when the
    run has no such column)."""
    if column is None or column not in frame.columns:
        return None
    return cell_value(frame[column].iloc[rows[pair]])


def _top_differences(pairs: Any, column: str, task_label: str | None) -> dict[str, Any]:
    """The pairs whose scores differ most in ``column`` (at most ``TOP_DIFFERENCES``)."""
    a, b = pairs.scores[column]
    diff = b - a
    order = np.argsort(-np.abs(np.nan_to_num(diff, nan=0.0)), kind="stable")
    chosen = [int(p) for p in order[:TOP_DIFFERENCES] if np.isfinite(diff[p]) and diff[p]]
    return {"column": column, "rows": [{
        "id": p, "key": short(pairs.keys[p], 100), "a": float(a[p]), "b": float(b[p]),
        "delta": float(diff[p]),
        "task": short(_cell(pairs.a, pairs.index_a, p, task_label), 100) if task_label else "",
        "pred_a": short(_cell(pairs.a, pairs.index_a, p, "prediction") or "", 100),
        "pred_b": short(_cell(pairs.b, pairs.index_b, p, "prediction") or "", 100),
    } for p in chosen]}


def _pair_row(pairs: Any, p: int, labels: list[str], task: list[str], task_label: str | None,
              systems: list[str], metrics: list[str]) -> dict[str, Any]:
    """One pair in the table (its deltas) and its drill-down (task, scores, both outputs)."""
    from ..comparison import unmeasured_reason

    scores = {c: (cell_value(pairs.scores[c][0][p]), cell_value(pairs.scores[c][1][p]))
              for c in labels}
    cells: dict[str, Any] = {"key": short(pairs.keys[p])}
    if task_label:
        cells[task_label] = short(_cell(pairs.a, pairs.index_a, p, task_label))
    for c, (a, b) in scores.items():
        cells[f"Δ {c}"] = None if a is None or b is None else b - a
    sections = [
        {"title": "Task", "fields": [[c, _cell(pairs.a, pairs.index_a, p, c)] for c in task]},
        {"title": "Scores (A, B)", "fields": [[c, f"A {_num(a)}  B {_num(b)}"]
                                              for c, (a, b) in scores.items()]},
    ]
    for side, frame, index in (("A", pairs.a, pairs.index_a), ("B", pairs.b, pairs.index_b)):
        sections.append({"title": f"{side}: output", "fields": [
            [c, _cell(frame, index, p, c)] for c in systems if c in frame.columns]})
        for metric in metrics:
            column = f"{metric}_details"
            if column not in frame.columns:
                continue
            detail = details_value(frame[column].iloc[index[p]])
            reason = unmeasured_reason(detail)
            fields = [["unmeasured", reason]] if reason else []
            if isinstance(detail, Mapping):
                fields += [[k, v] for k, v in detail.items() if k != "unmeasured"]
            elif detail is not None:
                fields.append(["details", detail])
            if fields:
                sections.append({"title": f"{side}: {metric} details", "fields": fields})
    return {"id": p, "c": cells, "u": any(a is None or b is None for a, b in scores.values()),
            "d": sections, "title": f"pair {short(pairs.keys[p], 100)}"}


def _num(value: float | None) -> str:
    return "n/a (unmeasured)" if value is None else f"{value:.4f}"
