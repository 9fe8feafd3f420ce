"""Score trace rows with metrics (``score --traces``, ``--phoenix``): each metric scores the rows
it can measure, and leaves the others unmeasured with the reason, never a 0:

- a span whose content was not captured: unmeasured by every metric;
- a row without a column the metric needs (``contexts`` captured on some spans only, a
  ``reference`` joined to some spans only): unmeasured by that metric, scored by the others;
- an output that only calls tools, for a metric that reads ``prediction`` (it has no text),
  and an empty text where the metric needs one;
- messages that are no valid conversation (a tool result whose call was cut from the span's
  history), for a metric that reads ``messages``.

So an optional column present in only some rows never makes the run refuse the rows without
it. Rows that the same metrics can measure are scored together through the batch scorer
(:func:`~judge_metrics.runs.batch.score_dataset`), so everything else (options, judges, cache,
summary) is as for any input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..base.errors import UserInputError
from ..kit.registry import METRICS
from ..runs.batch import score_dataset, select_metrics
from ..runs.chunks import load_metric, score_column_names
from ..runs.summary import BatchSummary, MetricSummary

NOT_CAPTURED = ("the span's content was not captured (its instrumentation records no message "
                "content; turn content capture on: docs/TRACES.md)")


def trace_dataset(rows: Sequence[Mapping[str, Any]]) -> Any:
    """The rows as a ``datasets.Dataset``: every column any row has (``None`` where a row has
    none), ``messages`` as JSON text."""
    import datasets

    if not rows:
        raise UserInputError("the traces have no LLM span to score")
    columns = list(dict.fromkeys(key for row in rows for key in row))
    data: dict[str, list[Any]] = {column: [] for column in columns}
    for row in rows:
        for column in columns:
            value = row.get(column)
            if column == "messages" and value is not None and not isinstance(value, str):
                value = json.dumps(value, ensure_ascii=False)
            data[column].append(value)
    return datasets.Dataset.from_dict(data)


def unmeasurable(name: str, metric: Any, rows: Sequence[Mapping[str, Any]]) -> dict[int, str]:
    """Row index -> why metric ``name`` cannot measure that row."""
    inputs = {spec.column_name: spec for spec in getattr(metric, "INPUTS", ()) if spec.required}
    reasons: dict[int, str] = {}
    for index, row in enumerate(rows):
        if row.get("content_captured") is False:
            reasons[index] = NOT_CAPTURED
            continue
        for column in METRICS[name].columns.values():
            value = row.get(column)
            spec = inputs.get(column)
            if value is None:
                reasons[index] = f"the span has no {column}"
            elif spec is not None and spec.kind == "messages" and (
                    why := _invalid(spec, value)):
                reasons[index] = f"the span's {column} are no conversation a metric can read: {why}"
            elif column == "prediction" and value == "":
                reasons[index] = "the span's output only calls tools: it has no text to score"
            elif (spec is not None and spec.kind == "text" and not spec.allow_empty
                  and isinstance(value, str) and not value.strip()):
                reasons[index] = f"the span's {column} is empty"
            else:
                continue
            break
    return reasons


def _invalid(spec: Any, value: Any) -> str | None:
    """Why ``value`` is not a valid ``spec`` input (a span's history cut before the call a
    tool result answers...), or ``None``."""
    try:
        spec.validate([value])
    except (TypeError, ValueError) as error:
        return str(error)
    return None


def score_traces(
    rows: Sequence[Mapping[str, Any]], metrics: str | Sequence[str], *,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    chunk_size: int | None = None, show_progress: bool = True, **options: Any,
) -> tuple[Any, BatchSummary]:
    """Score ``rows`` (:func:`judge_metrics.traces.read`'s) with ``metrics``; return the
    dataset with the score columns (``<metric>`` ``None`` and ``<metric>_details``
    ``{"unmeasured": reason}`` on a row the metric cannot measure) and the run's summary (each
    metric over every row, the rows it could not measure counted as unmeasured). Options as
    for :func:`~judge_metrics.runs.batch.score_dataset`."""
    dataset = trace_dataset(rows)
    metric_options = dict(metric_options or {})
    names, skipped = select_metrics(metrics, dataset.column_names, metric_options)
    for name in metric_options:
        if name not in names:
            raise UserInputError(f"metric_options names {name!r}, which is not being run")
    reasons = {name: unmeasurable(name, load_metric(name), rows) for name in names}
    groups: dict[tuple[int, ...], list[str]] = {}
    for name in names:
        measurable = tuple(i for i in range(len(rows)) if i not in reasons[name])
        groups.setdefault(measurable, []).append(name)
    added: dict[str, list[Any]] = {}
    summaries: dict[str, MetricSummary] = {}
    dry_run = bool(options.get("dry_run"))
    for measurable, group in groups.items():
        if measurable:
            scored, summary = score_dataset(
                dataset.select(list(measurable)), group, chunk_size=chunk_size,
                show_progress=show_progress,
                metric_options={n: metric_options[n] for n in group if n in metric_options},
                **options)
            skipped.update(summary.skipped)
            for column in scored.column_names if not dry_run else ():
                if column in dataset.column_names:
                    continue
                values = added.setdefault(column, [None] * len(rows))
                for index, value in zip(measurable, scored[column], strict=True):
                    values[index] = value
            for item in summary.metrics:
                summaries[item.metric] = item
        for name in group:
            summary_of = summaries.setdefault(name, MetricSummary(
                metric=name, aggregates={key: None for key in METRICS[name].headline},
                rows=0, unmeasured=0, judge=METRICS[name].judge))
            summary_of.rows = len(rows)
            summary_of.unmeasured += len(reasons[name])
            if dry_run:
                continue
            for column in score_column_names(name, METRICS[name]).values():
                added.setdefault(column, [None] * len(rows))
            details = added.setdefault(f"{name}_details", [None] * len(rows))
            for index, reason in reasons[name].items():
                details[index] = json.dumps({"unmeasured": reason})
    if added:
        from ..runs.engines import with_columns

        dataset = with_columns(dataset, added)
    ordered = [summaries[n] for n in names if n in summaries and n not in skipped]
    return dataset, BatchSummary(ordered, skipped, dry_run)
