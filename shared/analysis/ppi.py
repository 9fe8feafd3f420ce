"""Prediction-powered inference (PPI++) of a mean: a few human labels and a metric's scores on
every row give an unbiased estimate of the mean label, with a confidence interval that is valid
whatever the metric's quality (docs/CALIBRATION.md).

The estimator is the power-tuned one of Angelopoulos, Duchi and Zrnic (PPI++, 2023), computed
as the authors' reference implementation (``ppi_py.ppi_mean_ci`` and
``ppi_py.ppi_mean_pointestimate`` with ``lam=None``) computes it; the tests compare the two::

    value = lam * mean(unlabelled scores) + mean(labels - lam * labelled scores)

``lam`` in [0, 1] is fitted to minimise the variance (``lam = 0``: the labels alone; ``lam =
1``: plain PPI). The interval is the normal one, ``value +- z * se`` with
``se**2 = lam**2 var(unlabelled scores) / N + var(labels - lam * labelled scores) / n``.

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
                            unlabelled_scores: Sequence[float], alpha: float = 0.05
                            ) -> dict[str, float]:
    """The PPI++ estimate of the mean label over all rows, with its two-sided ``1 - alpha``
    interval: ``{"value", "low", "high"}``.

    ``labelled_scores[i]`` is the metric's score of the row labelled ``labels[i]``;
    ``unlabelled_scores`` are its scores of the rows nobody labelled. Labels are 0/1 (booleans
    count as 0/1) or numbers on the scores' scale (module docstring). The labelled rows must be
    a uniformly random sample of all rows: that is what the interval's guarantee rests on.
    Refused with a one-line ``UserInputError``: fewer than 2 labelled rows, no unlabelled row,
    a non-finite score or label, lengths that differ, ``alpha`` outside (0, 1).
    """
    found = ppi_mean(labelled_scores, labels, unlabelled_scores, alpha)
    return {"value": found["value"], "low": found["low"], "high": found["high"]}


def ppi_mean(labelled_scores: Sequence[float], labels: Sequence[float],
             unlabelled_scores: Sequence[float], alpha: float = 0.05) -> dict[str, Any]:
    """:func:`prediction_powered_mean` with what the reports add: ``lam`` (the power tuning),
    ``se``, ``classical`` (the labels alone: ``value``, ``low``, ``high``, ``se``), ``n``,
    ``N``, ``effective_sample_size`` (the labels that would give the same variance alone) and
    ``sample_size_gain`` (that over ``n``)."""
    y, f, f_u = _checked(labelled_scores, labels, unlabelled_scores, alpha)
    n, big_n = y.size, f_u.size
    z = _z(alpha)
    lam = _power_tuning(y, f, f_u)
    value = float(lam * f_u.mean() + (y - lam * f).mean())
    se = math.sqrt((lam * f_u).std() ** 2 / big_n + (y - lam * f).std() ** 2 / n)
    classical = classical_mean(y, alpha)
    variance = se ** 2
    ess = n * classical["se"] ** 2 / variance if variance > 0 else math.inf
    return {"value": value, "low": value - z * se, "high": value + z * se, "se": se,
            "lam": lam, "n": n, "N": big_n, "classical": classical,
            "effective_sample_size": ess if math.isfinite(ess) else None,
            "sample_size_gain": ess / n if math.isfinite(ess) else None}


def classical_mean(labels: Sequence[float], alpha: float = 0.05) -> dict[str, float]:
    """The labels alone: their mean and the normal interval (``ppi_py.classical_mean_ci``)."""
    y = np.asarray(labels, dtype=np.float64)
    se = float(y.std() / math.sqrt(y.size))
    value = float(y.mean())
    z = _z(alpha)
    return {"value": value, "low": value - z * se, "high": value + z * se, "se": se}


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


def _power_tuning(y: np.ndarray, f: np.ndarray, f_u: np.ndarray) -> float:
    """PPI++'s variance-minimising ``lam``, clipped to [0, 1] (``ppi_py._calc_lam_glm`` for a
    mean): ``cov(labels, scores) / ((1 + n / N) var(all scores))``. Scores that do not vary
    carry no information: ``lam = 0`` (where the reference divides by zero)."""
    n, big_n = y.size, f_u.size
    covariance = float(((y - y.mean()) * (f - f.mean())).mean())
    spread = float(np.var(np.concatenate([f, f_u]), ddof=1))
    if spread == 0.0:
        return 0.0
    return float(np.clip(covariance / ((1 + n / big_n) * spread), 0.0, 1.0))


def _z(alpha: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(1 - alpha / 2))
