"""Score a ``datasets.Dataset`` with several metrics, chunk by chunk (the engine of the CLI).

Each metric sees the rows in chunks (``chunk_size`` rows per ``compute`` call), so memory stays
bounded and a progress bar can advance per chunk. Every input cell is validated for every metric
before the first ``compute`` call, so a bad row fails at once, not after an hour of judge calls.
Resuming a killed run needs nothing here: the judge runner stores each answer in the persistent
call cache as it arrives, so a rerun sends only the calls that had not completed.

Output columns per metric: ``<metric>`` (the per-row score; ``None`` where unmeasured) and
``<metric>_details`` (the per-row details as JSON text). A metric with several aggregates (rouge)
gets one score column per aggregate key instead of ``<metric>``: the key itself when it starts
with the metric's name (``rouge1`` ... ``rougeLsum``), else ``<metric>_<key>``.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .config import JUDGE_OPTION_NAMES, judge_config
from .options import EMBEDDING_OPTIONS
from .registry import METRICS, MetricSpec, available, metric_path
from .results import results_of
from .validation import InputError

DEFAULT_CHUNK_SIZE = 1000
DEFAULT_JUDGE_CHUNK_SIZE = 32
DEFAULT_LOCAL_JUDGE_CHUNK_SIZE = 8  # the in-process judge is slow: keep the progress bar moving
EMBEDDING_OPTION_NAMES = tuple(option.name for option in EMBEDDING_OPTIONS)


class BatchInputError(ValueError):
    """The user's input or options are wrong (unknown metric, missing column, bad cell)."""


@dataclass
class MetricSummary:
    """What one metric did over the whole dataset."""

    metric: str
    aggregates: dict[str, float | None]
    rows: int
    unmeasured: int
    judge: bool
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    dry_run: dict[str, Any] | None = None
    columns: list[str] = field(default_factory=list)
    seconds: float = 0.0
    invalid_answers: dict[str, int] = field(default_factory=dict)  # unmeasured, per kind


@dataclass
class BatchSummary:
    """The result of :func:`score_dataset` besides the scored dataset."""

    metrics: list[MetricSummary]
    skipped: dict[str, str]
    dry_run: bool = False
    ray: dict[str, int] | None = None  # engine="ray": {"workers": ..., "batches": ...}

    def as_dict(self) -> dict[str, Any]:
        return {"metrics": [asdict(m) for m in self.metrics], "skipped": dict(self.skipped),
                "dry_run": self.dry_run}

    def table(self) -> str:
        """A plain-text table of the run (the CLI prints it)."""
        if self.dry_run:
            header = ["metric", "requests", "prompt tokens", "completion tokens", "est. cost"]
            rows = []
            for m in self.metrics:
                plan = m.dry_run or {}
                rows.append([m.metric, _int(plan.get("requests")), _int(plan.get("prompt_tokens")),
                             _int(plan.get("completion_tokens")), _money(plan.get("cost"))])
            total = total_plan(self.metrics)
            rows.append(["total", _int(total["requests"]), _int(total["prompt_tokens"]),
                         _int(total["completion_tokens"]), _money(total["cost"])])
        else:
            header = ["metric", "aggregate(s)", "rows", "unmeasured", "calls", "cache hits",
                      "cost", "invalid answers"]
            rows = []
            for m in self.metrics:
                aggregates = " ".join(f"{k}={_number(v)}" for k, v in m.aggregates.items())
                judged = ([str(m.calls), str(m.cache_hits), _money(m.cost),
                           _invalid(m.invalid_answers)] if m.judge else ["-"] * 4)
                rows.append([m.metric, aggregates, str(m.rows), str(m.unmeasured), *judged])
        return _format_table(header, rows)


def total_plan(metrics: Iterable[MetricSummary]) -> dict[str, Any]:
    total: dict[str, Any] = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                             "cost": 0.0}
    for m in metrics:
        plan = m.dry_run or {}
        for key in ("requests", "prompt_tokens", "completion_tokens"):
            total[key] += int(plan.get(key) or 0)
        total["cost"] = _add_cost(total["cost"], plan.get("cost"))
    return total


def check_metric_names(names: Iterable[str]) -> None:
    """Fail early on a metric name that is unknown or not installed."""
    installed = available()
    for name in names:
        if name == "all":
            continue
        if name not in METRICS:
            raise BatchInputError(
                f"unknown metric {name!r}; choose from: all, {', '.join(METRICS)}"
            )
        if name not in installed:
            raise BatchInputError(
                f"metric {name!r} is not installed (no metrics/{name}/{name}.py)"
            )


def select_metrics(
    requested: str | Sequence[str], column_names: Iterable[str]
) -> tuple[list[str], dict[str, str]]:
    """The metrics to run, in registry order, and the skipped ones with the reason.

    ``"all"`` means every available metric whose input columns are present; a metric named
    explicitly must exist and have its columns, else :class:`BatchInputError`.
    """
    names = [requested] if isinstance(requested, str) else list(requested)
    if not names:
        raise BatchInputError("no metric given: name one or more metrics, or 'all'")
    present = set(column_names)
    installed = available()
    wanted: set[str] = set()
    skipped: dict[str, str] = {}
    for name in names:
        if name == "all":
            for candidate in installed:
                missing = _missing_columns(METRICS[candidate], present)
                if missing:
                    skipped[candidate] = f"needs column(s) {', '.join(missing)}"
                else:
                    wanted.add(candidate)
            continue
        check_metric_names([name])
        missing = _missing_columns(METRICS[name], present)
        if missing:
            raise BatchInputError(
                f"metric {name!r} needs column(s) {', '.join(repr(c) for c in missing)}, which "
                f"the input does not have (its columns: {', '.join(sorted(present)) or 'none'})"
            )
        wanted.add(name)
    for name in wanted:
        skipped.pop(name, None)
    return [n for n in METRICS if n in wanted], skipped


def _missing_columns(spec: MetricSpec, present: set[str]) -> list[str]:
    return [column for column in spec.columns.values() if column not in present]


def score_dataset(
    dataset: Any,
    metrics: str | Sequence[str],
    *,
    chunk_size: int | None = None,
    show_progress: bool = True,
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
    engine: str | None = None,
    workers: int | None = None,
    **options: Any,
) -> tuple[Any, BatchSummary]:
    """Score every row of ``dataset`` with ``metrics``; return the dataset with the added
    columns and a :class:`BatchSummary`.

    ``dataset``: a ``datasets.Dataset`` with the singular columns (question, prediction,
    reference, contexts, source, expected). ``metrics``: a name, a list of names, or ``"all"``.
    ``options``: judge options (provider, model, api_key, base_url, max_concurrency, use_cache,
    cache_dir, timeout, max_retries, response_format, device, batch_size, dry_run), passed to
    the judge metrics, and ``embedding_model``, passed to the embedding metrics.
    ``chunk_size``: rows per ``compute`` call (default 1,000; for judge metrics 32, or 8 with
    the local judge).
    ``metric_options``: extra ``compute`` keyword arguments per metric, e.g.
    ``{"accuracy": {"fuzzy_match": True}}``. ``show_progress``: one bar per metric over rows.
    With ``dry_run=True`` only the judge metrics run, nothing is sent, the dataset is returned
    unchanged and the summary holds each metric's plan.
    ``engine``: ``"local"`` (this process) or ``"ray"`` (Ray Data workers, ``workers`` of them,
    default: the cluster's CPUs; docs/SCALING.md); a ``ray.data.Dataset`` always runs on Ray
    and comes back as a materialized ``ray.data.Dataset``.
    """
    import datasets

    ray_input = type(dataset).__module__.startswith("ray.data")
    if engine not in (None, "local", "ray") or (ray_input and engine == "local"):
        raise BatchInputError(f"engine must be 'local' or 'ray', got {engine!r}")

    if isinstance(dataset, datasets.DatasetDict):
        raise BatchInputError(
            f"got a DatasetDict with splits {', '.join(dataset)}; pass one split, "
            "e.g. dataset['test']"
        )
    if not ray_input and not isinstance(dataset, datasets.Dataset):
        raise BatchInputError(f"dataset must be a datasets.Dataset, got {type(dataset).__name__}")
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
    ):
        raise BatchInputError(f"chunk_size must be a positive int, got {chunk_size!r}")
    unknown = set(options) - set(JUDGE_OPTION_NAMES) - set(EMBEDDING_OPTION_NAMES)
    if unknown:
        raise BatchInputError(f"unknown option(s): {', '.join(sorted(unknown))}")
    judge_options = {k: v for k, v in options.items() if k in JUDGE_OPTION_NAMES}
    judge_options.pop("show_progress", None)
    embed_options = {k: v for k, v in options.items() if k in EMBEDDING_OPTION_NAMES}
    try:
        config = judge_config(**judge_options)
    except (TypeError, ValueError) as error:
        raise BatchInputError(str(error)) from None
    dry_run = config.dry_run
    metric_options = dict(metric_options or {})

    names, skipped = select_metrics(
        metrics, dataset.columns() if ray_input else dataset.column_names)
    for name in metric_options:
        if name not in names:
            raise BatchInputError(f"metric_options names {name!r}, which is not being run")
    if dry_run:
        for name in [n for n in names if not METRICS[n].judge]:
            skipped[name] = "calls no judge (dry run)"
        names = [n for n in names if METRICS[n].judge]
    if ray_input or engine == "ray":
        from .ray_engine import score_on_ray

        return score_on_ray(dataset, names, skipped, config, chunk_size, workers, show_progress,
                            {n: _call_options(n, metric_options, judge_options, embed_options)
                             for n in names})
    if len(dataset) == 0:
        raise BatchInputError("the input has no rows")

    sizes = {name: _chunk_size(name, chunk_size, config.provider) for name in names}
    loaded = {name: _load(name) for name in names}
    for name in names:
        _validate_all(name, loaded[name], dataset, sizes[name])

    summaries: list[MetricSummary] = []
    new_columns: dict[str, list[Any]] = {}
    for name in names:
        call_options = _call_options(name, metric_options, judge_options, embed_options)
        columns, summary = _score_metric(
            name, loaded[name], dataset, sizes[name], call_options,
            show_progress,
        )
        summaries.append(summary)
        new_columns.update(columns)

    if not dry_run:
        for column, values in new_columns.items():
            if column in dataset.column_names:
                dataset = dataset.remove_columns(column)
            dataset = dataset.add_column(column, values)
    return dataset, BatchSummary(summaries, skipped, dry_run)


def _call_options(
    name: str, metric_options: Mapping[str, Mapping[str, Any]], judge_options: dict[str, Any],
    embed_options: dict[str, Any],
) -> dict[str, Any]:
    """The keyword arguments of ``name``'s ``compute`` calls besides its input columns."""
    spec = METRICS[name]
    call_options: dict[str, Any] = dict(metric_options.get(name, {}))
    if spec.judge:
        call_options.update(judge_options)
        call_options["show_progress"] = False
    if spec.embeds:
        call_options.update(embed_options)
    return call_options


def _chunk_size(name: str, chunk_size: int | None, provider: str) -> int:
    if chunk_size is not None:
        return chunk_size
    if not METRICS[name].judge:
        return DEFAULT_CHUNK_SIZE
    return DEFAULT_LOCAL_JUDGE_CHUNK_SIZE if provider == "local" else DEFAULT_JUDGE_CHUNK_SIZE


def _load(name: str) -> Any:
    import evaluate

    return evaluate.load(metric_path(name), keep_in_memory=True)


def _arguments(spec: MetricSpec, dataset: Any) -> dict[str, str]:
    """compute argument -> column, optional columns included when the dataset has them."""
    arguments = dict(spec.columns)
    for argument, column in spec.optional_columns.items():
        if column in dataset.column_names:
            arguments[argument] = column
    return arguments


def _validate_all(name: str, metric: Any, dataset: Any, chunk_size: int) -> None:
    """Check every cell the metric will read, naming the column and the dataset row."""
    arguments = _arguments(METRICS[name], dataset)
    inputs = [i for i in getattr(metric, "INPUTS", ()) if i.name in arguments]
    if not inputs:
        return
    data = dataset.select_columns(sorted({arguments[i.name] for i in inputs}))
    for start in range(0, len(dataset), chunk_size):
        chunk = data[start:start + chunk_size]
        kwargs, owners = _expand(name, metric, {a: chunk[c] for a, c in arguments.items()},
                                 arguments, start)
        for spec in inputs:
            try:
                spec.validate(kwargs[spec.name])
            except (TypeError, ValueError) as error:
                raise BatchInputError(f"metric {name!r}: " + _rows_named(
                    error, arguments[spec.name], start, owners)) from None


def _single_text_inputs(metric: Any) -> list[str]:
    return [i.name for i in getattr(metric, "INPUTS", ()) if i.kind == "text"]


def _expand(
    name: str, metric: Any, kwargs: dict[str, list[Any]], arguments: dict[str, str], start: int
) -> tuple[dict[str, list[Any]], list[int] | None]:
    """Rows whose cell holds a list for an input that takes one string (accuracy's and
    l3score's ``references``) become one row per item; ``owners`` maps them back (``None``
    when nothing was expanded)."""
    listed = [a for a in _single_text_inputs(metric)
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
                raise BatchInputError(
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


def _score_metric(
    name: str, metric: Any, dataset: Any, chunk_size: int, call_options: dict[str, Any],
    show_progress: bool,
) -> tuple[dict[str, list[Any]], MetricSummary]:
    from tqdm.auto import tqdm

    spec = METRICS[name]
    arguments = _arguments(spec, dataset)
    data = dataset.select_columns(sorted(set(arguments.values())))
    columns: dict[str, list[Any]] = {
        column: [] for column in [*_score_column_names(name, spec).values(), f"{name}_details"]}
    weighted: dict[str, list[float]] = {key: [0.0, 0.0] for key in spec.headline}
    summary = MetricSummary(name, {}, len(dataset), 0, spec.judge)
    started = time.perf_counter()
    with tqdm(total=len(dataset), desc=name, unit="row", disable=not show_progress,
              file=sys.stderr, dynamic_ncols=True) as bar:
        for start in range(0, len(dataset), chunk_size):
            chunk = data[start:start + chunk_size]
            for column, values in _score_chunk(name, metric, chunk, arguments, start,
                                               call_options, summary, weighted).items():
                columns[column].extend(values)
            bar.update(len(next(iter(chunk.values()))))
    summary.seconds = time.perf_counter() - started
    summary.aggregates = {k: (s / w if w else None) for k, (s, w) in weighted.items()}
    summary.columns = list(columns)
    return columns, summary


def _score_chunk(
    name: str, metric: Any, chunk: dict[str, list[Any]], arguments: dict[str, str], start: int,
    call_options: dict[str, Any], summary: MetricSummary, weighted: dict[str, list[float]],
) -> dict[str, list[Any]]:
    """One ``compute`` call on ``chunk`` (column -> values, rows from ``start``): the per-row
    output columns; adds the chunk's counts to ``summary`` and its aggregate sums to
    ``weighted`` (the Ray engine calls this for each batch, see shared/ray_engine.py)."""
    spec = METRICS[name]
    n = len(next(iter(chunk.values())))
    kwargs, owners = _expand(name, metric, {a: chunk[c] for a, c in arguments.items()},
                             arguments, start)
    output = metric.compute(**kwargs, **call_options)
    per_row, row_details, unmeasured = _per_row(output, spec)
    if len(row_details) != (n if owners is None else len(owners)):
        raise RuntimeError(f"metric {name!r} returned {len(row_details)} per-sample results "
                           f"for {n if owners is None else len(owners)} samples")
    if owners is not None:
        per_row, row_details, unmeasured = _best_per_row(
            per_row, row_details, unmeasured, owners, n, spec.headline[0])
    columns = {column: per_row[key] for key, column in _score_column_names(name, spec).items()}
    columns[f"{name}_details"] = [None if d is None else _to_json(d) for d in row_details]
    summary.unmeasured += len(unmeasured)
    for key in spec.headline:
        measured = [v for v in per_row[key] if v is not None]
        if owners is not None:  # the metric's own aggregate covers the expanded rows
            weighted[key][0] += sum(measured)
            weighted[key][1] += len(measured)
            continue
        value = output.get(key)
        count = len(measured) or n - len(unmeasured)
        if _is_number(value) and count > 0:
            weighted[key][0] += float(value) * count
            weighted[key][1] += count
    _add_usage(summary, output)
    for kind, count in (output.get("invalid_answers") or {}).items():
        summary.invalid_answers[kind] = summary.invalid_answers.get(kind, 0) + int(count)
    return columns


def _best_per_row(
    per_row: dict[str, list[float | None]], details: list[Any], unmeasured: dict[int, str],
    owners: list[int], n: int, key: str,
) -> tuple[dict[str, list[float | None]], list[Any], dict[int, str]]:
    """Of each row's expanded copies, keep the best-scored one (by ``key``)."""
    best: list[int | None] = [None] * n
    copies = [0] * n
    for index, row in enumerate(owners):
        copies[row] += 1
        value = per_row[key][index]
        current = best[row]
        if current is None or (value is not None and (
                per_row[key][current] is None or value > per_row[key][current])):
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


def _score_column_names(name: str, spec: MetricSpec) -> dict[str, str]:
    if len(spec.headline) == 1:
        return {spec.headline[0]: name}
    return {key: key if key.startswith(name) else f"{name}_{key}" for key in spec.headline}


def _per_row(
    output: Mapping[str, Any], spec: MetricSpec
) -> tuple[dict[str, list[float | None]], list[Any], dict[int, str]]:
    """From the output's per-sample results: each headline key's per-row score, each row's
    details (``None`` when it has none; an unmeasured row's reason under ``unmeasured``) and
    the unmeasured rows (index -> reason)."""
    results = results_of(output)
    per_row = {key: [_as_score(r.value(key)) for r in results] for key in spec.headline}
    unmeasured: dict[int, str] = {}
    details: list[Any] = []
    for index, result in enumerate(results):
        detail = dict(result.details)
        if result.unmeasured_reason is not None:
            unmeasured[index] = result.unmeasured_reason
            detail.setdefault("unmeasured", result.unmeasured_reason)
        details.append(detail or None)
    return per_row, details, unmeasured


def _invalid(counts: Mapping[str, int]) -> str:
    """``copied_example=2,placeholder_reason=1`` (the non-zero kinds), or ``0``."""
    shown = ",".join(f"{kind}={count}" for kind, count in counts.items() if count)
    return shown or "0"


def _add_usage(summary: MetricSummary, output: Mapping[str, Any]) -> None:
    if not summary.judge:
        return
    usage = output.get("usage") or {}
    for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens"):
        setattr(summary, key, getattr(summary, key) + int(usage.get(key) or 0))
    summary.cost = _add_cost(summary.cost, output.get("Cost"))
    plan = output.get("dry_run")
    if isinstance(plan, Mapping):
        total = summary.dry_run or {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                                    "cost": 0.0}
        for key in ("requests", "prompt_tokens", "completion_tokens"):
            total[key] += int(plan.get(key) or 0)
        total["cost"] = _add_cost(total["cost"], plan.get("cost"))
        summary.dry_run = total


def _add_cost(total: float | None, cost: Any) -> float | None:
    if total is None or not _is_number(cost):
        return None
    return total + float(cost)


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False


def _as_score(value: Any) -> float | None:
    if value is None or not _is_number(value):
        return None
    return float(value)


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return str(value)


def _to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=_json_default, allow_nan=True)


def _int(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def _money(value: Any) -> str:
    return "unknown" if value is None else f"${float(value):.4f}"


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, [("-" * w) for w in widths], *rows]]
    return "\n".join(lines)
