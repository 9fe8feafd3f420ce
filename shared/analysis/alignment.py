"""Align a metric to human 0/1 labels, honestly: tune on training folds, report on the others
(``judge-metrics align``, docs/ALIGNMENT.md).

What is tuned, on the training folds only (:func:`tune`): the calibration map from score to
P(label) (isotonic or Platt, chosen as ``calibrate`` chooses it, by cross-validation inside the
training rows) and the decision threshold on P(label) with the highest Cohen's kappa on the
training rows. Every row is then scored by the tuning of the one fold it was held out of, and
``before`` (the raw score read as P(label), decided at the metric's threshold) and ``after``
are measured on those out-of-fold predictions: kappa, AUROC, Brier and ECE with a seeded
bootstrap interval (whole groups resampled with ``groups``), and a paired bootstrap test of
the kappa after minus before on the same rows.

The report records the fold of every row and, per fold, the rows its tuning saw, so that a
test can prove no row's figure came from a tuning that saw it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..base.errors import UserInputError
from ..kit import stats
from .agreement_stats import auroc, cohen_kappa
from .calibration_maps import apply_map, brier, expected_calibration_error, fit_calibration

__all__ = ["Tuning", "align_scores", "data_digest", "fold_of_rows", "panel_weights", "tune",
           "weighted_mean"]

FIGURES = ("kappa", "auroc", "brier", "ece")


@dataclass(frozen=True)
class Tuning:
    """What :func:`tune` fitted: ``calibration`` (a map as ``calibrate`` saves it, or ``None``:
    the score read as P(label)) and ``threshold`` (decide 1 at P(label) >= it)."""

    threshold: float
    calibration: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def probabilities(self, scores: np.ndarray) -> np.ndarray:
        if self.calibration is None:
            return np.clip(scores, 0.0, 1.0)
        return apply_map(self.calibration, scores)

    def as_dict(self) -> dict[str, Any]:
        return {"threshold": self.threshold, "calibration": self.calibration, **self.extra}


def repeated_rows(columns: Sequence[Sequence[Any]]) -> int:
    """How many rows repeat an earlier row (the same value in every one of ``columns``, one
    list per column): copies that folds split apart unless they are grouped."""
    import json

    seen: set[str] = set()
    repeats = 0
    for row in zip(*columns, strict=True):
        key = json.dumps(row, sort_keys=True, default=str)
        repeats += key in seen
        seen.add(key)
    return repeats


def tune(scores: np.ndarray, labels: np.ndarray, seed: int | None = 0) -> Tuning:
    """The calibration map and the kappa-best threshold on these rows (and on nothing else)."""
    fitted = fit_calibration(scores, labels, binary=True, seed=seed)
    tuning = Tuning(0.5, fitted["map"])
    p = tuning.probabilities(scores)
    candidates = np.unique(p)
    kappas = [_kappa(p >= t, labels) for t in candidates]
    finite = [(k, t) for k, t in zip(kappas, candidates, strict=True) if not math.isnan(k)]
    # the highest kappa; on a tie the threshold nearest 0.5 (the least committed)
    threshold = max(finite, key=lambda kt: (kt[0], -abs(kt[1] - 0.5)))[1] if finite else 0.5
    return Tuning(float(threshold), fitted["map"])


Tuner = Callable[[np.ndarray, np.ndarray, "int | None"], Any]
Rescore = Callable[[np.ndarray, np.ndarray], "tuple[np.ndarray, np.ndarray]"]


def align_scores(scores: Sequence[float], labels: Sequence[float], *, folds: int = 5,
                 groups: Sequence[Any] | None = None, seed: int | None = 0,
                 alpha: float = 0.05, decision_threshold: float | None = 0.5,
                 other_labels: Sequence[float] | None = None,
                 resamples: int = stats.DEFAULT_RESAMPLES, tuner: Tuner = tune,
                 held_out_scores: Sequence[float] | None = None,
                 rescore: Rescore | None = None) -> dict[str, Any]:
    """The held-out report of aligning per-row ``scores`` to 0/1 ``labels`` (rows with a
    missing score or label are left out and counted).

    Returns ``before`` and ``after`` (each of :data:`FIGURES` as ``{value, low, high}``),
    ``paired_test`` (``statistic``, ``difference``, ``p_value``, ``method``), ``improved``,
    ``baseline`` (the constant answer: ``base_rate``, ``answer``, ``accuracy``, ``kappa``),
    ``human_agreement`` (kappa of ``labels`` against ``other_labels``, or ``None``),
    ``folds`` (per fold: ``held_out`` and ``trained_on`` row numbers, its tuning),
    ``fold_of_row`` (``-1``: not used), ``tuning`` (fitted on every used row: what a profile
    saves), ``n``, ``unused``, ``alpha``, ``seed``, ``data_digest``.
    ``tuner(scores, labels, seed)`` returns an object with ``threshold``,
    ``probabilities(scores)`` and ``as_dict()`` (default :func:`tune`). ``held_out_scores``:
    the scores a row's held-out prediction reads (``align --few-shot``: each row scored again
    with its fold's examples; NaN there falls back to ``scores``); the tunings are fitted on
    ``scores``, the folds are :func:`fold_of_rows`'. ``rescore(train, held)``: instead, the
    scores a fold is tuned on and predicts with, from its training and held-out row numbers
    (a panel's weights fitted on ``train``); ``rescore(rows, rows)`` for the profile."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if s.shape != y.shape or s.ndim != 1:
        raise UserInputError(f"{s.size} scores but {y.size} labels: one of each per row")
    used = np.isfinite(s) & np.isfinite(y)
    if not np.isin(y[used], (0.0, 1.0)).all():
        raise UserInputError("align needs 0/1 labels (booleans, yes/no, 1/0)")
    group_ids = None if groups is None else np.asarray(groups, dtype=object)
    rows = np.flatnonzero(used)
    fold_of_row = fold_of_rows(s, y, groups, folds, seed)
    fold_ids = fold_of_row[rows]
    h = s if held_out_scores is None else np.asarray(held_out_scores, dtype=np.float64)
    h = np.where(np.isfinite(h), h, s)
    if rescore is None:
        def rescore(train: np.ndarray, held: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            return s[train], h[held]
    p_after, decided_after = np.full(s.size, np.nan), np.zeros(s.size)
    record = []
    for k in range(int(fold_ids.max()) + 1):
        held, train = rows[fold_ids == k], rows[fold_ids != k]
        train_scores, held_scores = rescore(train, held)
        tuning = tuner(train_scores, y[train], seed)
        p_after[held] = tuning.probabilities(held_scores)
        decided_after[held] = p_after[held] >= tuning.threshold
        record.append({"fold": k, "held_out": held.tolist(), "trained_on": train.tolist(),
                       "tuning": tuning.as_dict()})
    before_threshold = 0.5 if decision_threshold is None else decision_threshold
    columns = {"before": (np.clip(s[rows], 0.0, 1.0), (s[rows] >= before_threshold) * 1.0),
               "after": (p_after[rows], decided_after[rows])}
    by_group = None if group_ids is None else group_ids[rows]
    found = {name: _figures(p, d, y[rows], by_group, alpha, resamples, seed)
             for name, (p, d) in columns.items()}
    test = _paired_kappa_test(columns["before"][1], columns["after"][1], y[rows], by_group,
                              resamples, seed)
    rate = float(y[rows].mean())
    return {
        **found, "paired_test": test,
        "improved": bool(test["p_value"] < alpha and test["difference"] > 0),
        "baseline": {"base_rate": rate, "answer": int(rate >= 0.5),
                     "accuracy": max(rate, 1 - rate), "kappa": 0.0},
        "human_agreement": _human_agreement(y, other_labels),
        "before_threshold": before_threshold, "folds": record,
        "fold_of_row": fold_of_row.tolist(),
        "tuning": tuner(rescore(rows, rows)[0], y[rows], seed).as_dict(),
        "n": int(rows.size), "unused": int(s.size - rows.size), "alpha": alpha, "seed": seed,
        "data_digest": data_digest(s[rows], y[rows]),
    }


def data_digest(scores: np.ndarray, labels: np.ndarray) -> str:
    """sha256 of the (score, label) pairs a tuning was fitted on."""
    pairs = np.stack([np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)])
    return hashlib.sha256(pairs.tobytes()).hexdigest()


def fold_of_rows(scores: Sequence[float], labels: Sequence[float],
                 groups: Sequence[Any] | None, folds: int, seed: int | None) -> np.ndarray:
    """The fold of every row as :func:`align_scores` makes them (-1: a row left out, its
    score or label missing)."""
    s, y = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=np.float64)
    rows = np.flatnonzero(np.isfinite(s) & np.isfinite(y))
    group_ids = None if groups is None else np.asarray(groups, dtype=object)[rows]
    found = np.full(s.size, -1)
    found[rows] = _folds(y[rows], group_ids, folds, seed)
    return found


def _folds(y: np.ndarray, groups: np.ndarray | None, folds: int, seed: int | None
           ) -> np.ndarray:
    """A fold number per row: stratified by label, whole groups kept together with ``groups``
    (scikit-learn's StratifiedKFold / StratifiedGroupKFold, shuffled by ``seed``)."""
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise UserInputError(f"--folds must be an integer of at least 2, got {folds!r}")
    smaller = int(min((y == 1).sum(), (y == 0).sum()))
    k = min(folds, smaller if groups is None else min(smaller, np.unique(groups).size))
    if k < 2:
        raise UserInputError(
            f"align needs at least 2 rows of each label (and of groups) to hold any out (it "
            f"has {int((y == 1).sum())} labelled 1 and "
            f"{int((y == 0).sum())} labelled 0)")
    fold_ids = np.empty(y.size, dtype=int)
    if groups is None:
        splits = StratifiedKFold(k, shuffle=True, random_state=seed).split(y, y)
    else:
        codes = np.unique(groups.astype(str), return_inverse=True)[1]
        splits = StratifiedGroupKFold(k, shuffle=True, random_state=seed).split(y, y, codes)
    for number, (_, held) in enumerate(splits):
        fold_ids[held] = number
    return fold_ids


def _kappa(decided: np.ndarray, labels: np.ndarray) -> float:
    return cohen_kappa(0.5)(np.asarray(decided, dtype=np.float64), labels)


def _statistics() -> dict[str, Callable[[np.ndarray, np.ndarray, np.ndarray], float]]:
    return {"kappa": lambda p, d, y: _kappa(d, y), "auroc": lambda p, d, y: auroc(p, y),
            "brier": lambda p, d, y: brier(p, y),
            "ece": lambda p, d, y: expected_calibration_error(p, y)}


def _figures(p: np.ndarray, decided: np.ndarray, y: np.ndarray, groups: np.ndarray | None,
             alpha: float, resamples: int, seed: int | None) -> dict[str, dict[str, Any]]:
    found = {}
    for name, statistic in _statistics().items():
        value = statistic(p, decided, y)
        low, high, _ = stats.bootstrap_statistic(
            lambda a, b, c, groups=None, statistic=statistic: statistic(a, b, c), p, decided, y,
            groups=groups, confidence=1 - alpha, n_resamples=resamples, seed=seed)
        found[name] = {"value": None if math.isnan(value) else float(value), "low": low,
                       "high": high}
    return found


def _paired_kappa_test(before: np.ndarray, after: np.ndarray, y: np.ndarray,
                       groups: np.ndarray | None, resamples: int, seed: int | None
                       ) -> dict[str, Any]:
    """Paired bootstrap of kappa(after) - kappa(before) on the same resampled rows (groups):
    the two-sided p-value is twice the smaller share of resamples on either side of 0 (with
    the usual +1 so that it is never 0)."""
    difference = _kappa(after, y) - _kappa(before, y)
    differences: list[float] = []

    def paired(b: np.ndarray, a: np.ndarray, labels: np.ndarray, groups: Any = None) -> float:
        differences.append(_kappa(a, labels) - _kappa(b, labels))
        return differences[-1]

    low, high, used = stats.bootstrap_statistic(paired, before, after, y, groups=groups,
                                                n_resamples=resamples, seed=seed)
    values = np.array([d for d in differences if not math.isnan(d)])
    if math.isnan(difference) or values.size == 0:
        return {"statistic": "kappa", "difference": None, "low": None, "high": None,
                "p_value": 1.0, "method": "paired bootstrap", "resamples": 0}
    side = min((values <= 0).sum(), (values >= 0).sum())
    p_value = min(1.0, 2 * (side + 1) / (values.size + 1))
    return {"statistic": "kappa", "difference": float(difference), "low": low, "high": high,
            "p_value": float(p_value), "method": "paired bootstrap", "resamples": int(used)}


def _human_agreement(y: np.ndarray, other: Sequence[float] | None) -> dict[str, Any] | None:
    if other is None:
        return None
    o = np.asarray(other, dtype=np.float64)
    both = np.isfinite(y) & np.isfinite(o)
    value = _kappa(o[both], y[both]) if both.sum() else math.nan
    return {"kappa": None if math.isnan(value) else float(value), "n": int(both.sum())}


def panel_weights(judge_scores: np.ndarray, labels: np.ndarray) -> list[float]:
    """Per-judge weights for a panel's mean, fitted on these rows only: the coefficients of a
    logistic regression of the 0/1 label on the judges' scores (scikit-learn, L2 as its
    default), negatives set to 0 (a judge that ranks against the label gets no say, not a
    negative one), normalised to sum 1; equal weights when none is positive. Rows where a
    judge is unmeasured are left out of the fit."""
    from sklearn.linear_model import LogisticRegression

    z = np.asarray(judge_scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    rows = np.isfinite(z).all(axis=1) & np.isfinite(y)
    equal = [1.0 / z.shape[1]] * z.shape[1]
    if rows.sum() < 2 or np.unique(y[rows]).size < 2:
        return equal
    coefficients = np.clip(LogisticRegression().fit(z[rows], y[rows]).coef_[0], 0.0, None)
    total = coefficients.sum()
    return equal if total <= 0 else (coefficients / total).tolist()


def weighted_mean(judge_scores: np.ndarray, weights: Sequence[float]) -> np.ndarray:
    """Per row, the weighted mean of the judges that measured it (NaN: none did, or only
    judges of weight 0)."""
    z = np.asarray(judge_scores, dtype=np.float64)
    w = np.where(np.isfinite(z), np.asarray(weights, dtype=np.float64), 0.0)
    total = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, (w * np.nan_to_num(z)).sum(axis=1) / total, np.nan)
