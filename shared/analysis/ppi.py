"""Prediction-powered inference (PPI++) of a mean: a few human labels and a metric's scores on
every row give an unbiased estimate of the mean label, with a confidence interval that is valid
whatever the metric's quality (docs/CALIBRATION.md).

The estimator is the power-tuned one of Angelopoulos, Duchi and Zrnic (PPI++, 2023)::

    value = mean_i(lam_i) * mean(unlabelled scores) + mean_i(labels_i - lam_i * scores_i)

``lam_i`` in [0, 1] is fitted to minimise the variance (``lam = 0``: the labels alone; ``lam =
1``: plain PPI) as the authors' reference implementation (``ppi_py``) fits it, but on the
labelled rows other than ``i`` (cross-fitted). The interval is ours: the reference's normal
interval covered 91% at 30 labels; this one (Student's t, the unbiased variance, a Wilson-type
score interval inside the labels' range) keeps its level from 10 labels on
(:func:`ppi_intervals`; ``bench/ppi_coverage.py`` measures both, docs/CALIBRATION.md).

Labels and scores must be on one scale: 0/1 labels against scores in [0, 1] (a probability of
"correct"); 1-5 ratings either against scores on 1-5, or mapped onto the scores' 0-1 scale as
``(rating - 1) / 4`` first (:func:`label_scale`). The estimate is then the mean label on that
scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Real
from typing import Any

import numpy as np

from ..base.errors import UserInputError

__all__ = ["classical_mean", "label_scale", "ppi_mean", "prediction_powered_mean"]


def prediction_powered_mean(labelled_scores: Sequence[float], labels: Sequence[float],
                            unlabelled_scores: Sequence[float], alpha: float = 0.05,
                            bounds: tuple[float, float] | None = None) -> dict[str, float]:
    """The PPI++ estimate of the mean label over all rows, with its two-sided ``1 - alpha``
    interval: ``{"value", "low", "high"}``.

    ``labelled_scores[i]`` is the metric's score of the row labelled ``labels[i]``;
    ``unlabelled_scores`` are its scores of the rows nobody labelled. Labels are 0/1 (booleans
    count as 0/1) or numbers on the scores' scale (module docstring). The labelled rows must be
    a uniformly random sample of all rows: that is what the interval's guarantee rests on.
    Refused with a one-line ``UserInputError``: fewer than 2 labelled rows, no unlabelled row,
    a non-finite score or label, lengths that differ, ``alpha`` outside (0, 1), a label
    outside ``bounds``.

    ``bounds`` is the labels' range (default: [0, 1] when every label lies in it, else none):
    the interval then never leaves it (ratings on a 1-5 scale: pass ``(1, 5)``).
    """
    found = ppi_mean(labelled_scores, labels, unlabelled_scores, alpha, bounds)
    return {"value": found["value"], "low": found["low"], "high": found["high"]}


def ppi_mean(labelled_scores: Sequence[float], labels: Sequence[float],
             unlabelled_scores: Sequence[float], alpha: float = 0.05,
             bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    """:func:`prediction_powered_mean` with what the reports add: ``lam`` (the power tuning,
    the mean of the rows' cross-fitted ones), ``se``, ``classical`` (the labels alone:
    ``value``, ``low``, ``high``, ``se``), ``n``, ``N``, ``bounds``, ``effective_sample_size``
    (the labels that would give the same variance alone) and ``sample_size_gain`` (that over
    ``n``)."""
    y, f, f_u = _checked(labelled_scores, labels, unlabelled_scores, alpha)
    bounds = _bounds(y, bounds)
    found = {k: float(v[0]) for k, v in ppi_intervals(f[None], y[None], f_u[None], alpha,
                                                      bounds).items()}
    lone = ppi_intervals(f[None], y[None], f_u[None], alpha, bounds, tuned=False)
    classical = {k: float(lone[k][0]) for k in ("value", "low", "high", "se")}
    n = y.size
    variance = found["se"] ** 2
    ess = n * classical["se"] ** 2 / variance if variance > 0 else math.inf
    return {"value": found["value"], "low": found["low"], "high": found["high"],
            "se": found["se"], "lam": found["lam"], "n": n, "N": f_u.size,
            "bounds": None if bounds is None else list(bounds), "classical": classical,
            "effective_sample_size": ess if math.isfinite(ess) else None,
            "sample_size_gain": ess / n if math.isfinite(ess) else None}


def classical_mean(labels: Sequence[float], alpha: float = 0.05,
                   bounds: tuple[float, float] | None = None) -> dict[str, float]:
    """The labels alone: their mean and the same interval with no scores (``lam = 0``): for
    0/1 labels Wilson's score interval with Student's t quantile."""
    y = _floats(labels, "labels")
    if y.size < 2:
        raise UserInputError(f"{y.size} label{'s' if y.size != 1 else ''}: the interval needs "
                              "at least 2")
    found = ppi_intervals(np.zeros((1, y.size)), y[None], np.zeros((1, 1)), alpha,
                          _bounds(y, bounds), tuned=False)
    return {k: float(found[k][0]) for k in ("value", "low", "high", "se")}


def ppi_intervals(labelled_scores: np.ndarray, labels: np.ndarray,
                  unlabelled_scores: np.ndarray, alpha: float = 0.05,
                  bounds: tuple[float, float] | None = (0.0, 1.0), *, tuned: bool = True
                  ) -> dict[str, np.ndarray]:
    """The estimate and interval of many samples at once (one per row of the 2-D arrays:
    ``labelled_scores`` and ``labels`` ``(S, n)``, ``unlabelled_scores`` ``(S, N)``; checked
    by the caller): ``value``, ``low``, ``high``, ``se``, ``lam``, each ``(S,)``.
    ``tuned=False``: ``lam = 0``, the labels alone. The simulations of the tests and of
    ``bench/ppi_coverage.py`` call this; :func:`ppi_mean` is its one-sample case.

    The steps (docs/CALIBRATION.md, "The interval"):

    - cross-fitted power tuning: row ``i``'s ``lam_i`` is fitted on the other rows, so no
      label tunes the weight it is corrected with;
    - the variance of the rectifier ``d = y - lam f`` with ``n - 1`` in the denominator and
      Student's t quantile with ``n - 1`` degrees of freedom;
    - with ``bounds``: a score-type (Wilson) interval. The labels' variance at a candidate
      mean ``m`` is ``rho (m - low)(high - m)``, exact for 0/1 labels (``rho = 1``) and scaled
      by the labels' observed dispersion (plus one 0/1 pseudo-row) for graded ones; the share
      of the rectifier's variance that moves with the labels' (``(1 - lam b)**2``, ``b`` the
      scores' slope on the labels) moves with it. The interval is every ``m`` whose distance
      from the estimate is at most ``t * se(m)``, cut to ``bounds``: never outside the labels'
      range, never a single point from a handful of equal labels.
    """
    y, f, f_u = (np.asarray(a, dtype=np.float64) for a in (labels, labelled_scores,
                                                           unlabelled_scores))
    n, big_n = y.shape[1], f_u.shape[1]
    lams = _cross_fitted_lam(y, f, f_u) if tuned else np.zeros_like(y)
    lam = lams.mean(axis=1)
    d = y - lams * f
    value = lam * f_u.mean(axis=1) + d.mean(axis=1)
    unlabelled_part = lam ** 2 * f_u.var(axis=1, ddof=1 if big_n > 1 else 0) / big_n
    var_d = d.var(axis=1, ddof=1)
    se = np.sqrt(var_d / n + unlabelled_part)
    q = _t(alpha, n - 1)
    if bounds is None:
        return {"value": value, "low": value - q * se, "high": value + q * se, "se": se,
                "lam": lam}
    low, high = bounds
    var_y = y.var(axis=1, ddof=1)
    centred = (y - y.mean(axis=1, keepdims=True)) * (f - f.mean(axis=1, keepdims=True))
    slope = np.divide(centred.sum(axis=1) / (n - 1), var_y, out=np.zeros_like(var_y),
                      where=var_y > 0)
    share = (1 - lam * slope) ** 2
    span = (y.mean(axis=1) - low) * (high - y.mean(axis=1))
    observed = np.divide((n - 1) * var_y, span, out=np.ones_like(span), where=span > 0)
    rho = np.minimum((observed + 1) / n, 1.0)
    rho = np.where(span > 0, rho, 1.0)
    # |value - m| <= q * sqrt((rest + share * rho (m - low)(high - m)) / n + unlabelled_part)
    k = q * q * share * rho / n
    rest = np.maximum(var_d - share * var_y, 0.0)
    a = 1 + k
    b = -(2 * value + k * (low + high))
    c = value ** 2 + k * low * high - q * q * (rest / n + unlabelled_part)
    discriminant = b * b - 4 * a * c
    root = np.sqrt(np.maximum(discriminant, 0.0))
    # no candidate passes only when the estimate itself lies outside the bounds: the t interval
    ends = [np.where(discriminant > 0, (-b + sign * root) / (2 * a), value + sign * q * se)
            for sign in (-1, 1)]
    return {"value": value, "low": np.clip(ends[0], low, high),
            "high": np.clip(ends[1], low, high), "se": se, "lam": lam}


def label_scale(labels: np.ndarray, label_range: tuple[float, float] | None = None
                ) -> tuple[np.ndarray, tuple[float, float] | None]:
    """Labels on the scores' 0-1 scale and the range mapped (``None``: kept as they are).

    0/1 labels and labels already within [0, 1] are kept. Others (ratings such as 1-5) map
    ``low -> 0`` and ``high -> 1`` by ``label_range``, by default the lowest and highest label
    present (pass the scale's own ends, e.g. ``(1, 5)``, so that the map does not depend on
    which rows were labelled)."""
    present = labels[np.isfinite(labels)]
    if label_range is None:
        if present.size == 0 or (present.min() >= 0.0 and present.max() <= 1.0):
            return labels, None
        label_range = (float(present.min()), float(present.max()))
    low, high = (float(x) for x in label_range)
    if not (math.isfinite(low) and math.isfinite(high) and high > low):
        raise UserInputError(f"label range {low:g}:{high:g}: expected LOW:HIGH with LOW < HIGH")
    outside = present[(present < low) | (present > high)]
    if outside.size:
        raise UserInputError(f"label {outside[0]:g} is outside the label range {low:g}:{high:g}")
    return (labels - low) / (high - low), (low, high)


def _checked(labelled_scores: Sequence[float], labels: Sequence[float],
             unlabelled_scores: Sequence[float], alpha: float
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, Real) or \
            not 0 < float(alpha) < 1:  # any real number: numpy's float32 too
        raise UserInputError(f"alpha must be a number in (0, 1), got {alpha!r}")
    f = _floats(labelled_scores, "labelled_scores")
    y = _floats(labels, "labels")
    f_u = _floats(unlabelled_scores, "unlabelled_scores")
    if f.size != y.size:
        raise UserInputError(f"{f.size} labelled scores but {y.size} labels: one score per "
                              "labelled row")
    if y.size < 2:
        raise UserInputError(f"{y.size} labelled row{'s' if y.size != 1 else ''}: the "
                              "estimate needs at least 2 (their spread sets the interval)")
    if f_u.size == 0:
        raise UserInputError("no unlabelled row: with every row labelled, the labels' mean is "
                              "the answer (no estimate to make)")
    return y, f, f_u


def _floats(values: Sequence[float], name: str) -> np.ndarray:
    """``values`` as finite float64s: numbers only (booleans count as 0/1); ``None``, text
    (``"1"`` is no number here) or a non-finite value is one line naming the first."""
    if isinstance(values, (str, bytes)):
        raise UserInputError(f"{name}: expected numbers (a score or label per row), got text")
    raw = values if isinstance(values, np.ndarray) else np.asarray(values, dtype=object)
    if raw.ndim != 1:
        raise UserInputError(f"{name}: expected a flat sequence of numbers, got shape "
                              f"{raw.shape}")
    if raw.dtype.kind not in "biuf":
        for i, value in enumerate(raw):
            if not isinstance(value, (Real, np.bool_)):
                what = "None" if value is None else f"{type(value).__name__} {value!r}"
                raise UserInputError(f"{name}[{i}] is {what}: expected numbers (a score or "
                                      "label per row; leave unmeasured or unlabelled rows out)")
    array = raw.astype(np.float64)
    bad = np.flatnonzero(~np.isfinite(array))
    if bad.size:
        raise UserInputError(f"{name}[{bad[0]}] is {float(array[bad[0]])!r}: every score and "
                              "label must be a finite number (leave unmeasured rows out)")
    return array


def _cross_fitted_lam(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> np.ndarray:
    """Each labelled row's power tuning fitted without it (leave-one-out cross-fitting), shape
    ``y.shape``: PPI++'s variance-minimising ``lam = cov(labels, scores) / ((1 + n / N)
    var(all scores))`` (``ppi_py._calc_lam_glm`` for a mean) on the other ``n - 1`` labelled
    rows and every unlabelled one, clipped to [0, 1]. Scores that do not vary carry no
    information: ``lam = 0`` (where the reference divides by zero)."""
    n, big_n = y.shape[1], f_u.shape[1]
    m = n - 1
    if m < 1:
        return np.zeros_like(y)
    mean_y = (y.sum(axis=1, keepdims=True) - y) / m
    mean_f = (f.sum(axis=1, keepdims=True) - f) / m
    covariance = ((y * f).sum(axis=1, keepdims=True) - y * f) / m - mean_y * mean_f
    every = np.concatenate([f, f_u], axis=1)
    total, squares, size = (every.sum(axis=1, keepdims=True),
                            (every ** 2).sum(axis=1, keepdims=True), m + big_n)
    centre = (total - f) / size
    spread = np.maximum((squares - f ** 2 - size * centre ** 2) / (size - 1), 0.0)
    spread = np.where(spread > 1e-12 * np.maximum(centre ** 2, 1.0), spread, 0.0)
    lam = np.divide(covariance, (1 + m / big_n) * spread, out=np.zeros_like(y),
                    where=spread > 0)
    return np.clip(lam, 0.0, 1.0)


def _bounds(y: np.ndarray, bounds: tuple[float, float] | None) -> tuple[float, float] | None:
    """The labels' range: as given (checked), else [0, 1] when every label lies in it, else
    unknown (``None``: the plain t interval)."""
    if bounds is None:
        return (0.0, 1.0) if y.min() >= 0.0 and y.max() <= 1.0 else None
    low, high = (float(b) for b in bounds)
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise UserInputError(f"bounds {bounds!r}: expected (low, high) with low < high")
    if y.min() < low or y.max() > high:
        raise UserInputError(f"a label lies outside the bounds {low:g}..{high:g}")
    return low, high


def _t(alpha: float, df: int) -> float:
    from scipy.stats import t

    return float(t.ppf(1 - alpha / 2, df))
