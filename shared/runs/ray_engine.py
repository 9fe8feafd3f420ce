"""Batch scoring on Ray Data: ``score_dataset(..., engine="ray")`` and ``score --engine ray``.

Each Ray worker is one actor of a ``map_batches`` pool (:class:`_MetricWorker`): it loads every
metric once (and with it the embedding model, on its first batch), then scores each batch with
the same per-metric function as the single-process path (``chunks.score_rows``), so the per-row
columns and numbers are the same. Each batch's counts (unmeasured rows, judge calls, cache hits,
cost, the aggregate sums) go to one small tally actor, from which the driver builds the
:class:`~shared.runs.summary.BatchSummary`.

Judge traffic: the job's one ``max_concurrency`` (default 16) is split over the workers: each
worker gets ``floor(total / workers)`` requests in flight, and at most ``total`` workers run,
so the whole cluster never has more than ``total`` requests in flight at the judge server;
``max_requests_per_minute`` and ``max_tokens_per_minute`` are split the same way (each worker
paces its share), and each worker's rate limiter reads the provider's own headers, which count
the whole cluster's requests (shared/engine/backends/rate_limit.py).
A worker scores the metrics of a batch one after the other, so one judge metric at a time.

The call cache: every worker opens the same SQLite file (``cache_dir``, resolved on the driver),
which is in WAL mode and serialises writers; on a multi-node cluster that folder must be shared
(docs/SCALING.md). ray is imported only here, and only when this engine runs.
"""

from __future__ import annotations

import os
import re
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from ..base.errors import UserInputError
from ..engine.config import JudgeConfig
from ..kit.registry import METRICS
from .arrow_cells import column_values
from .chunks import (
    chunk_size_for,
    load_metric,
    metric_arguments,
    score_column_names,
    score_rows,
    validate_all,
)
from .files import check_folder_writable, remove_stale_temporaries, write_jsonl_rows
from .panel_columns import add_panel_counts, finish_panel_counts, panel_counts
from .summary import BatchSummary, MetricSummary, add_cost


def concurrency_split(total: int, workers: int) -> tuple[int, int]:
    """``(workers, per_worker)`` for a judge job: at most ``total`` workers, each with
    ``floor(total / workers)`` (at least 1) requests in flight; never more than ``total`` in
    all."""
    workers = max(1, min(workers, total))
    return workers, max(1, total // workers)


def score_on_ray(
    dataset: Any,
    names: list[str],
    skipped: dict[str, str],
    config: JudgeConfig,
    chunk_size: int | None,
    workers: int | None,
    show_progress: bool,
    call_options: Mapping[str, dict[str, Any]],
) -> tuple[Any, BatchSummary]:
    """``score_dataset``'s Ray path (called by it after the options and metric names are
    checked). A ``datasets.Dataset`` comes back as one; a ``ray.data.Dataset`` comes back
    materialized (its blocks in the object store)."""
    import ray
    import ray.data

    if config.dry_run:
        raise UserInputError("a dry run needs no Ray: drop engine='ray' / --engine ray")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise UserInputError(f"workers must be a positive int, got {workers!r}")
    if not ray.is_initialized():
        ray.init()
    if workers is None:
        workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
    workers, options = worker_options(names, config, workers, call_options)
    sizes = {name: chunk_size_for(name, chunk_size) for name in names}
    batch_size = max(sizes.values())
    hf_input = not type(dataset).__module__.startswith("ray.data")
    dataset = _blocks(dataset, hf_input, batch_size, workers)
    columns = SimpleNamespace(column_names=dataset.columns())
    arguments = {name: metric_arguments(METRICS[name], columns) for name in names}
    tally = ray.remote(num_cpus=0)(_Tally).remote()
    # A Dataset plans with the snapshot of the DataContext taken when it was created (from_arrow
    # above, or the caller's read), not with the current global one: the order must be asked of
    # the dataset's own context, and given back as it was (a Ray input's is the caller's).
    context = dataset.context
    saved = context.execution_options.preserve_order, context.enable_progress_bars
    context.execution_options.preserve_order = True  # the rows come back in input order
    context.enable_progress_bars = show_progress
    started = time.perf_counter()
    try:
        scored = dataset.map_batches(
            _MetricWorker,
            fn_constructor_kwargs={"names": names, "sizes": sizes, "arguments": arguments,
                                   "options": options, "tally": tally},
            batch_size=batch_size,
            batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=workers),
            # a label for the scheduler, below one CPU so the read tasks still get one
            num_cpus=0.5,
        ).materialize()
        stats = ray.get(tally.result.remote())
    except Exception as error:  # a bad cell or option inside a worker: one clear message
        cause = _user_error(error)
        if cause is not None:
            raise UserInputError(str(cause)) from None
        raise
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
        ray.kill(tally)
    seconds = time.perf_counter() - started
    summary = BatchSummary([_summary(name, stats.get(name, {}), seconds) for name in names],
                           skipped)
    # processes that scored batches (each loaded the metrics and embedding model once)
    summary.ray = {"workers": len(set().union(*(s["workers"] for s in stats.values()))),
                   "batches": max((s["batches"] for s in stats.values()), default=0)}
    if hf_input:
        import datasets
        import pyarrow as pa

        tables = [t for t in ray.get(scored.to_arrow_refs()) if t.num_rows]
        return datasets.Dataset(pa.concat_tables(tables)), summary
    return scored, summary



def worker_options(names: list[str], config: JudgeConfig, workers: int,
                    call_options: Mapping[str, dict[str, Any]]
                    ) -> tuple[int, dict[str, dict[str, Any]]]:
    """The number of workers and each metric's ``compute`` options on a worker: a judge job's
    concurrency split over the workers, and the driver's cache folder."""
    options = {name: dict(call_options[name]) for name in names}
    if any(METRICS[name].judge for name in names):
        workers, per_worker = concurrency_split(config.max_concurrency, workers)
        for name in names:
            if METRICS[name].judge:
                options[name]["max_concurrency"] = per_worker
                for cap in ("max_requests_per_minute", "max_tokens_per_minute"):
                    if getattr(config, cap):  # each worker's share of the user's cap
                        options[name][cap] = getattr(config, cap) / workers
                if config.use_cache and not config.cache_dir:
                    from ..engine.cache import default_cache_dir

                    # the driver's folder, so every worker on this node opens one file
                    options[name]["cache_dir"] = str(default_cache_dir())
    return workers, options


def _blocks(dataset: Any, hf_input: bool, batch_size: int, workers: int) -> Any:
    """The rows as a ``ray.data.Dataset`` whose blocks are whole batches."""
    import ray.data

    if hf_input:
        if len(dataset) == 0:
            raise UserInputError("the input has no rows")
        table = dataset.with_format("arrow")[:]
        # blocks of whole batches, at least one per worker when there are enough batches
        step = batch_size * max(1, -(-table.num_rows // (batch_size * workers)))
        return ray.data.from_arrow([table.slice(start, step)
                                    for start in range(0, table.num_rows, step)])
    # blocks of one batch (streamed), so every worker gets some of a one-file input
    return dataset.repartition(target_num_rows_per_block=batch_size)


_WORKER_ERROR = re.compile(
    r"^(?:\S*\.)?(UserInputError|ValueError|TypeError|InputError|InputTypeError|LengthError)"
    r": (.+)$",
    re.MULTILINE)


def _user_error(error: BaseException) -> BaseException | None:
    """The ``ValueError``/``TypeError`` raised in a worker, from Ray's wrappers, if any (Ray
    passes the worker's traceback as text: the exception object's chain does not cross)."""
    seen = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, (ValueError, TypeError)):
            return current
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else (
            current.__cause__ or current.__context__)
    found = _WORKER_ERROR.findall(str(error))
    ours = [message for kind, message in found if kind == "UserInputError"]
    if ours or found:
        return ValueError((ours or [found[0][1]])[0])
    return None


class _Tally:
    """Per-metric sums of the batches' counts (a Ray actor; ``add`` is called per batch)."""

    def __init__(self) -> None:
        self.totals: dict[str, dict[str, Any]] = {}

    def add(self, name: str, counts: dict[str, Any]) -> None:
        total = self.totals.setdefault(name, {"rows": 0, "unmeasured": 0, "calls": 0,
                                              "cache_hits": 0, "prompt_tokens": 0,
                                              "completion_tokens": 0, "cost": 0.0,
                                              "invalid_answers": {}, "weighted": {},
                                              "batches": 0, "workers": set()})
        total["batches"] += 1
        total["workers"].add(counts["worker"])
        for key in ("rows", "unmeasured", "calls", "cache_hits", "prompt_tokens",
                    "completion_tokens"):
            total[key] += counts[key]
        total["cost"] = add_cost(total["cost"], counts["cost"])
        for kind, count in counts["invalid_answers"].items():
            total["invalid_answers"][kind] = total["invalid_answers"].get(kind, 0) + count
        for key, (weighted_sum, weight) in counts["weighted"].items():
            previous = total["weighted"].get(key, (0.0, 0.0))
            total["weighted"][key] = (previous[0] + weighted_sum, previous[1] + weight)
        add_panel_counts(total, counts)

    def result(self) -> dict[str, dict[str, Any]]:
        return self.totals


def _summary(name: str, total: dict[str, Any], seconds: float) -> MetricSummary:
    spec = METRICS[name]
    weighted = total.get("weighted", {})
    summary = MetricSummary(
        name, {k: (s / w if w else None) for k, (s, w) in
               ((key, weighted.get(key, (0.0, 0.0))) for key in spec.headline)},
        total.get("rows", 0), total.get("unmeasured", 0), spec.judge,
        seconds=seconds, columns=[*score_column_names(name, spec).values(), f"{name}_details"])
    if spec.judge:
        for key in ("calls", "cache_hits", "prompt_tokens", "completion_tokens"):
            setattr(summary, key, total.get(key, 0))
        summary.cost = total.get("cost", 0.0)
        summary.invalid_answers = dict(total.get("invalid_answers", {}))
        finish_panel_counts(name, total, summary)
    return summary


class _MetricWorker:
    """One Ray Data worker: the metrics loaded once, each batch scored metric by metric."""

    def __init__(self, names: list[str], sizes: dict[str, int],
                 arguments: dict[str, dict[str, str]], options: dict[str, dict[str, Any]],
                 tally: Any) -> None:
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        self.names, self.sizes, self.arguments = names, sizes, arguments
        self.options, self.tally = options, tally
        self.metrics = {name: load_metric(name) for name in names}
        for name in names:  # the embedding model too, once per worker, before the first batch
            if METRICS[name].embeds:
                from ..kit.embeddings import load_embedding_model

                load_embedding_model(options[name].get("embedding_model"))

    def __call__(self, table: Any) -> Any:
        import datasets
        import pyarrow as pa
        import ray

        for name in self.names:
            try:  # every cell checked first, as in one process; rows counted in this batch
                validate_all(name, self.metrics[name], datasets.Dataset(table), self.sizes[name])
            except UserInputError as error:
                raise UserInputError(f"{error} (the row within a Ray batch of "
                                     f"{table.num_rows} rows)") from None
            data = {column: column_values(table.column(column))
                    for column in set(self.arguments[name].values())}
            spec = METRICS[name]
            summary = MetricSummary(name, {}, table.num_rows, 0, spec.judge)
            columns, weighted = score_rows(
                name, self.metrics[name],
                lambda start, stop, data=data: {c: v[start:stop] for c, v in data.items()},
                table.num_rows, self.sizes[name], self.arguments[name], self.options[name],
                summary)
            for column, values in columns.items():
                kind = pa.string() if column == f"{name}_details" else pa.float64()
                array = pa.array(values, type=kind)
                if column in table.column_names:
                    table = table.set_column(table.column_names.index(column), column, array)
                else:
                    table = table.append_column(column, array)
            ray.get(self.tally.add.remote(name, {
                "rows": summary.rows, "unmeasured": summary.unmeasured, "calls": summary.calls,
                "cache_hits": summary.cache_hits, "prompt_tokens": summary.prompt_tokens,
                "completion_tokens": summary.completion_tokens, "cost": summary.cost,
                "invalid_answers": summary.invalid_answers, "worker": os.getpid(),
                "weighted": {k: tuple(v) for k, v in weighted.items()},
                **panel_counts(name, summary, columns)}))
        return table


# ------------------------------------------------------------------ the CLI's --engine ray

RAY_SUFFIXES = (".parquet", ".jsonl")


def check_input_format(source: Path) -> None:
    """``--engine ray`` reads Parquet or JSON lines (``ray.data``'s readers): INPUT a file or a
    folder of them."""
    if not source.is_dir() and source.suffix.lower() not in RAY_SUFFIXES:
        raise UserInputError(f"INPUT {source}: --engine ray reads .parquet or .jsonl (a file "
                             "or a folder of them); convert CSV first")


def check_output_folder(out: Path) -> None:
    """``--engine ray`` writes a folder of Parquet or JSON-lines files (one per block), named
    .parquet or .jsonl; a killed run's temporary folder beside it is removed."""
    if out.suffix.lower() not in RAY_SUFFIXES:
        raise UserInputError(f"--out {out}: --engine ray writes a folder named .parquet or "
                             ".jsonl")
    check_folder_writable(out, "--out")
    remove_stale_temporaries(out)


def connect(address: str | None, quiet: bool = False) -> None:
    """Join the Ray cluster at ``address`` (``ray://...`` or ``HOST:PORT``); without one, the
    cluster named by ``RAY_ADDRESS``, else a new local one on this machine's CPUs."""
    import logging

    import ray

    if quiet:
        logging.getLogger("ray.data").setLevel(logging.WARNING)
    if not ray.is_initialized():
        ray.init(address=address, log_to_driver=False,
                 logging_level=logging.WARNING if quiet else logging.INFO)


def read_input(source: Path) -> Any:
    """``ray.data.read_parquet`` / ``read_json`` of a file or a folder (a folder: JSON lines
    when it holds ``.jsonl`` files, else Parquet)."""
    import ray.data

    jsonl = source.suffix.lower() == ".jsonl" or (
        source.is_dir() and any(source.glob("*.jsonl")) and not any(source.glob("*.parquet")))
    try:
        if jsonl:
            return ray.data.read_json(str(source), file_extensions=["jsonl", "json"])
        return ray.data.read_parquet(str(source))
    except Exception as error:  # noqa: BLE001 - Ray wraps the reader's own errors
        raise UserInputError(f"INPUT {source}: cannot read it with Ray ({error})") from None


def write_output(dataset: Any, out: Path) -> int:
    """Write the scored rows to the folder ``out``, one file per block, atomically: a
    temporary folder beside it, then a rename. Returns the rows written. Parquet by Ray's
    ``write_parquet``; JSON lines by the one-process writer (``files.write_jsonl_rows``), whose
    floats read back equal (Ray's ``write_json`` keeps 10 significant digits)."""
    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    try:
        if out.suffix.lower() == ".parquet":
            dataset.write_parquet(str(temporary))
        else:
            _write_jsonl_blocks(dataset, temporary)
        if out.is_dir():
            shutil.rmtree(out)
        elif out.exists():
            out.unlink()
        os.replace(temporary, out)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    return dataset.count()


def _write_jsonl_blocks(dataset: Any, folder: Path) -> None:
    import ray

    folder.mkdir()
    for number, block in enumerate(dataset.to_arrow_refs()):
        table = ray.get(block)
        if not table.num_rows:
            continue
        with (folder / f"part-{number:05d}.jsonl").open("w", encoding="utf-8") as handle:
            write_jsonl_rows(handle, table.to_pylist())
            handle.flush()
            os.fsync(handle.fileno())
