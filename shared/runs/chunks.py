"""One metric on one chunk of rows: load the metric, map its arguments to columns, validate
every cell, call ``compute`` and turn its output into per-row columns and summary counts. The
single-process engine and the Ray workers (:mod:`.engines`) both call :func:`score_rows`, so
their per-row results are the same."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..base.errors import UserInputError
from ..base.validation import InputError
from ..kit.registry import METRICS, MetricSpec, metric_path
from ..kit.results import results_of
from .arrow_cells import dataset_slice, struct_columns
from .panel_columns import add_judges, judge_columns
from .summary import MetricSummary, add_cost, is_number

DEFAULT_CHUNK_SIZE = 1000


# Rows per judge call. The local judge decodes a call's requests together (its `batch_size`,
# also 32): a decode step reads every weight whatever the rows, so fewer, fuller calls are faster
# (bench/README.md, "local judge"). Each call keeps its own progress bar over requests.
DEFAULT_JUDGE_CHUNK_SIZE = 32


def chunk_size_for(name: str, chunk_size: int | None) -> int:
    if chunk_size is not None:
        return chunk_size
    return DEFAULT_JUDGE_CHUNK_SIZE if METRICS[name].judge else DEFAULT_CHUNK_SIZE


def load_metric(name: str) -> Any:
    import evaluate

    return evaluate.load(metric_path(name), keep_in_memory=True)


def metric_arguments(spec: MetricSpec, dataset: Any) -> dict[str, str]:
    """compute argument -> column, optional columns included when the dataset has them."""
    arguments = dict(spec.columns)
    for argument, column in spec.optional_columns.items():
        if column in dataset.column_names:
            arguments[argument] = column
    return arguments


def validate_all(name: str, metric: Any, dataset: Any, chunk_size: int) -> None:
    """Check every cell the metric will read, naming the column and the dataset row."""
    arguments = metric_arguments(METRICS[name], dataset)
    inputs = [i for i in getattr(metric, "INPUTS", ()) if i.name in arguments]
    if not inputs:
        return
    data = dataset.select_columns(sorted({arguments[i.name] for i in inputs}))
    structs = struct_columns(data)
    for start in range(0, len(dataset), chunk_size):
        chunk = dataset_slice(data, start, start + chunk_size, structs)
        kwargs, owners = _expand(name, metric, {a: chunk[c] for a, c in arguments.items()},
                                 arguments, start)
        for spec in inputs:
            try:
                spec.validate(kwargs[spec.name])
            except (TypeError, ValueError) as error:
                raise UserInputError(f"metric {name!r}: " + _rows_named(
                    error, arguments[spec.name], start, owners)) from None


def _single_text_inputs(metric: Any) -> list[str]:
    return [i.name for i in getattr(metric, "INPUTS", ()) if i.kind == "text"]


# the one single-text input whose list cell is scored once per item, the best kept: several
# references (l3score takes one reference; docs/BATCH.md "Several references")
EXPANDED_INPUTS = ("references",)


def refuse_list_cells(name: str, metric: Any, kwargs: Mapping[str, list[Any]],
                      arguments: Mapping[str, str], start: int) -> None:
    """A list in a column where the metric takes one text (prediction, baseline_prediction,
    question, source) is refused naming the column and row: it is never scored best-of-N."""
    for argument in _single_text_inputs(metric):
        if argument in EXPANDED_INPUTS or argument not in kwargs:
            continue
        for row, cell in enumerate(kwargs[argument]):
            if isinstance(cell, (list, tuple)):
                raise UserInputError(
                    f"metric {name!r}: column {arguments[argument]!r}, row {start + row}: a "
                    f"list of {len(cell)} where one text is expected (only several "
                    "references are scored one by one, the best kept)")


def _expand(
    name: str, metric: Any, kwargs: dict[str, list[Any]], arguments: dict[str, str], start: int
) -> tuple[dict[str, list[Any]], list[int] | None]:
    """Rows whose cell holds a list for an input that takes one string (accuracy's and
    l3score's ``references``) become one row per item; ``owners`` maps them back (``None``
    when nothing was expanded). A list in any other single-text column is refused."""
    refuse_list_cells(name, metric, kwargs, arguments, start)
    listed = [a for a in _single_text_inputs(metric) if a in EXPANDED_INPUTS
              if a in kwargs and any(isinstance(v, (list, tuple)) for v in kwargs[a])]
    if not listed:
        return kwargs, None
    n = len(next(iter(kwargs.values())))
    expanded: dict[str, list[Any]] = {a: [] for a in kwargs}
    owners: list[int] = []
    for row in range(n):
        choices = {}
        for argument in listed:
            cell = kwargs[argument][row]
            items = list(cell) if isinstance(cell, (list, tuple)) else [cell]
            if not items:
                raise UserInputError(
                    f"metric {name!r}: column {arguments[argument]!r}, row {start + row}: "
                    "an empty list"
                )
            choices[argument] = items
        for combination in itertools.product(*choices.values()):
            owners.append(row)
            for argument in kwargs:
                expanded[argument].append(kwargs[argument][row])
            for argument, item in zip(choices, combination, strict=True):
                expanded[argument][-1] = item
    return expanded, owners


def _rows_named(
    error: Exception, column: str, start: int, owners: list[int] | None = None
) -> str:
    """An :class:`InputError` at ``argument[3]`` of chunk ``start`` -> ``column 'prediction',
    row 1003: ...`` (an item inside a list cell keeps its position: ``row 1003, item 1``)."""
    if not isinstance(error, InputError) or error.sample is None:
        return f"column {column!r}: {error}"
    index = error.sample
    row = start + (owners[index] if owners is not None and index < len(owners) else index)
    if isinstance(error.index, tuple) and len(error.index) > 1:
        items = "][".join(str(i) for i in error.index[1:])
        return f"column {column!r}, row {row}, item {items}: {error.reason}"
    return f"column {column!r}, row {row}: {error.reason}"


def score_chunk(
    name: str, metric: Any, chunk: dict[str, list[Any]], arguments: dict[str, str], start: int,
    call_options: dict[str, Any], summary: MetricSummary, weighted: dict[str, list[float]],
) -> dict[str, list[Any]]:
    """One ``compute`` call on ``chunk`` (column -> values, rows from ``start``): the per-row
    output columns; adds the chunk's counts to ``summary`` and its aggregate sums to
    ``weighted``."""
    spec = METRICS[name]
    n = len(next(iter(chunk.values())))
    kwargs, owners = _expand(name, metric, {a: chunk[c] for a, c in arguments.items()},
                             arguments, start)
    output = metric.compute(**kwargs, **call_options)
    per_row, row_details, unmeasured = per_row_columns(output, spec)
    if len(row_details) != (n if owners is None else len(owners)):
        raise RuntimeError(f"metric {name!r} returned {len(row_details)} per-sample results "
                           f"for {n if owners is None else len(owners)} samples")
    if owners is not None:
        per_row, row_details, unmeasured = best_per_row(
            per_row, row_details, unmeasured, owners, n, spec.headline[0],
            spec.lower_is_better)
    columns = {column: per_row[key] for key, column in score_column_names(name, spec).items()}
    columns[f"{name}_details"] = [None if d is None else to_json(d) for d in row_details]
    if "judges" in output:  # a panel: each judge's per-row score, its run accounted
        columns.update(judge_columns(name, row_details, len(output["judges"])))
        add_judges(summary, output["judges"])
    summary.unmeasured += len(unmeasured)
    for key in spec.headline:
        measured = [v for v in per_row[key] if v is not None]
        if owners is not None:  # the metric's own aggregate covers the expanded rows
            weighted[key][0] += sum(measured)
            weighted[key][1] += len(measured)
            continue
        value = output.get(key)
        count = len(measured) or n - len(unmeasured)
        if is_number(value) and count > 0:
            weighted[key][0] += float(value) * count
            weighted[key][1] += count
    add_usage(summary, output)
    for kind, count in (output.get("invalid_answers") or {}).items():
        summary.invalid_answers[kind] = summary.invalid_answers.get(kind, 0) + int(count)
    return columns


def score_rows(
    name: str, metric: Any, take: Callable[[int, int], dict[str, list[Any]]], rows: int,
    chunk_size: int, arguments: dict[str, str], call_options: dict[str, Any],
    summary: MetricSummary, progress: Callable[[int], Any] | None = None,
) -> tuple[dict[str, list[Any]], dict[str, list[float]]]:
    """Metric ``name`` on ``rows`` rows, ``chunk_size`` per :func:`score_chunk` call
    (``take(start, stop)``: those rows' columns): its per-row columns, and the weighted sums of
    its headline aggregates (``{key: [sum, weight]}``). Both engines score a metric through this:
    the single process over the whole input, each Ray worker over its batch. ``progress``: called
    with each chunk's row count."""
    spec = METRICS[name]
    columns: dict[str, list[Any]] = {
        column: [] for column in [*score_column_names(name, spec).values(), f"{name}_details"]}
    weighted: dict[str, list[float]] = {key: [0.0, 0.0] for key in spec.headline}
    for start in range(0, rows, chunk_size):
        chunk = take(start, start + chunk_size)
        for column, values in score_chunk(name, metric, chunk, arguments, start, call_options,
                                           summary, weighted).items():
            columns.setdefault(column, []).extend(values)
        if progress is not None:
            progress(len(next(iter(chunk.values()))))
    return columns, weighted


def best_per_row(
    per_row: dict[str, list[float | None]], details: list[Any], unmeasured: dict[int, str],
    owners: list[int], n: int, key: str, lower_is_better: bool = False,
) -> tuple[dict[str, list[float | None]], list[Any], dict[int, str]]:
    """Of each row's expanded copies, keep the best-scored one (by ``key``): the highest, or
    the lowest for a metric whose score is better when lower; a measured copy before an
    unmeasured one."""
    best: list[int | None] = [None] * n
    copies = [0] * n
    for index, row in enumerate(owners):
        copies[row] += 1
        value = per_row[key][index]
        current = best[row]
        if current is None or (value is not None and (
                per_row[key][current] is None or (
                    value < per_row[key][current] if lower_is_better
                    else value > per_row[key][current]))):
            best[row] = index
    chosen = [b for b in best if b is not None]
    rows = {k: [values[i] for i in chosen] for k, values in per_row.items()}
    kept = []
    for row, index in enumerate(chosen):
        detail = details[index]
        if copies[row] > 1:
            picked = owners[:index].count(row)
            detail = {"best_of": copies[row], "best_reference": picked,
                      **(detail if isinstance(detail, dict) else {"details": detail})}
        kept.append(detail)
    still = {row: unmeasured[index] for row, index in enumerate(chosen) if index in unmeasured}
    return rows, kept, still


def score_column_names(name: str, spec: MetricSpec) -> dict[str, str]:
    if len(spec.headline) == 1:
        return {spec.headline[0]: name}
    return {key: key if key.startswith(name) else f"{name}_{key}" for key in spec.headline}


def per_row_columns(
    output: Mapping[str, Any], spec: MetricSpec
) -> tuple[dict[str, list[float | None]], list[Any], dict[int, str]]:
    """From the output's per-sample results: each headline key's per-row score, each row's
    details (``None`` when it has none; an unmeasured row's reason under ``unmeasured``) and
    the unmeasured rows (index -> reason)."""
    results = results_of(output)
    per_row = {key: [as_score(r.value(key)) for r in results] for key in spec.headline}
    unmeasured: dict[int, str] = {}
    details: list[Any] = []
    for index, result in enumerate(results):
        detail = dict(result.details)
        if result.unmeasured_reason is not None:
            unmeasured[index] = result.unmeasured_reason
            detail.setdefault("unmeasured", result.unmeasured_reason)
        details.append(detail or None)
    return per_row, details, unmeasured


def add_usage(summary: MetricSummary, output: Mapping[str, Any]) -> None:
    if not summary.judge:
        return
    usage = output.get("usage") or {}
    for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens"):
        setattr(summary, key, getattr(summary, key) + int(usage.get(key) or 0))
    summary.cost = add_cost(summary.cost, output.get("Cost"))
    summary.cached_prompt_tokens += int(usage.get("cached_prompt_tokens") or 0)
    summary.cache_saving = add_cost(summary.cache_saving, usage.get("cache_saving") or 0.0)
    plan = output.get("dry_run")
    if isinstance(plan, Mapping):
        total = summary.dry_run or {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                    "cost": 0.0}
        for key in ("requests", "prompt_tokens", "completion_tokens"):
            total[key] += int(plan.get(key) or 0)
        total["cost"] = add_cost(total["cost"], plan.get("cost"))
        if "batch_cost" in plan:  # the same requests through the provider's batch API
            total["batch_cost"] = add_cost(total.get("batch_cost", 0.0), plan["batch_cost"])
        summary.dry_run = total


def as_score(value: Any) -> float | None:
    if value is None or not is_number(value):
        return None
    return float(value)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=True)
