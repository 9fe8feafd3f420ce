"""Where a run scores its rows, chosen once: in this process (:class:`LocalEngine`) or on Ray
Data workers (:class:`RayEngine`, docs/SCALING.md).

A run picks its engine once, with :func:`choose_engine` (``score_dataset``'s ``engine``
argument, ``score --engine``), and then asks it every step that differs between the two:
check the input and the output paths, read the input, score the rows, write the scored rows.
The metric selection, the option checks and each metric's per-chunk scoring
(``chunks.score_rows``) are the same for both. Ray is imported only by the Ray engine, and only
when a run uses it."""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig
from ..kit.registry import METRICS
from .arrow_cells import dataset_slice, struct_columns
from .chunks import chunk_size_for, load_metric, metric_arguments, score_rows, validate_all
from .files import check_input_path, check_output_path, load_input, write_output
from .panel_columns import finish_panel
from .summary import BatchSummary, MetricSummary


class Engine(Protocol):
    """What a run asks of its engine. ``in_process``: the rows are scored in this process (a
    dry run, an HTML report and a calibration map need that)."""

    name: str
    in_process: bool

    def check_input(self, source: Path) -> None: ...

    def check_output(self, out: Path) -> None: ...

    def read_input(self, source: Path) -> Any: ...

    def columns(self, dataset: Any) -> list[str]: ...

    def score(self, dataset: Any, names: list[str], skipped: dict[str, str],
              config: JudgeConfig, chunk_size: int | None, show_progress: bool,
              call_options: Mapping[str, dict[str, Any]]) -> tuple[Any, BatchSummary]: ...

    def write_output(self, scored: Any, out: Path, csv_raw: bool = False) -> int: ...


class LocalEngine:
    """This process: a ``datasets.Dataset`` in, the same with the score columns out; a file
    (.jsonl, .csv, .parquet) or a saved dataset folder in, one file out."""

    name = "local"
    in_process = True

    def check_input(self, source: Path) -> None:
        check_input_path(source)

    def check_output(self, out: Path) -> None:
        check_output_path(out)

    def read_input(self, source: Path) -> Any:
        return load_input(source)  # checked by check_input, before any work

    def columns(self, dataset: Any) -> list[str]:
        return list(dataset.column_names)

    def score(self, dataset: Any, names: list[str], skipped: dict[str, str],
              config: JudgeConfig, chunk_size: int | None, show_progress: bool,
              call_options: Mapping[str, dict[str, Any]]) -> tuple[Any, BatchSummary]:
        """Every metric on every row, chunk by chunk; every cell of every metric is validated
        before the first ``compute`` call."""
        if len(dataset) == 0:
            raise UserInputError("the input has no rows")
        sizes = {name: chunk_size_for(name, chunk_size) for name in names}
        loaded = {name: load_metric(name) for name in names}
        for name in names:
            validate_all(name, loaded[name], dataset, sizes[name])
        summaries: list[MetricSummary] = []
        new_columns: dict[str, list[Any]] = {}
        for name in names:
            columns, summary = _score_metric(name, loaded[name], dataset, sizes[name],
                                             call_options[name], show_progress)
            summaries.append(summary)
            new_columns.update(columns)
        if not config.dry_run:
            dataset = with_columns(dataset, new_columns)
        return dataset, BatchSummary(summaries, skipped, config.dry_run)

    def write_output(self, scored: Any, out: Path, csv_raw: bool = False) -> int:
        write_output(scored, out, csv_raw=csv_raw)
        return len(scored)


class RayEngine:
    """Ray Data workers (``workers`` of them, default: the cluster's CPUs), on the cluster at
    ``address`` (default: ``$RAY_ADDRESS``, else a new local one). Reads and writes Parquet or
    JSON lines: INPUT a file or a folder of them, OUTPUT a folder of files."""

    name = "ray"
    in_process = False

    def __init__(self, address: str | None = None, workers: int | None = None,
                 quiet: bool = False) -> None:
        try:
            import ray  # noqa: F401
        except ImportError:
            raise UserInputError("--engine ray needs Ray: pip install 'judge-metrics[ray]'"
                                 ) from None
        self.address, self.workers, self.quiet = address, workers, quiet

    def check_input(self, source: Path) -> None:
        from .ray_engine import check_input_format

        check_input_path(source)
        check_input_format(source)

    def check_output(self, out: Path) -> None:
        from .ray_engine import check_output_folder

        check_output_folder(out)

    def read_input(self, source: Path) -> Any:
        from .ray_engine import connect, read_input

        connect(self.address, quiet=self.quiet)
        return read_input(source)

    def columns(self, dataset: Any) -> list[str]:
        if hasattr(dataset, "column_names"):  # a datasets.Dataset given to score_dataset
            return list(dataset.column_names)
        return list(dataset.columns())

    def score(self, dataset: Any, names: list[str], skipped: dict[str, str],
              config: JudgeConfig, chunk_size: int | None, show_progress: bool,
              call_options: Mapping[str, dict[str, Any]]) -> tuple[Any, BatchSummary]:
        from .ray_engine import score_on_ray

        return score_on_ray(dataset, names, skipped, config, chunk_size, self.workers,
                            show_progress, call_options)

    def write_output(self, scored: Any, out: Path, csv_raw: bool = False) -> int:
        from .ray_engine import write_output as write_folder

        return write_folder(scored, out)


# the engines by name: score's --engine choices
ENGINES = {engine.name: engine for engine in (LocalEngine, RayEngine)}


def choose_engine(engine: str | Engine | None = None, dataset: Any = None,
                  workers: int | None = None, address: str | None = None,
                  quiet: bool = False) -> Engine:
    """The engine of a run: an :class:`Engine` as given; else by name, ``"local"`` (the
    default) or ``"ray"`` (with ``workers``, ``address`` and ``quiet``, which only Ray reads).
    A ``ray.data.Dataset`` always runs on Ray."""
    ray_input = dataset is not None and type(dataset).__module__.startswith("ray.data")
    if not isinstance(engine, (str, type(None))):
        if ray_input and engine.in_process:
            raise UserInputError(f"engine {engine.name!r} cannot score a ray.data.Dataset")
        return engine
    if engine not in (None, *ENGINES) or (ray_input and engine == LocalEngine.name):
        raise UserInputError(f"engine must be {' or '.join(map(repr, ENGINES))}, "
                             f"got {engine!r}")
    if ray_input or engine == RayEngine.name:
        return RayEngine(address=address, workers=workers, quiet=quiet)
    return LocalEngine()


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


def _score_metric(
    name: str, metric: Any, dataset: Any, chunk_size: int, call_options: dict[str, Any],
    show_progress: bool,
) -> tuple[dict[str, list[Any]], MetricSummary]:
    from tqdm.auto import tqdm

    spec = METRICS[name]
    arguments = metric_arguments(spec, dataset)
    data = dataset.select_columns(sorted(set(arguments.values())))
    structs = struct_columns(data)  # read with absent keys absent (arrow_cells)
    summary = MetricSummary(name, {}, len(dataset), 0, spec.judge)
    started = time.perf_counter()
    with tqdm(total=len(dataset), desc=name, unit="row", disable=not show_progress,
              file=sys.stderr, dynamic_ncols=True) as bar:
        columns, weighted = score_rows(
            name, metric, lambda start, stop: dataset_slice(data, start, stop, structs),
            len(dataset), chunk_size,
            arguments, call_options, summary, progress=bar.update)
    summary.seconds = time.perf_counter() - started
    summary.aggregates = {k: (s / w if w else None) for k, (s, w) in weighted.items()}
    finish_panel(name, columns, summary)
    summary.columns = list(columns)
    return columns, summary
