"""A calibration map from a metric's score to P(label), fitted on the labelled rows.

Two candidate maps (scikit-learn): isotonic regression (monotone, free shape) and Platt's
sigmoid (a logistic regression on the score); for numeric labels on the 0-1 scale, isotonic
and a clipped straight line. The one kept is the one with the lower Brier score on held-out
folds (seeded K-fold cross-validation, stratified for 0/1 labels); the ECE (expected
calibration error, 10 equal-width bins) and the Brier score are reported before (the raw score
read as a probability) and after (the chosen map's out-of-fold predictions: rows the map was
not fitted on). The map saved (:func:`save_map`) is then fitted on every labelled row, and
:func:`apply_map` reads it back onto new scores (``score --calibration FILE``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import UserInputError

BINS = 10
FOLDS = 5
MAP_FORMAT = "judge-metrics calibration map 1"
__all__ = ["BINS", "FOLDS", "MAP_FORMAT", "apply_map", "brier", "calibrated_column", "check_map",
           "expected_calibration_error", "fit_calibration", "load_map", "reliability",
           "save_map"]


def expected_calibration_error(predicted: np.ndarray, labels: np.ndarray,
                               bins: int = BINS) -> float:
    """Sum over equal-width bins of [0, 1] of the bin's share of rows times
    |mean predicted - mean label| (a prediction of exactly 1 falls in the last bin)."""
    p = np.clip(np.asarray(predicted, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(labels, dtype=np.float64)
    which = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        inside = which == b
        if inside.any():
            total += inside.mean() * abs(p[inside].mean() - y[inside].mean())
    return float(total)


def brier(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Mean squared difference between the prediction (clipped to [0, 1]) and the label."""
    p = np.clip(np.asarray(predicted, dtype=np.float64), 0.0, 1.0)
    return float(np.mean((p - np.asarray(labels, dtype=np.float64)) ** 2))


def reliability(predicted: np.ndarray, labels: np.ndarray, bins: int = BINS
                ) -> list[dict[str, float]]:
    """The reliability diagram's points: per non-empty bin, the mean prediction, the mean
    label and the rows."""
    p = np.clip(np.asarray(predicted, dtype=np.float64), 0.0, 1.0)
    y = np.asarray(labels, dtype=np.float64)
    which = np.minimum((p * bins).astype(int), bins - 1)
    return [{"predicted": float(p[which == b].mean()), "observed": float(y[which == b].mean()),
             "rows": int((which == b).sum())} for b in range(bins) if (which == b).any()]


def fit_calibration(scores: Sequence[float], labels: Sequence[float], *, binary: bool,
                    seed: int | None = 0, folds: int = FOLDS) -> dict[str, Any]:
    """Choose and fit the map on the labelled rows (labels on the 0-1 scale).

    Returns ``method`` (``"isotonic"``, ``"sigmoid"`` or ``"linear"``; ``None`` with a
    ``note`` when the rows cannot be split into folds: fewer than 2 rows of each label, or
    labels that do not vary), ``ece`` and ``brier`` (``{"before", "after"}``), ``folds``,
    ``cv_brier`` (each candidate's held-out Brier score), ``reliability`` (``{"before",
    "after"}``: :func:`reliability`) and ``map`` (what :func:`save_map` writes)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    before = {"ece": expected_calibration_error(s, y), "brier": brier(s, y)}
    found: dict[str, Any] = {
        "method": None, "ece": {"before": before["ece"], "after": None},
        "brier": {"before": before["brier"], "after": None}, "folds": None, "cv_brier": {},
        "reliability": {"before": reliability(s, y), "after": None}, "map": None, "note": ""}
    k = _folds(y, binary, folds)
    if k < 2:
        found["note"] = ("too few labelled rows of each label to cross-validate a map (at least "
                         "2 of each)" if binary else "the labels do not vary: no map to fit")
        return found
    candidates = ("isotonic", "sigmoid") if binary else ("isotonic", "linear")
    held_out = {name: _out_of_fold(name, s, y, k, binary, seed) for name in candidates}
    found["cv_brier"] = {name: brier(p, y) for name, p in held_out.items()}
    # ties go to the parametric map (fewer parameters)
    method = min(reversed(candidates), key=lambda name: found["cv_brier"][name])
    after = held_out[method]
    found.update(method=method, folds=k, map=_fitted_map(method, s, y))
    found["ece"]["after"] = expected_calibration_error(after, y)
    found["brier"]["after"] = brier(after, y)
    found["reliability"]["after"] = reliability(after, y)
    return found


def _folds(y: np.ndarray, binary: bool, folds: int) -> int:
    if np.unique(y).size < 2:
        return 0
    if binary:
        return int(min(folds, (y == 1).sum(), (y == 0).sum()))
    return int(min(folds, y.size // 2))


def _out_of_fold(method: str, s: np.ndarray, y: np.ndarray, k: int, binary: bool,
                 seed: int | None) -> np.ndarray:
    from sklearn.model_selection import KFold, StratifiedKFold

    splitter = (StratifiedKFold if binary else KFold)(n_splits=k, shuffle=True,
                                                       random_state=seed)
    predicted = np.empty_like(y)
    for train, test in splitter.split(s.reshape(-1, 1), y):
        predicted[test] = apply_map(_fitted_map(method, s[train], y[train]), s[test])
    return predicted


def _fitted_map(method: str, s: np.ndarray, y: np.ndarray) -> dict[str, Any]:
    """The map fitted on these rows, as plain numbers."""
    if method == "isotonic":
        from sklearn.isotonic import IsotonicRegression

        model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(s, y)
        return {"method": method, "x": model.X_thresholds_.tolist(),
                "y": model.y_thresholds_.tolist()}
    if method == "sigmoid":
        if np.unique(y).size < 2:  # a training fold with one label: a constant map
            rate = float(y.mean())
            return {"method": "linear", "slope": 0.0, "intercept": rate}
        from sklearn.linear_model import LogisticRegression

        model = LogisticRegression(C=1e6).fit(s.reshape(-1, 1), y.astype(int))
        return {"method": method, "slope": float(model.coef_[0][0]),
                "intercept": float(model.intercept_[0])}
    slope, intercept = (np.polyfit(s, y, 1) if np.ptp(s) > 0 else (0.0, float(y.mean())))
    return {"method": "linear", "slope": float(slope), "intercept": float(intercept)}


def apply_map(calibration_map: Mapping[str, Any], scores: Any) -> np.ndarray:
    """P(label) for each score (NaN stays NaN)."""
    s = np.asarray(scores, dtype=np.float64)
    method = calibration_map["method"]
    if method == "isotonic":
        x, y = np.asarray(calibration_map["x"]), np.asarray(calibration_map["y"])
        out = np.interp(s, x, y) if x.size > 1 else np.full_like(s, float(y[0]))
    elif method == "sigmoid":
        z = calibration_map["slope"] * s + calibration_map["intercept"]
        out = 1.0 / (1.0 + np.exp(-np.clip(z, -500, 500)))
    elif method == "linear":
        out = np.clip(calibration_map["slope"] * s + calibration_map["intercept"], 0.0, 1.0)
    else:
        raise UserInputError(f"calibration map: unknown method {method!r}")
    return np.where(np.isfinite(s), out, np.nan)


def save_map(path: str | os.PathLike[str], calibration: Mapping[str, Any], *, metric: str,
             score_key: str, column: str, label: str,
             label_range: Sequence[float] | None) -> None:
    """Write the fitted map as JSON (atomically), with what it applies to."""
    if calibration.get("map") is None:
        raise UserInputError(f"--save-calibration: no map was fitted ({calibration['note']})")
    data = {"format": MAP_FORMAT, "metric": metric, "score_key": score_key, "column": column,
            "label": label, "label_range": None if label_range is None else list(label_range),
            **calibration["map"]}
    target = Path(path)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        os.replace(temporary, target)
    except OSError as error:
        raise UserInputError(f"{target}: cannot write it: {error}") from None
    finally:
        temporary.unlink(missing_ok=True)


def load_map(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A map written by :func:`save_map`; anything else is a one-line ``UserInputError``."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise UserInputError(f"--calibration {path}: cannot read it: {error}") from None
    if not isinstance(data, dict) or data.get("format") != MAP_FORMAT:
        raise UserInputError(f"--calibration {path}: not a calibration map (write one with "
                              "`calibrate --save-calibration FILE`)")
    numbers = [*data.get("x", []), *data.get("y", []), data.get("slope", 0.0),
               data.get("intercept", 0.0)]
    if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in numbers):
        raise UserInputError(f"--calibration {path}: the map holds a non-finite number")
    apply_map(data, np.zeros(1))  # an unknown method fails here
    return data


def check_map(path: str | os.PathLike[str], metrics: Sequence[str]) -> None:
    """``score --calibration``, before any work: a readable map for a metric of the run."""
    data = load_map(path)
    if "all" not in metrics and data.get("metric") not in metrics:
        raise UserInputError(f"--calibration {path}: fitted on {data.get('metric')!r}, which "
                              f"this run does not score (--metric {', '.join(metrics)})")


def calibrated_column(scored: Any, path: str | os.PathLike[str], metrics: Sequence[str]) -> Any:
    """``scored`` (a ``datasets.Dataset``) with ``<score column>_calibrated``: the map at
    ``path`` applied to the score column it was fitted on (unmeasured rows stay null)."""
    data = load_map(path)
    column = data["column"]
    if column not in scored.column_names:
        raise UserInputError(
            f"--calibration {path}: fitted on {data['metric']}'s {column!r}, which this run "
            f"does not write (its metrics: {', '.join(metrics)})")
    values = np.array([math.nan if v is None else float(v) for v in scored[column]])
    calibrated = apply_map(data, values)
    cells = [None if math.isnan(v) else float(v) for v in calibrated]
    name = f"{column}_calibrated"
    if name in scored.column_names:
        scored = scored.remove_columns(name)
    return scored.add_column(name, cells)
