"""What ``judge-metrics calibrate`` reports: a metric's scores on every row and human labels
on some, turned into the corrected mean label (prediction-powered, ``shared.analysis.ppi``),
the labels-alone and the metric-alone figures beside it, and a calibration map from score to
P(label) (``shared.analysis.calibration_maps``).

The report's ``estimate`` is exactly ``prediction_powered_mean(labelled scores, labels,
unlabelled scores, alpha)`` on the run's split (the measured rows with a label, in row order;
the measured rows without), so a user can recompute it from the scored rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..kit import stats
from .calibration_maps import cross_fitted_scores, fit_calibration
from .labelled_runs import Split, score_labelled, split_rows
from .labels import BOOLEAN
from .ppi import ppi_mean

__all__ = ["calibrate", "calibration_report", "report_from_split", "report_table",
           "suggest_rows"]


def calibration_report(scores: Sequence[Any], labels: Sequence[Any], *, alpha: float = 0.05,
                       seed: int | None = stats.DEFAULT_SEED, label: str = "label",
                       label_range: tuple[float, float] | None = None,
                       score_range: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any]:
    """The report of per-row ``scores`` (``None``: unmeasured) against ``labels`` (blank or
    ``None`` on the unlabelled rows): ``estimate``, ``classical`` (``value``, ``low``,
    ``high``), ``judge_only`` (``value``), ``calibration``, ``n_labelled``,
    ``n_unlabelled``, ``unmeasured``, ``effective_sample_size``, ``sample_size_gain``,
    ``lam``, ``alpha``, ``label_kind``, ``label_range``, ``calibrated_estimate`` (the
    estimate from the map's scores, cross-fitted: ``value``, ``low``, ``high``, ``method``,
    ``folds``, ``cross_fitted``; ``None`` without a map). ``score_range``: the metric's; when
    the labels are mapped onto 0..1 and the scores are on another range, ``judge_only`` is
    put on 0..1 the same way (its ``on_score_scale`` keeps the plain mean)."""
    return report_from_split(split_rows(scores, labels, label, label_range), alpha=alpha,
                             seed=seed, score_range=score_range)


def report_from_split(split: Split, *, alpha: float = 0.05,
                      seed: int | None = stats.DEFAULT_SEED,
                      score_range: tuple[float, float] = (0.0, 1.0)) -> dict[str, Any]:
    found = ppi_mean(split.scores, split.labels, split.unlabelled, alpha)
    every = np.concatenate([split.scores, split.unlabelled])
    judge_only: dict[str, Any] = {"value": float(every.mean())}
    low, high = (float(x) for x in score_range)
    if split.label_range is not None and (low, high) != (0.0, 1.0):  # one scale with the rest
        judge_only = {"value": (judge_only["value"] - low) / (high - low),
                      "on_score_scale": judge_only["value"], "score_range": [low, high]}
    classical = found["classical"]
    calibration = fit_calibration(split.scores, split.labels,
                                  binary=split.label_kind == BOOLEAN, seed=seed)
    return {
        "calibrated_estimate": _calibrated_estimate(split, calibration, alpha, seed),
        "estimate": {"value": found["value"], "low": found["low"], "high": found["high"]},
        "classical": {k: classical[k] for k in ("value", "low", "high")},
        "judge_only": judge_only,
        "calibration": calibration,
        "n_labelled": found["n"], "n_unlabelled": found["N"], "unmeasured": split.unmeasured,
        "effective_sample_size": found["effective_sample_size"],
        "sample_size_gain": found["sample_size_gain"],
        "width_ratio": _ratio(found["high"] - found["low"], classical["high"] - classical["low"]),
        "lam": found["lam"], "alpha": alpha, "confidence": 1 - alpha, "seed": seed,
        "label_kind": split.label_kind,
        "label_range": None if split.label_range is None else list(split.label_range),
    }


def calibrate(dataset: Any, metric: str, label: str, *, alpha: float = 0.05,
              seed: int | None = stats.DEFAULT_SEED,
              label_range: tuple[float, float] | None = None,
              **options: Any) -> tuple[Any, dict[str, Any]]:
    """Score ``dataset`` with ``metric`` (as ``agree`` does: ``columns``, ``score_key``,
    ``metric_options``, ``chunk_size``, ``show_progress`` and the judge options) and report
    (:func:`calibration_report`, with ``metric``, ``score_key``, ``column``, ``label`` and
    ``judge``). Returns the scored rows and the report."""
    run = score_labelled(dataset, metric, label, allow_constant=True, seed=seed, **options)
    from ..kit.registry import METRICS

    report = calibration_report(run.scored[run.column], run.scored[label], alpha=alpha,
                                seed=seed, label=label, label_range=label_range,
                                score_range=METRICS[metric].score_range)
    return run.scored, {"metric": metric, "score_key": run.key, "column": run.column,
                        "label": label, "judge": run.judge, "judge_calls": run.judge_calls,
                        "cache_hits": run.cache_hits, **report}


def suggest_rows(dataset: Any, n: int, *, seed: int | None = stats.DEFAULT_SEED,
                 label: str | None = None) -> list[Any]:
    """``n`` row ids to label, drawn uniformly at random (seeded) from the rows without a
    label (every row when ``label`` is not a column yet): the ``id`` column's values, else
    the rows' 0-based numbers. Uniform is what the estimate's guarantee needs: rows picked
    because the metric looks unsure are not a sample of the whole."""
    from .labels import MissingLabelError, parse_labels

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise UserInputError(f"--suggest must be a positive integer, got {n!r}")
    rows = np.arange(len(dataset))
    if label is not None and label in dataset.column_names:
        try:
            parsed, _ = parse_labels(dataset[label], label, allow_constant=True)
        except MissingLabelError:  # a column with no label at all yet
            parsed = np.full(len(dataset), np.nan)
        rows = rows[np.isnan(parsed)]
    if n > rows.size:
        raise UserInputError(f"--suggest {n}: only {rows.size} rows have no label")
    picked = np.sort(np.random.default_rng(seed).choice(rows, size=n, replace=False))
    if "id" in dataset.column_names:
        ids = dataset["id"]
        return [ids[int(i)] for i in picked]
    return [int(i) for i in picked]


def _judge_only_words(judge_only: Mapping[str, Any]) -> str:
    scale = judge_only.get("score_range")
    if not scale:
        return "judge only (plain mean score)"
    return (f"judge only (plain mean score {judge_only['on_score_scale']:.4f}, "
            f"{scale[0]:g}..{scale[1]:g} mapped onto 0..1)")


def report_table(report: Mapping[str, Any]) -> str:
    """The report as the CLI prints it."""
    from ..runs.summary import format_table

    level = f"{report['confidence']:.0%}"
    rows = [["estimate (prediction-powered)", *_three(report["estimate"])],
            *([[f"from the calibrated scores ({report['calibrated_estimate']['method']} map, "
                f"cross-fitted over {report['calibrated_estimate']['folds']} folds)",
                *_three(report["calibrated_estimate"])]]
              if report.get("calibrated_estimate") else []),
            ["classical (labels alone)", *_three(report["classical"])],
            [_judge_only_words(report["judge_only"]), f"{report['judge_only']['value']:.4f}",
             "-"]]
    scale = report.get("label_range")
    lines = [
        f"metric {report.get('metric') or '-'} (score key {report.get('score_key') or '-'}) "
        f"vs label {report.get('label') or '-'} ({report['label_kind']}"
        + (f", {scale[0]:g}..{scale[1]:g} mapped onto 0..1" if scale else "") + ")",
        f"rows: {report['n_labelled']} labelled, {report['n_unlabelled']} unlabelled, "
        f"{report['unmeasured']} unmeasured (left out)",
        format_table(["mean label", "value", f"{level} interval"], rows),
    ]
    gain = report.get("sample_size_gain")
    if gain is not None:
        lines.append(f"effective sample size: {report['effective_sample_size']:.1f} labels "
                     f"({gain:.2f}x the {report['n_labelled']} labelled; interval width "
                     f"{report['width_ratio']:.2f}x the labels alone's; power tuning "
                     f"lambda {report['lam']:.3f})")
    c = report["calibration"]
    if c["method"] is None:
        lines.append(f"calibration: no map ({c['note']})")
    else:
        lines.append(
            f"calibration: {c['method']} (chosen by {c['folds']}-fold cross-validation); ECE "
            f"{c['ece']['before']:.4f} -> {c['ece']['after']:.4f}, Brier "
            f"{c['brier']['before']:.4f} -> {c['brier']['after']:.4f} (after: held-out folds)")
    return "\n".join(lines)


def _calibrated_estimate(split: Split, calibration: Mapping[str, Any], alpha: float,
                         seed: int | None) -> dict[str, Any] | None:
    """The prediction-powered estimate from the calibrated scores, cross-fitted: no labelled
    row is corrected with a map fitted on it (``None`` without a map)."""
    if calibration["method"] is None:
        return None
    crossed = cross_fitted_scores(calibration["method"], split.scores, split.labels,
                                  split.unlabelled, binary=split.label_kind == BOOLEAN,
                                  folds=calibration["folds"], seed=seed)
    if crossed is None:
        return None
    found = ppi_mean(crossed["labelled"], split.labels, crossed["unlabelled"], alpha)
    return {"value": found["value"], "low": found["low"], "high": found["high"],
            "method": calibration["method"], "folds": calibration["folds"],
            "cross_fitted": True}


def _three(estimate: Mapping[str, float]) -> list[str]:
    return [f"{estimate['value']:.4f}", f"[{estimate['low']:.4f}, {estimate['high']:.4f}]"]


def _ratio(a: float, b: float) -> float | None:
    return a / b if b > 0 else None
