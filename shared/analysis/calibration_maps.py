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
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..base.errors import UserInputError

BINS = 10
FOLDS = 5
MAP_FORMAT = "judge-metrics calibration map 1"
__all__ = ["BINS", "FOLDS", "MAP_FORMAT", "apply_map", "brier", "calibrated_column", "check_map",
           "cross_fitted_scores", "expected_calibration_error", "fit_calibration", "load_map",
           "reliability", "save_map"]


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


def cross_fitted_scores(method: str, scores: Sequence[float], labels: Sequence[float],
                        unlabelled: Sequence[float], *, binary: bool, folds: int = FOLDS,
                        seed: int | None = 0) -> dict[str, Any]:
    """Calibrated scores for a prediction-powered estimate that does not reuse a map's own
    rows (cross-prediction, Zrnic and Candes 2024): the labelled rows are split into ``folds``
    (stratified for 0/1 labels); each labelled row gets the ``method`` map fitted on the other
    folds, each unlabelled row the mean of the fold maps. Returns ``labelled`` and
    ``unlabelled`` (the calibrated scores), ``fold`` (each labelled row's fold) and ``maps``
    (one per fold), or ``None`` when the labels cannot be split (:func:`fit_calibration`'s
    rule)."""
    from sklearn.model_selection import KFold, StratifiedKFold

    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    u = np.asarray(unlabelled, dtype=np.float64)
    k = _folds(y, binary, folds)
    if k < 2:
        return None
    splitter = (StratifiedKFold if binary else KFold)(n_splits=k, shuffle=True,
                                                       random_state=seed)
    labelled, fold = np.empty_like(y), np.empty(y.size, dtype=int)
    unlabelled_sum, maps = np.zeros_like(u), []
    for number, (train, test) in enumerate(splitter.split(s.reshape(-1, 1), y)):
        fitted = _fitted_map(method, s[train], y[train])
        labelled[test], fold[test] = apply_map(fitted, s[test]), number
        unlabelled_sum += apply_map(fitted, u)
        maps.append(fitted)
    return {"labelled": labelled, "unlabelled": unlabelled_sum / k, "fold": fold, "maps": maps}


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
    """A map written by :func:`save_map`, checked completely (:func:`_checked_map`); anything
    else is a one-line ``UserInputError``. Only a regular file is read (a named pipe would
    never end)."""
    where = f"--calibration {path}"
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise UserInputError(f"{where}: not a regular file")
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError) as error:
        if isinstance(error, UserInputError):
            raise
        why = "nested too deeply" if isinstance(error, RecursionError) else error
        raise UserInputError(f"{where}: cannot read it: {why}") from None
    return _checked_map(data, where)


_METHOD_KEYS = {"isotonic": ("x", "y"), "sigmoid": ("slope", "intercept"),
                "linear": ("slope", "intercept")}


def _checked_map(data: Any, where: str) -> dict[str, Any]:
    """Every part of a map that :func:`apply_map` and ``score --calibration`` read: the format,
    the metric, its score key and the column (the metric's score column of that key), the
    method and the numbers it needs (isotonic: ``x`` strictly increasing, ``y`` in [0, 1], of
    one length, at least one point; sigmoid and linear: a finite ``slope`` and ``intercept``)."""
    from ..kit.registry import METRICS
    from ..runs.chunks import score_column_names

    if not isinstance(data, dict) or data.get("format") != MAP_FORMAT:
        raise UserInputError(f"{where}: not a calibration map (write one with "
                             "`calibrate --save-calibration FILE`)")
    metric, key, column = data.get("metric"), data.get("score_key"), data.get("column")
    if not isinstance(metric, str) or metric not in METRICS:
        raise UserInputError(f"{where}: 'metric' is {_shown(metric)}, not a metric's name")
    columns = score_column_names(metric, METRICS[metric])
    if key is None and len(columns) == 1:  # a metric with one score: its key goes unsaid
        key = next(iter(columns))
    if key not in columns:
        raise UserInputError(f"{where}: 'score_key' is {_shown(key)}; {metric}'s keys: "
                             f"{', '.join(columns)}")
    if column != columns[key]:
        raise UserInputError(f"{where}: 'column' is {_shown(column)}, not {metric}'s score "
                             f"column {columns[key]!r}")
    return check_map_numbers(data, where)


def check_map_numbers(data: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A map's method and the numbers it needs (isotonic: ``x`` strictly increasing, ``y`` in
    [0, 1], of one length, at least one point; sigmoid and linear: a finite ``slope`` and
    ``intercept``), as :func:`apply_map` reads them; ``where`` names it in a refusal."""
    method = data.get("method")
    if method not in _METHOD_KEYS:
        raise UserInputError(f"{where}: 'method' is {_shown(method)}; one of "
                             f"{', '.join(_METHOD_KEYS)}")
    for name in _METHOD_KEYS[method]:
        if name not in data:
            raise UserInputError(f"{where}: a {method} map needs {name!r}")
    if method == "isotonic":
        x, y = _numbers(data["x"], "x", where), _numbers(data["y"], "y", where)
        if x.size != y.size or x.size == 0:
            raise UserInputError(f"{where}: 'x' and 'y' must be non-empty lists of one length "
                                 f"(got {x.size} and {y.size})")
        if np.any(np.diff(x) <= 0):
            raise UserInputError(f"{where}: 'x' must be strictly increasing")
        if np.any((y < 0) | (y > 1)):
            raise UserInputError(f"{where}: 'y' holds a P(label) outside [0, 1]")
        return {**data, "x": x.tolist(), "y": y.tolist()}
    slope = _numbers([data["slope"]], "slope", where)[0]
    intercept = _numbers([data["intercept"]], "intercept", where)[0]
    return {**data, "slope": float(slope), "intercept": float(intercept)}


def _numbers(values: Any, name: str, where: str) -> np.ndarray:
    """``values`` (a list of JSON numbers) as finite floats, or a one-line error."""
    if not isinstance(values, list):
        raise UserInputError(f"{where}: {name!r} must be a list of numbers")
    out = []
    for value in values:
        number = math.nan
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                pass
        if not math.isfinite(number):
            raise UserInputError(f"{where}: {name!r} holds {_shown(value)}, not a finite number")
        out.append(number)
    return np.asarray(out, dtype=np.float64)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_map(path: str | os.PathLike[str], metrics: Sequence[str]) -> None:
    """``score --calibration``, before any work: a readable, complete map for a metric of the
    run."""
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
