"""Score a ``datasets.Dataset`` with several metrics, chunk by chunk: the metrics chosen and the
options checked here, the rows scored by the run's engine (:mod:`.engines`: this process or Ray).

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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..base.defaults import require_local
from ..base.errors import UserInputError
from ..engine.config import JudgeConfig
from ..kit.registry import METRICS, MetricSpec, available
from .engines import Engine, choose_engine
from .options import check_run_options
from .summary import BatchSummary


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
    engine: str | Engine | None = None,
    workers: int | None = None,
    judge: JudgeConfig | None = None,
    **options: Any,
) -> tuple[Any, BatchSummary]:
    """Score every row of ``dataset`` with ``metrics``; return the dataset with the added
    columns and a :class:`BatchSummary`.

    ``dataset``: a ``datasets.Dataset`` with the singular columns (question, prediction,
    reference, contexts, source, expected). ``metrics``: a name, a list of names, or ``"all"``.
    ``judge``: the judge, a :class:`~shared.engine.config.JudgeConfig` already built (the CLI's);
    or judge options among ``options`` (provider, model, api_key, base_url, max_concurrency,
    use_cache, cache_dir, timeout, max_retries, response_format, device, batch_size, dry_run
    ...), converted once by ``judge_config``; ``embedding_model`` among ``options`` goes to the
    embedding metrics. Both are checked by :func:`.options.check_run_options`.
    ``chunk_size``: rows per ``compute`` call (default 1,000; for judge metrics 32, which is
    also the local judge's decoding batch).
    ``metric_options``: extra ``compute`` keyword arguments per metric, e.g.
    ``{"accuracy": {"fuzzy_match": True}}``. ``show_progress``: one bar per metric over rows.
    With ``dry_run=True`` only the judge metrics run, nothing is sent, the dataset is returned
    unchanged and the summary holds each metric's plan.
    ``engine``: ``"local"`` (this process) or ``"ray"`` (Ray Data workers, ``workers`` of them,
    default: the cluster's CPUs; docs/SCALING.md), or an engine already chosen
    (``shared.runs.engines``); a ``ray.data.Dataset`` always runs on Ray and comes back as a
    materialized ``ray.data.Dataset``.
    """
    chosen = choose_engine(engine, dataset, workers)
    _check_arguments(dataset, chunk_size)
    checked = check_run_options(options, judge=judge)
    config = checked.judge
    metric_options = dict(metric_options or {})

    names, skipped = select_metrics(metrics, chosen.columns(dataset), metric_options)
    for name in metric_options:
        if name not in names:
            raise UserInputError(f"metric_options names {name!r}, which is not being run")
    check_installed(names, config)
    if config.dry_run:
        for name in [n for n in names if not METRICS[n].judge]:
            skipped[name] = "calls no judge (dry run)"
        names = [n for n in names if METRICS[n].judge]
    return chosen.score(dataset, names, skipped, config, chunk_size, show_progress,
                        {n: checked.call_options(METRICS[n], metric_options.get(n, {}))
                         for n in names})


def check_installed(names: Iterable[str], config: Any) -> None:
    """Refuse, before any work and in one line naming the ``local`` extra, metrics this install
    cannot run: a judge metric with a local judge, an embedding metric, without the extra."""
    names = list(names)
    if any(METRICS[n].judge for n in names):
        from ..kit.judge_metric import require_runnable  # imports evaluate: not at module load

        require_runnable(config)
    if any(METRICS[n].embeds for n in names) and not config.dry_run:
        require_local("the embedding model")


def _check_arguments(dataset: Any, chunk_size: int | None) -> None:
    """``score_dataset``'s dataset and chunk size checked before any work."""
    import datasets

    ray_input = type(dataset).__module__.startswith("ray.data")
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
