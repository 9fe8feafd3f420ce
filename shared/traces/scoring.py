"""Score trace rows with metrics (``score --traces``, ``--phoenix``): each metric scores the rows
it can measure, and leaves the others unmeasured with the reason, never a 0:

- a span whose content was not captured: unmeasured by every metric;
- a row without a column the metric needs (``contexts`` captured on some spans only, a
  ``reference`` joined to some spans only): unmeasured by that metric, scored by the others;
- an output that only calls tools, for a metric that reads ``prediction`` (it has no text),
  and an empty text where the metric needs one;
- messages that are no valid conversation (a tool result whose call was cut from the span's
  history), for a metric that reads ``messages``.

So a column present in only some rows never makes the run refuse the rows without it; a
metric's optional input (g_eval's ``contexts``, accuracy's ``question``) is read on the rows
that have it, and the rows without it are scored without it. The rows that the same metrics
can measure (with the same optional columns) are scored together through the batch scorer
(:func:`~judge_metrics.runs.batch.score_dataset`), so everything else (options, judges, cache,
summary) is as for any input."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig
from ..kit.registry import METRICS
from ..runs.batch import score_dataset, select_metrics
from ..runs.chunks import load_metric, score_column_names
from ..runs.options import check_run_options
from ..runs.summary import BatchSummary, MetricSummary, add_cost, is_number

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
    chunk_size: int | None = None, show_progress: bool = True,
    judge: JudgeConfig | None = None, **options: Any,
) -> tuple[Any, BatchSummary]:
    """Score ``rows`` (:func:`judge_metrics.traces.read`'s) with ``metrics``; return the
    dataset with the score columns (``<metric>`` ``None`` and ``<metric>_details``
    ``{"unmeasured": reason}`` on a row the metric cannot measure) and the run's summary (each
    metric over every row, the rows it could not measure counted as unmeasured). Options as
    for :func:`~judge_metrics.runs.batch.score_dataset` (``judge``: a config already built, or
    judge options among ``options``), checked once here."""
    checked = check_run_options(options, judge=judge)
    dataset = trace_dataset(rows)
    metric_options = dict(metric_options or {})
    names, skipped = select_metrics(metrics, dataset.column_names, metric_options)
    for name in metric_options:
        if name not in names:
            raise UserInputError(f"metric_options names {name!r}, which is not being run")
    reasons = {name: unmeasurable(name, load_metric(name), rows) for name in names}
    groups = _groups(names, rows, reasons, set(dataset.column_names))
    added: dict[str, list[Any]] = {}
    parts: dict[str, list[MetricSummary]] = {}
    dry_run = checked.judge.dry_run
    for (indices, absent), group in groups.items():
        subset = dataset.select(list(indices)).remove_columns(list(absent))
        scored, summary = score_dataset(
            subset, group, chunk_size=chunk_size, show_progress=show_progress,
            metric_options={n: metric_options[n] for n in group if n in metric_options},
            judge=checked.judge, **checked.embedding)
        skipped.update(summary.skipped)
        for column in scored.column_names if not dry_run else ():
            if column in dataset.column_names:
                continue
            values = added.setdefault(column, [None] * len(rows))
            for index, value in zip(indices, scored[column], strict=True):
                values[index] = value
        for item in summary.metrics:
            parts.setdefault(item.metric, []).append(item)
    summaries = []
    for name in (n for n in names if n not in skipped):
        summary_of = merged(name, parts.get(name, []))
        summary_of.rows = len(rows)
        summary_of.unmeasured += len(reasons[name])
        summaries.append(summary_of)
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
    return dataset, BatchSummary(summaries, skipped, dry_run)


def _groups(names: Sequence[str], rows: Sequence[Mapping[str, Any]],
            reasons: Mapping[str, Mapping[int, str]], columns: set[str]
            ) -> dict[tuple[tuple[int, ...], tuple[str, ...]], list[str]]:
    """``(row indices, optional columns left out) -> metrics`` scored together: each metric's
    measurable rows, split by which of its optional columns they lack (a metric reads an
    optional column only where the dataset has it, so the rows without it are scored without
    the column)."""
    groups: dict[tuple[tuple[int, ...], tuple[str, ...]], list[str]] = {}
    for name in names:
        optional = sorted(c for c in METRICS[name].optional_columns.values() if c in columns)
        split: dict[tuple[str, ...], list[int]] = {}
        for index in range(len(rows)):
            if index not in reasons[name]:
                absent = tuple(c for c in optional if rows[index].get(c) is None)
                split.setdefault(absent, []).append(index)
        for absent, indices in split.items():
            groups.setdefault((tuple(indices), absent), []).append(name)
    return groups


def merged(name: str, parts: Sequence[MetricSummary]) -> MetricSummary:
    """One metric's summaries over disjoint groups of rows as one: counts, usage and costs
    added, each aggregate the mean of the parts' weighted by their measured rows (as the batch
    scorer joins its chunks)."""
    spec = METRICS[name]
    total = MetricSummary(metric=name, aggregates={key: None for key in spec.headline},
                          rows=0, unmeasured=0, judge=spec.judge)
    weights: dict[str, list[float]] = {}
    for part in parts:
        total.rows += part.rows
        total.unmeasured += part.unmeasured
        for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens",
                    "cached_prompt_tokens", "seconds"):
            setattr(total, key, getattr(total, key) + getattr(part, key))
        total.cost = add_cost(total.cost, part.cost)
        total.cache_saving = add_cost(total.cache_saving, part.cache_saving)
        for kind, count in part.invalid_answers.items():
            total.invalid_answers[kind] = total.invalid_answers.get(kind, 0) + count
        total.columns = list(dict.fromkeys([*total.columns, *part.columns]))
        total.panel = total.panel or part.panel
        if part.dry_run is not None:
            plan = total.dry_run or {}
            for key, value in part.dry_run.items():
                plan[key] = (add_cost(plan.get(key, 0.0), value) if "cost" in key
                             else plan.get(key, 0) + value)
            total.dry_run = plan
        measured = part.rows - part.unmeasured
        for key, value in part.aggregates.items():
            if is_number(value) and measured > 0:
                weight = weights.setdefault(key, [0.0, 0.0])
                weight[0] += float(value) * measured
                weight[1] += measured
    for key, (weighted, count) in weights.items():
        total.aggregates[key] = weighted / count
    return total
