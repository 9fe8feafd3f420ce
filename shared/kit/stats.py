"""Seeded bootstrap confidence intervals and small aggregation helpers (numpy, vectorised).

``bootstrap_statistic`` resamples rows (or groups of rows) for any statistic, e.g. the AUROC or
Kendall tau of ``shared.analysis.agreement``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

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


def bootstrap_statistic(
    statistic: Callable[..., float],
    *columns: Sequence[Any] | np.ndarray,
    groups: Sequence[Any] | np.ndarray | None = None,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = DEFAULT_SEED,
) -> tuple[float | None, float | None, int]:
    """Seeded percentile bootstrap interval of an arbitrary ``statistic(*columns)``.

    Each resample draws rows with replacement (same count), or with ``groups`` whole groups
    with replacement (same number of groups); the statistic is then called with the resampled
    columns and, with ``groups``, the keyword ``groups`` holding one id per resampled row (a
    group drawn twice gets two ids, so per-group statistics see it twice). Resamples on which
    the statistic is undefined (NaN, e.g. AUROC of a resample with one class) are left out.
    Returns ``(low, high, used)``; ``(None, None, 0)`` when no resample gave a value.
    The indices are drawn in bounded chunks (vectorised); the statistic runs once per resample.
    """
    if not 0.0 < confidence < 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples}")
    arrays = [np.asarray(c) for c in columns]
    if not arrays:
        raise ValueError("bootstrap_statistic needs at least one column")
    n = len(arrays[0])
    if n == 0 or any(len(a) != n for a in arrays):
        raise ValueError("columns must be non-empty and of one length")
    rng = np.random.default_rng(seed)
    values = np.full(n_resamples, np.nan)
    if groups is None:
        rows = max(1, _CHUNK_ELEMENTS // n)
        for start in range(0, n_resamples, rows):
            stop = min(n_resamples, start + rows)
            for offset, index in enumerate(rng.integers(0, n, size=(stop - start, n))):
                values[start + offset] = statistic(*(a[index] for a in arrays))
    else:
        ids = np.asarray(groups)
        if len(ids) != n:
            raise ValueError("groups must have one entry per row")
        _, codes = np.unique(ids, return_inverse=True)
        members = [np.flatnonzero(codes == g) for g in range(int(codes.max()) + 1)]
        for r, chosen in enumerate(rng.integers(0, len(members), size=(n_resamples,
                                                                      len(members)))):
            index = np.concatenate([members[g] for g in chosen])
            new_ids = np.repeat(np.arange(len(chosen)), [len(members[g]) for g in chosen])
            values[r] = statistic(*(a[index] for a in arrays), groups=new_ids)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return (None, None, 0)
    alpha = 1.0 - confidence
    low, high = np.percentile(finite, [100.0 * alpha / 2, 100.0 * (1.0 - alpha / 2)])
    return (float(low), float(high), int(finite.size))
