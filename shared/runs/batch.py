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

import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..base.errors import UserInputError
from ..base.options import EMBEDDING_OPTIONS
from ..engine.config import JUDGE_OPTION_NAMES, judge_config
from ..kit.registry import METRICS, MetricSpec, available
from .chunks import (
    chunk_size_for,
    load_metric,
    metric_arguments,
    score_chunk,
    score_column_names,
    validate_all,
)
from .panel_columns import finish_panel
from .summary import BatchSummary, MetricSummary

EMBEDDING_OPTION_NAMES = tuple(option.name for option in EMBEDDING_OPTIONS)


def check_metric_names(names: Iterable[str]) -> None:
    """Fail early on a metric name that is unknown or not installed."""
    installed = available()
    for name in names:
        if name == "all":
            continue
        if name not in METRICS:
            raise UserInputError(
                f"unknown metric {name!r}; choose from: all, {', '.join(METRICS)}"
            )
        if name not in installed:
            raise UserInputError(
                f"metric {name!r} is not installed (no metrics/{name}/{name}.py)"
            )


def select_metrics(
    requested: str | Sequence[str], column_names: Iterable[str],
    metric_options: Mapping[str, Mapping[str, Any]] | None = None,
) -> tuple[list[str], dict[str, str]]:
    """The metrics to run, in registry order, and the skipped ones with the reason.

    ``"all"`` means every available metric whose input columns are present and whose required
    options (g_eval's ``criteria``) ``metric_options`` gives; a metric named explicitly must
    exist and have its columns, else :class:`UserInputError`.
    """
    names = [requested] if isinstance(requested, str) else list(requested)
    if not names:
        raise UserInputError("no metric given: name one or more metrics, or 'all'")
    present = set(column_names)
    installed = available()
    wanted: set[str] = set()
    skipped: dict[str, str] = {}
    for name in names:
        if name == "all":
            for candidate in installed:
                missing = _missing_columns(METRICS[candidate], present)
                unset = _unset_options(candidate, metric_options)
                if missing:
                    skipped[candidate] = f"needs column(s) {', '.join(missing)}"
                elif unset:
                    skipped[candidate] = f"needs {unset}"
                else:
                    wanted.add(candidate)
            continue
        check_metric_names([name])
        missing = _missing_columns(METRICS[name], present)
        if missing:
            raise UserInputError(
                f"metric {name!r} needs column(s) {', '.join(repr(c) for c in missing)}, which "
                f"the input does not have (its columns: {', '.join(sorted(present)) or 'none'})"
            )
        unset = _unset_options(name, metric_options)
        if unset:
            raise UserInputError(f"metric {name!r} needs {unset} (no default)")
        wanted.add(name)
    for name in wanted:
        skipped.pop(name, None)
    return [n for n in METRICS if n in wanted], skipped


def _unset_options(name: str, metric_options: Mapping[str, Mapping[str, Any]] | None) -> str:
    """``--option NAME.X=...`` for each required option of metric ``name`` not given; ""."""
    given = (metric_options or {}).get(name, {})
    return ", ".join(f"--option {name}.{option.name}=..." for option in METRICS[name].options
                     if option.required and option.name not in given)


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
    ``chunk_size``: rows per ``compute`` call (default 1,000; for judge metrics 32, which is
    also the local judge's decoding batch).
    ``metric_options``: extra ``compute`` keyword arguments per metric, e.g.
    ``{"accuracy": {"fuzzy_match": True}}``. ``show_progress``: one bar per metric over rows.
    With ``dry_run=True`` only the judge metrics run, nothing is sent, the dataset is returned
    unchanged and the summary holds each metric's plan.
    ``engine``: ``"local"`` (this process) or ``"ray"`` (Ray Data workers, ``workers`` of them,
    default: the cluster's CPUs; docs/SCALING.md); a ``ray.data.Dataset`` always runs on Ray
    and comes back as a materialized ``ray.data.Dataset``.
    """
    ray_input = type(dataset).__module__.startswith("ray.data")
    config, judge_options, embed_options = _checked_options(
        dataset, ray_input, engine, chunk_size, options)
    dry_run = config.dry_run
    metric_options = dict(metric_options or {})

    names, skipped = select_metrics(
        metrics, dataset.columns() if ray_input else dataset.column_names, metric_options)
    for name in metric_options:
        if name not in names:
            raise UserInputError(f"metric_options names {name!r}, which is not being run")
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
        raise UserInputError("the input has no rows")

    sizes = {name: chunk_size_for(name, chunk_size) for name in names}
    loaded = {name: load_metric(name) for name in names}
    for name in names:
        validate_all(name, loaded[name], dataset, sizes[name])

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
        dataset = with_columns(dataset, new_columns)
    return dataset, BatchSummary(summaries, skipped, dry_run)


def with_columns(dataset: Any, columns: Mapping[str, list[Any]]) -> Any:
    """``dataset`` with ``columns`` added (a column of the same name replaced), built on its
    Arrow table directly. Not ``Dataset.add_column``: that fingerprints each new column by
    pickling all its values (about 0.2 s per column per 100,000 rows) inside a bare ``except``
    of ``datasets``, which swallowed a Ctrl-C and let the run finish and replace its output."""
    import datasets
    import pyarrow as pa

    table = dataset.with_format("arrow")[:]  # the rows in order (an index mapping applied)
    features = {k: v for k, v in dataset.features.items() if k not in columns}
    for name, values in columns.items():
        if name in table.column_names:
            table = table.remove_column(table.column_names.index(name))
        array = pa.array(values)
        table = table.append_column(name, array)
        features[name] = datasets.Features.from_arrow_schema(
            pa.schema([(name, array.type)]))[name]
    info = dataset.info.copy()
    info.features = datasets.Features(features)
    return datasets.Dataset(table, info=info, split=dataset.split)


def _checked_options(
    dataset: Any, ray_input: bool, engine: str | None, chunk_size: int | None,
    options: Mapping[str, Any],
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """``score_dataset``'s arguments checked before any work: the judge config, the judge
    options and the embedding options."""
    import datasets

    if engine not in (None, "local", "ray") or (ray_input and engine == "local"):
        raise UserInputError(f"engine must be 'local' or 'ray', got {engine!r}")

    if isinstance(dataset, datasets.DatasetDict):
        raise UserInputError(
            f"got a DatasetDict with splits {', '.join(dataset)}; pass one split, "
            "e.g. dataset['test']"
        )
    if not ray_input and not isinstance(dataset, datasets.Dataset):
        raise UserInputError(f"dataset must be a datasets.Dataset, got {type(dataset).__name__}")
    if chunk_size is not None and (
        isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1
    ):
        raise UserInputError(f"chunk_size must be a positive int, got {chunk_size!r}")
    unknown = set(options) - set(JUDGE_OPTION_NAMES) - set(EMBEDDING_OPTION_NAMES)
    if unknown:
        raise UserInputError(f"unknown option(s): {', '.join(sorted(unknown))}")
    judge_options = {k: v for k, v in options.items() if k in JUDGE_OPTION_NAMES}
    judge_options.pop("show_progress", None)
    embed_options = {k: v for k, v in options.items() if k in EMBEDDING_OPTION_NAMES}
    try:
        config = judge_config(**judge_options)
    except (TypeError, ValueError) as error:
        raise UserInputError(str(error)) from None
    return config, judge_options, embed_options


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


def _score_metric(
    name: str, metric: Any, dataset: Any, chunk_size: int, call_options: dict[str, Any],
    show_progress: bool,
) -> tuple[dict[str, list[Any]], MetricSummary]:
    from tqdm.auto import tqdm

    spec = METRICS[name]
    arguments = metric_arguments(spec, dataset)
    data = dataset.select_columns(sorted(set(arguments.values())))
    columns: dict[str, list[Any]] = {
        column: [] for column in [*score_column_names(name, spec).values(), f"{name}_details"]}
    weighted: dict[str, list[float]] = {key: [0.0, 0.0] for key in spec.headline}
    summary = MetricSummary(name, {}, len(dataset), 0, spec.judge)
    started = time.perf_counter()
    with tqdm(total=len(dataset), desc=name, unit="row", disable=not show_progress,
              file=sys.stderr, dynamic_ncols=True) as bar:
        for start in range(0, len(dataset), chunk_size):
            chunk = data[start:start + chunk_size]
            for column, values in score_chunk(name, metric, chunk, arguments, start,
                                               call_options, summary, weighted).items():
                columns.setdefault(column, []).extend(values)
            bar.update(len(next(iter(chunk.values()))))
    summary.seconds = time.perf_counter() - started
    summary.aggregates = {k: (s / w if w else None) for k, (s, w) in weighted.items()}
    finish_panel(name, columns, summary)
    summary.columns = list(columns)
    return columns, summary


