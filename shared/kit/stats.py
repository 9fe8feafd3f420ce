"""Confidence intervals and small aggregation helpers (numpy, vectorised).

``t_wilson_interval`` is the interval of a mean score against a threshold: the gates (``score
--gate``), the HTML report's interval column and ``assert_metric`` all read it (docs/GATES.md,
"The interval"). The seeded bootstraps serve the statistics that have no closed form:
``bootstrap_statistic`` resamples rows (or groups of rows) for any statistic, e.g. the AUROC or
Kendall tau of ``shared.analysis.agreement``; ``paired_difference_ci`` is ``compare``'s interval
of a delta B - A.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

DEFAULT_SEED = 0
DEFAULT_RESAMPLES = 1000
# elements drawn per chunk of the general bootstrap, to bound memory on large inputs
_CHUNK_ELEMENTS = 4_000_000
# resample by value counts when the data hold at most n / _FEW_VALUES_RATIO distinct values
# (one multinomial draw per value costs about as much as this many gathered elements)
_FEW_VALUES_RATIO = 8


def wilson_interval(mean: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval at ``confidence`` for a mean in [0, 1] of ``n`` units (rows, or
    pass^k's tasks); it holds the mean and stays in [0, 1]."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    denominator = 1 + z * z / n
    centre = (mean + z * z / (2 * n)) / denominator
    half = z * math.sqrt(max(mean * (1 - mean), 0.0) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, min(mean, centre - half)), min(1.0, max(mean, centre + half))


def t_wilson_interval(
    values: Sequence[float] | np.ndarray,
    *,
    confidence: float = 0.95,
    score_range: tuple[float, float] = (0.0, 1.0),
) -> tuple[float, float]:
    """Interval of the mean of ``values`` (scores inside ``score_range``): the hull of the
    Student t-interval and the Wilson score interval of the mean taken as a proportion.

    On the scores rescaled to [0, 1] (n values, mean p):

    - the t-interval, ``p +- t(n - 1) * sd / sqrt(n)``, follows the spread the scores show;
    - the Wilson score interval of p out of n: a score in [0, 1] with mean p has variance at
      most p(1 - p) (the 0/1 score's), so inverting the score test with that variance is valid
      for any bounded score; it is the well-studied interval for 0/1 scores, and it is never a
      point: five values all 1.0 give [0.57, 1.0] at 95 %, where the t-interval and a
      percentile bootstrap give [1.0, 1.0].

    Each end is the wider of the two, clipped to the range. Its coverage of the true mean at
    n = 5 ... 100 is in docs/GATES.md (``bench/interval_coverage.py``, checked by
    tests/shared/test_threshold_interval.py). One value: the Wilson interval alone.
    """
    from scipy import stats as scipy_stats

    if not 0.0 < confidence < 1.0 or math.isnan(confidence):
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    lo, hi = (float(score_range[0]), float(score_range[1]))
    if not lo < hi:
        raise ValueError(f"score_range must be (low, high) with low < high, got {score_range}")
    data = (np.asarray(values, dtype=np.float64).ravel() - lo) / (hi - lo)
    n = data.size
    if n == 0:
        raise ValueError("an interval needs at least one value")
    mean = float(data.mean())
    low, high = wilson_interval(mean, n, confidence)
    if n > 1:
        t_half = float(scipy_stats.t.ppf(0.5 + confidence / 2, n - 1)) * float(
            data.std(ddof=1)) / math.sqrt(n)
        low, high = min(low, mean - t_half), max(high, mean + t_half)
    low, high = max(0.0, low), min(1.0, high)
    return (lo + low * (hi - lo), lo + high * (hi - lo))


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
