"""The statistics of agreement: each takes (scores, labels) as float arrays and returns a
float, NaN where undefined (scikit-learn and scipy, imported when called)."""

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


def _two_classes(labels: np.ndarray) -> bool:
    return bool(np.any(labels == 1.0)) and bool(np.any(labels == 0.0))


@_quiet
def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return roc_auc_score(labels, scores) if _two_classes(labels) else math.nan


def _at(threshold: float) -> Callable[[np.ndarray], np.ndarray]:
    return lambda scores: (np.asarray(scores) >= threshold).astype(int)


def balanced_accuracy(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def balanced_accuracy(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import balanced_accuracy_score

        if not _two_classes(labels):
            return math.nan
        return balanced_accuracy_score(labels.astype(int), _at(threshold)(scores))

    return balanced_accuracy


def cohen_kappa(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def cohen_kappa(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import cohen_kappa_score

        return cohen_kappa_score(labels.astype(int), _at(threshold)(scores))

    return cohen_kappa


def f1(threshold: float) -> Callable[[np.ndarray, np.ndarray], float]:
    @_quiet
    def f1(scores: np.ndarray, labels: np.ndarray) -> float:
        from sklearn.metrics import f1_score

        return f1_score(labels.astype(int), _at(threshold)(scores), zero_division=0.0)

    return f1


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """The threshold with the highest balanced accuracy on these rows (Youden's J on
    ``sklearn.metrics.roc_curve``) and that balanced accuracy; ``(nan, nan)`` with one class."""
    from sklearn.metrics import roc_curve

    if not _two_classes(labels):
        return math.nan, math.nan
    fpr, tpr, thresholds = roc_curve(labels, scores, drop_intermediate=False)
    finite = np.isfinite(thresholds)  # the first threshold (+inf) predicts no positive
    j = np.where(finite, tpr - fpr, -np.inf)
    best = int(np.argmax(j))
    return float(thresholds[best]), float((tpr[best] + 1.0 - fpr[best]) / 2.0)


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
