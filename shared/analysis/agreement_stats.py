"""The statistics of agreement: each takes (scores, labels) as float arrays and returns a
float, NaN where undefined.

The boolean ones are scikit-learn's formulas written on numpy counts (AUROC as the Mann-Whitney
rank sum, with scipy's tie-averaged ranks): the bootstrap calls each one 1,000 times per
compared metric, and scikit-learn's input validation cost 1 to 3 ms a call against the 20 to
60 microseconds of the arithmetic, about 10 s for each boolean row of ``make agreement``
(bench/README.md). tests/shared/test_agreement.py checks every one against scikit-learn. The
correlations are scipy's own (about 0.4 ms a call)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np


def _quiet(function: Callable[..., float]) -> Callable[..., float]:
    def wrapped(*args: Any, **kwargs: Any) -> float:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                value = float(function(*args, **kwargs))
            except ValueError:
                return math.nan
        return value if math.isfinite(value) else math.nan

    wrapped.__name__ = function.__name__
    wrapped.__doc__ = function.__doc__
    return wrapped


def _classes(labels: np.ndarray) -> tuple[np.ndarray, int, int]:
    """The positive rows' mask and the two class sizes (positives, negatives)."""
    positive = labels == 1.0
    n_positive = int(np.count_nonzero(positive))
    return positive, n_positive, labels.size - n_positive


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """``sklearn.metrics.roc_auc_score``: the Mann-Whitney U of the positives' ranks (ties
    count one half) over the number of (positive, negative) pairs."""
    from scipy.stats import rankdata

    positive, n_positive, n_negative = _classes(labels)
    if n_positive == 0 or n_negative == 0:
        return math.nan
    rank_sum = float(rankdata(scores)[positive].sum())
    return (rank_sum - n_positive * (n_positive + 1) / 2.0) / (n_positive * n_negative)


def _counts(threshold: float, scores: np.ndarray,
            labels: np.ndarray) -> tuple[int, int, int, int]:
    """(true positives, false positives, false negatives, true negatives) at ``threshold``."""
    predicted = scores >= threshold
    positive, n_positive, _ = _classes(labels)
    tp = int(np.count_nonzero(predicted & positive))
    fp = int(np.count_nonzero(predicted)) - tp
    fn = n_positive - tp
    return tp, fp, fn, labels.size - tp - fp - fn


def balanced_accuracy(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    """``sklearn.metrics.balanced_accuracy_score``: the mean of the two classes' recalls."""

    def balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
        tp, fp, fn, tn = _counts(threshold, scores, labels)
        if tp + fn == 0 or tn + fp == 0:
            return math.nan
        return (tp / (tp + fn) + tn / (tn + fp)) / 2.0

    return balanced_accuracy


def cohen_kappa(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    """``sklearn.metrics.cohen_kappa_score``: 1 - observed / chance-expected disagreement."""

    def cohen_kappa(scores: np.ndarray, labels: np.ndarray) -> float:
        tp, fp, fn, tn = _counts(threshold, scores, labels)
        n = tp + fp + fn + tn
        expected = ((tn + fn) * (tp + fn) / n) + ((fp + tp) * (tn + fp) / n)
        if expected == 0:  # one class in labels and predictions alike
            return math.nan
        return 1.0 - (fp + fn) / expected

    return cohen_kappa


def f1(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    """``sklearn.metrics.f1_score`` of the positive class, 0 where undefined
    (``zero_division=0``)."""

    def f1(scores: np.ndarray, labels: np.ndarray) -> float:
        tp, fp, fn, _ = _counts(threshold, scores, labels)
        return 2.0 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0

    return f1


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The threshold with the highest balanced accuracy on these rows (Youden's J over every
    distinct score, as on ``sklearn.metrics.roc_curve``; the highest such score on a tie) and
    that balanced accuracy; ``(nan, nan)`` with one class."""
    positive, n_positive, n_negative = _classes(labels)
    if n_positive == 0 or n_negative == 0:
        return math.nan, math.nan
    order = np.argsort(scores, kind="mergesort")[::-1]
    ordered = scores[order]
    cuts = np.r_[np.flatnonzero(np.diff(ordered)), ordered.size - 1]
    tps = np.cumsum(positive[order], dtype=np.float64)[cuts]
    fps = 1 + cuts - tps
    tpr, fpr = tps / n_positive, fps / n_negative
    best = int(np.argmax(tpr - fpr))
    return float(ordered[cuts[best]]), float((tpr[best] + 1.0 - fpr[best]) / 2.0)


def best_balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
    return best_threshold(scores, labels)[1]


@_quiet
def spearman(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import spearmanr

    return spearmanr(scores, labels).statistic


@_quiet
def kendall(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return kendalltau(scores, labels, variant="b").statistic


@_quiet
def pearson(scores: np.ndarray, labels: np.ndarray) -> float:
    from scipy.stats import pearsonr

    if np.ptp(scores) == 0 or np.ptp(labels) == 0:
        return math.nan
    return pearsonr(scores, labels).statistic


def per_group_mean(
    statistic: Callable[[np.ndarray, np.ndarray], float],
) -> Callable[..., float]:
    """The mean over groups of ``statistic`` computed inside each group (groups where it is
    undefined, e.g. constant ratings, are left out)."""

    def grouped(scores: np.ndarray, labels: np.ndarray, groups: np.ndarray) -> float:
        values = [statistic(scores[groups == g], labels[groups == g]) for g in np.unique(groups)]
        finite = [v for v in values if math.isfinite(v)]
        return float(np.mean(finite)) if finite else math.nan

    grouped.__name__ = f"{statistic.__name__}_per_group"
    grouped.inner = statistic  # type: ignore[attr-defined]
    return grouped
