"""Seeded bootstrap confidence intervals and small aggregation helpers (numpy, vectorised)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 1000
# elements drawn per chunk of the general bootstrap, to bound memory on large inputs
_CHUNK_ELEMENTS = 4_000_000
# resample by value counts when the data hold at most n / _FEW_VALUES_RATIO distinct values
# (one multinomial draw per value costs about as much as this many gathered elements)
_FEW_VALUES_RATIO = 8


def bootstrap_means(
    values: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
) -> np.ndarray:
    """Means of ``n_resamples`` resamples (with replacement, same size) of ``values``.

    Data with at most two distinct values (0/1 correctness) takes an exact shortcut: the number
    of draws equal to the larger value in one resample is Binomial(n, p), so its mean is drawn
    directly; this has the same distribution as resampling and costs O(n_resamples), not
    O(n * n_resamples). Data with few distinct values (at most n / 8) draw each resample's
    value counts from a multinomial, equally exact. Other data are resampled in chunks of
    indices that bound memory (the draws are those of ``scipy.stats.bootstrap``).
    """
    data = np.asarray(values, dtype=np.float64).ravel()
    n = data.size
    if n == 0:
        raise ValueError("bootstrap needs at least one value")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    low, high = float(data.min()), float(data.max())
    if low == high:
        return np.full(n_resamples, low)
    if not np.any((data != low) & (data != high)):
        p = float(np.count_nonzero(data == high)) / n
        draws = rng.binomial(n, p, size=n_resamples)
        return low + (high - low) * draws / n
    means = np.empty(n_resamples)
    distinct, counts = np.unique(data, return_counts=True)
    if distinct.size * _FEW_VALUES_RATIO <= n:
        # few distinct values (graded judge scores, paired differences of 0/1 scores): the
        # counts of each value in a resample are Multinomial(n, frequencies), drawn directly;
        # the same distribution as resampling, at O(distinct) per resample instead of O(n)
        rows = max(1, _CHUNK_ELEMENTS // distinct.size)
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            drawn = rng.multinomial(n, counts / n, size=stop - start)
            means[start:stop] = drawn @ distinct / n
        return means
    rows = max(1, _CHUNK_ELEMENTS // n)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        index = rng.integers(0, n, size=(stop - start, n))
        means[start:stop] = data[index].mean(axis=1)
    return means


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of the mean of ``values``.

    Seeded (``seed=None`` draws fresh entropy), so the same inputs give the same interval.
    Fewer than two values: ``(mean, mean)``.
    """
    if not 0.0 < confidence < 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    data = np.asarray(values, dtype=np.float64).ravel()
    if data.size == 0:
        raise ValueError("bootstrap needs at least one value")
    if data.size < 2:
        mean = float(data[0])
        return (mean, mean)
    means = bootstrap_means(data, n_resamples=n_resamples, seed=seed)
    alpha = 1.0 - confidence
    low, high = np.percentile(means, [100.0 * alpha / 2, 100.0 * (1.0 - alpha / 2)])
    return (float(low), float(high))


def paired_difference_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
) -> tuple[float, float]:
    """Paired-bootstrap interval of ``mean(b) - mean(a)``: pairs are resampled together, which
    is resampling the per-pair differences ``b - a`` (:func:`bootstrap_ci` on them)."""
    first = np.asarray(a, dtype=np.float64).ravel()
    second = np.asarray(b, dtype=np.float64).ravel()
    if first.shape != second.shape:
        raise ValueError(f"paired samples differ in length: {first.size} and {second.size}")
    return bootstrap_ci(second - first, confidence=confidence, n_resamples=n_resamples,
                        seed=seed)


def mean_std(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """Mean and population standard deviation (``numpy.std``, ddof=0) as Python floats."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        raise ValueError("mean of no values")
    return float(data.mean()), float(data.std())
