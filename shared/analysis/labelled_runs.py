"""Scoring a labelled dataset with one metric, the path ``agree`` and ``calibrate`` share: the
checks that need no scoring, the column mapping, ``shared.runs.batch.score_dataset`` (call
cache, progress, resume), the judge's description; and the prediction-powered mean label of
a run whose label column is filled on some rows only."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..kit import stats
from .embedded_judge import judge_model_name
from .labels import MissingLabelError, parse_labels
from .panel_agreement import panel_name
from .ppi import label_scale, ppi_mean


@dataclass
class LabelledRun:
    """A dataset scored with one metric: the rows, the score column compared with the labels,
    its key, the judge (``{"provider", "model"}``, ``None`` for a metric with no judge) and the
    judge requests sent and served from the cache."""

    scored: Any
    column: str
    key: str
    judge: dict[str, str | None] | None
    judge_calls: int | None = None
    cache_hits: int | None = None
    summary: Any = None  # the metric's summary of the run (per-judge usage of a panel)


def score_labelled(
    dataset: Any,
    metric: str,
    label: str,
    *,
    columns: Mapping[str, str] | None = None,
    score_key: str | None = None,
    group: str | None = None,
    limit: int | None = None,
    seed: int | None = stats.DEFAULT_SEED,
    metric_options: Mapping[str, Any] | None = None,
    chunk_size: int | None = None,
    show_progress: bool = True,
    allow_constant: bool = False,
    **options: Any,
) -> LabelledRun:
    """Check, map the ``columns`` and score ``dataset`` with ``metric`` (``agree``'s
    arguments). ``allow_constant``: labels that are all the same are accepted (an estimate of
    their mean is still defined; agreement statistics are not)."""
    from ..kit.registry import METRICS
    from ..runs.batch import score_dataset
    from ..runs.chunks import score_column_names

    key, dataset = checked_input(dataset, metric, label, group, score_key, limit, seed,
                                 allow_constant)
    spec = METRICS[metric]
    dataset = map_columns(dataset, columns or {})
    scored, summary = score_dataset(
        dataset, [metric], chunk_size=chunk_size, show_progress=show_progress,
        metric_options={metric: dict(metric_options)} if metric_options else None, **options,
    )
    run = LabelledRun(scored, score_column_names(metric, spec)[key], key, None)
    if spec.judge:
        run.judge = judge_of(metric, options)
        if summary.metrics:
            run.summary = summary.metrics[0]
            run.judge_calls = summary.metrics[0].calls
            run.cache_hits = summary.metrics[0].cache_hits
    return run


def judge_of(metric: str, options: Mapping[str, Any]) -> dict[str, str | None] | None:
    """The judge that scores ``metric`` under these options, as a profile records it:
    ``{"provider", "model"}`` (a panel: provider ``panel``, its judges as the model);
    ``None`` for a metric with no judge."""
    from ..engine.config import judge_options_of
    from ..kit.registry import METRICS
    from ..runs.options import check_run_options

    if not METRICS[metric].judge:
        return None
    config = check_run_options(judge_options_of(options)).judge
    return ({"provider": "panel", "model": panel_name(config)} if config.judges
            else {"provider": config.provider, "model": judge_model_name(config)})


def checked_input(dataset: Any, metric: str, label: str, group: str | None,
                  score_key: str | None, limit: int | None, seed: int | None,
                  allow_constant: bool = False) -> tuple[str, Any]:
    """The score key and the rows to score (a seeded subsample with ``limit``), after every
    check that needs no scoring: the metric, the columns, the key and the labels."""
    from ..kit.registry import METRICS

    if metric not in METRICS:
        raise UserInputError(f"unknown metric {metric!r}; choose from: {', '.join(METRICS)}")
    spec = METRICS[metric]
    if label not in dataset.column_names:
        raise MissingLabelError(
            f"label column {label!r} is not in the input (its columns: "
            f"{', '.join(dataset.column_names)})"
        )
    if group is not None and group not in dataset.column_names:
        raise UserInputError(f"--group column {group!r} is not in the input")
    keys = spec.headline
    key = score_key or keys[0]
    if key not in keys:
        raise UserInputError(
            f"metric {metric!r} has no score key {key!r}; choose from: {', '.join(keys)}")
    # check the labels before any (slow) scoring
    parse_labels(dataset[label], label, allow_constant=allow_constant)
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise UserInputError(f"--limit must be a positive integer, got {limit!r}")
        if limit < len(dataset):
            rng = np.random.default_rng(seed)
            rows = np.sort(rng.choice(len(dataset), size=limit, replace=False))
            dataset = dataset.select(rows.tolist())
            parse_labels(dataset[label], label, allow_constant=allow_constant)
    return key, dataset


def map_columns(dataset: Any, columns: Mapping[str, str]) -> Any:
    """Copy dataset column ``source`` to ``target`` for each ``target=source`` pair (an
    existing ``target`` column is replaced); strings copied to ``contexts`` become one-item
    lists."""

    for target, source in columns.items():
        if source not in dataset.column_names:
            raise UserInputError(
                f"--column {target}={source}: the input has no column {source!r} (its columns: "
                f"{', '.join(dataset.column_names)})"
            )
    values = {target: dataset[source] for target, source in columns.items()}
    for target, cells in values.items():
        if target == "contexts":
            cells = [[c] if isinstance(c, str) else c for c in cells]
        if target in dataset.column_names:
            dataset = dataset.remove_columns(target)
        dataset = dataset.add_column(target, cells)
    return dataset


@dataclass
class Split:
    """A run's rows split for the estimate: the measured rows with a label (``scores``,
    ``labels`` on the scores' scale) and without (``unlabelled``), in row order."""

    scores: np.ndarray
    labels: np.ndarray
    unlabelled: np.ndarray
    unmeasured: int
    label_kind: str
    label_range: tuple[float, float] | None
    labelled_rows: np.ndarray  # row numbers of the labelled, measured rows


def split_rows(scores: Sequence[Any], labels: Sequence[Any], label: str = "label",
               label_range: tuple[float, float] | None = None) -> Split:
    """Per-row ``scores`` (``None``/NaN: unmeasured, left out and counted) and ``labels``
    (blank, ``None`` or NaN: unlabelled) as the estimate's three arrays."""
    if len(scores) != len(labels):
        raise UserInputError(f"{len(scores)} scores but {len(labels)} labels")
    parsed, kind = parse_labels(list(labels), label, allow_constant=True)
    parsed, used_range = label_scale(parsed, label_range)
    values = np.array([_score(s) for s in scores], dtype=np.float64)
    measured = np.isfinite(values)
    labelled = np.isfinite(parsed)
    return Split(values[measured & labelled], parsed[measured & labelled],
                 values[measured & ~labelled], int((~measured).sum()), kind, used_range,
                 np.flatnonzero(measured & labelled))


def corrected_mean(scores: Sequence[Any], labels: Sequence[Any], label: str = "label",
                   alpha: float = 0.05) -> dict[str, Any] | None:
    """The prediction-powered mean label of a run labelled on some rows (``agree``'s corrected
    estimate): ``value``, ``low``, ``high``, ``classical`` (the labels alone: ``value``,
    ``low``, ``high``), ``judge_only`` (the plain mean score),
    ``n_labelled``, ``n_unlabelled``, ``label_range``, ``confidence``; ``None`` when every
    measured row is labelled or fewer than 2 are."""
    split = split_rows(scores, labels, label)
    if split.unlabelled.size == 0 or split.labels.size < 2:
        return None
    found = ppi_mean(split.scores, split.labels, split.unlabelled, alpha)
    everything = np.concatenate([split.scores, split.unlabelled])
    classical = found["classical"]
    return {"value": found["value"], "low": found["low"], "high": found["high"],
            "classical": {k: classical[k] for k in ("value", "low", "high")},
            "judge_only": float(everything.mean()), "n_labelled": int(split.labels.size),
            "n_unlabelled": int(split.unlabelled.size),
            "label_range": None if split.label_range is None else list(split.label_range),
            "confidence": 1 - alpha}


def corrected_line(corrected: Mapping[str, Any]) -> str:
    """One line for the CLI: the corrected estimate beside the metric's plain mean."""
    scale = corrected.get("label_range")
    on = "" if not scale else f" (labels {scale[0]:g}..{scale[1]:g} mapped onto 0..1)"
    return (f"corrected mean label over every measured row{on}: {corrected['value']:.3f} "
            f"[{corrected['low']:.3f}, {corrected['high']:.3f}] "
            f"({corrected['confidence']:.0%}, prediction-powered from "
            f"{corrected['n_labelled']} labelled and {corrected['n_unlabelled']} unlabelled "
            f"rows); the metric's plain mean: {corrected['judge_only']:.3f}")


def _score(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    try:
        number = float(value)
    except (TypeError, ValueError):
        return math.nan
    return number if math.isfinite(number) else math.nan
