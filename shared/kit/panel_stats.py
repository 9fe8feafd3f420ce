"""A panel's numbers: its per-sample score from its judges' scores (mean, median, majority) and
Krippendorff's alpha among the judges, with a seeded bootstrap interval.

Alpha is computed in closed form from per-sample sums (numpy, O(ratings)), so a bootstrap of a
thousand resamples over thousands of samples costs milliseconds; the tests check it against the
``krippendorff`` package. With ``D_o`` the mean squared difference (interval) or the share of
mismatches (nominal) between two ratings of the same sample and ``D_e`` the same between any two
ratings of the pairable samples (those rated by at least two judges),
``alpha = 1 - D_o / D_e`` (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

from .stats import DEFAULT_RESAMPLES, DEFAULT_SEED

#: A tie of a majority vote (as many 1s as 0s) scores this: half the judges said yes.
MAJORITY_TIE = 0.5
_CHUNK_ELEMENTS = 4_000_000


def is_binary(values: Sequence[float]) -> bool:
    """Every value is 0 or 1 (booleans included)."""
    return all(v in (0, 1) for v in values)


def combine(scores: Sequence[float], how: str) -> float:
    """One sample's panel score from its measured judge scores (at least one): ``mean``,
    ``median`` (the mean of the two middle scores for an even count) or ``majority`` (0/1
    scores: the value most judges gave; a tie gives :data:`MAJORITY_TIE`)."""
    if not scores:
        raise ValueError("a panel score needs at least one measured judge score")
    values = [float(score) for score in scores]
    if how == "mean":
        return math.fsum(values) / len(values)
    if how == "median":
        return float(statistics.median(values))
    if how == "majority":
        if not is_binary(values):
            raise ValueError(f"majority takes 0/1 scores, got {values}")
        ones = sum(values)
        if 2 * ones == len(values):
            return MAJORITY_TIE
        return 1.0 if 2 * ones > len(values) else 0.0
    raise ValueError(f"unknown panel aggregate {how!r}: mean, median or majority")


def agreement_level(matrix: np.ndarray) -> str:
    """``"nominal"`` when every rating is 0 or 1 (verdicts), else ``"interval"`` (graded)."""
    values = matrix[~np.isnan(matrix)]
    return "nominal" if np.isin(values, (0.0, 1.0)).all() else "interval"


def _unit_terms(matrix: np.ndarray, level: str) -> tuple[np.ndarray, ...]:
    """Per pairable sample (row with >= 2 ratings): its ratings count ``m``, its observed
    disagreement sum over ordered pairs divided by ``m - 1``, and the sums the expected
    disagreement needs (interval: sum and sum of squares; nominal: count per value)."""
    present = ~np.isnan(matrix)
    m = present.sum(axis=1)
    keep = m >= 2
    matrix, present, m = matrix[keep], present[keep], m[keep].astype(np.float64)
    if level == "interval" and present.any():
        # alpha does not move when every rating moves by one constant: centring them first
        # keeps the sums of squares below from cancelling (ratings near 1e8 differ by 1e-8
        # of themselves, and their squares by 1e-16, float64's resolution)
        matrix = matrix - np.median(matrix[present])
    values = np.where(present, matrix, 0.0)
    if level == "interval":
        s1 = values.sum(axis=1)
        s2 = (values ** 2).sum(axis=1)
        observed = 2.0 * (m * s2 - s1 ** 2) / (m - 1)
        return m, observed, s1, s2
    categories = np.unique(matrix[present])
    counts = np.stack([((matrix == c) & present).sum(axis=1) for c in categories], axis=1) \
        if categories.size else np.zeros((len(m), 0))
    counts = counts.astype(np.float64)
    observed = (m ** 2 - (counts ** 2).sum(axis=1)) / (m - 1)
    return m, observed, counts


def _alpha_from_sums(n: np.ndarray, observed: np.ndarray, level: str,
                     *sums: np.ndarray) -> np.ndarray:
    """Alpha of one or many (weighted) selections of samples, from the summed unit terms."""
    with np.errstate(divide="ignore", invalid="ignore"):
        if level == "interval":
            t1, t2 = sums
            expected_pairs = 2.0 * (n * t2 - t1 ** 2)
        else:
            (counts,) = sums
            expected_pairs = n ** 2 - (counts ** 2).sum(axis=-1)
        alpha = 1.0 - (n - 1) * observed / expected_pairs
    return np.where((n >= 2) & (expected_pairs > 1e-12 * np.maximum(n, 1) ** 2), alpha, np.nan)


LEVELS = ("nominal", "interval")


def _level(level: str | None, data: np.ndarray) -> str:
    """``level``, or :func:`agreement_level`'s; any other level (``"ordinal"``, ``"ratio"``,
    a typo) is refused rather than computed as another."""
    if level is None:
        return agreement_level(data)
    if level not in LEVELS:
        raise ValueError(f"level={level!r}: Krippendorff's alpha is computed here at the "
                         f"{' or '.join(LEVELS)} level only")
    return level


def krippendorff_alpha(matrix: np.ndarray | Sequence[Sequence[float | None]],
                       level: str | None = None) -> float | None:
    """Krippendorff's alpha of ``matrix`` (samples x judges; ``None``/NaN: not rated) at
    ``level`` (``"interval"`` or ``"nominal"``; default :func:`agreement_level`; another level
    is a ``ValueError``). ``None`` when undefined: fewer than two ratings of any sample, or no
    variation among the ratings."""
    data = _as_matrix(matrix)
    level = _level(level, data)
    terms = _unit_terms(data, level)
    if terms[0].size == 0:
        return None
    m, observed, *rest = terms
    value = _alpha_from_sums(np.asarray(m.sum()), np.asarray(observed.sum()), level,
                             *(np.asarray(r.sum(axis=0)) for r in rest))
    return None if np.isnan(value) else float(value)


def alpha_interval(matrix: np.ndarray | Sequence[Sequence[float | None]],
                   level: str | None = None, *, confidence: float = 0.95,
                   n_resamples: int = DEFAULT_RESAMPLES,
                   seed: int | None = DEFAULT_SEED) -> list[float] | None:
    """Percentile bootstrap interval of :func:`krippendorff_alpha`, resampling the pairable
    samples with replacement (seeded); resamples where alpha is undefined are left out.
    ``None`` when alpha is undefined or fewer than half the resamples define it."""
    data = _as_matrix(matrix)
    level = _level(level, data)
    m, observed, *rest = _unit_terms(data, level)
    units = m.size
    if units == 0 or krippendorff_alpha(data, level) is None:
        return None
    rng = np.random.default_rng(seed)
    alphas = np.empty(n_resamples)
    width = units * max(1, rest[0].shape[1] if rest[0].ndim == 2 else 1)
    rows = max(1, _CHUNK_ELEMENTS // width)
    for start in range(0, n_resamples, rows):
        stop = min(n_resamples, start + rows)
        drawn = rng.integers(0, units, size=(stop - start, units))
        alphas[start:stop] = _alpha_from_sums(m[drawn].sum(axis=1), observed[drawn].sum(axis=1),
                                              level, *(r[drawn].sum(axis=1) for r in rest))
    defined = alphas[~np.isnan(alphas)]
    if defined.size < n_resamples / 2:
        return None
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.percentile(defined, [tail, 100 - tail])
    return [float(low), float(high)]


def _as_matrix(matrix: np.ndarray | Sequence[Sequence[float | None]]) -> np.ndarray:
    data = np.array([[np.nan if v is None else float(v) for v in row] for row in matrix],
                    dtype=np.float64) if not isinstance(matrix, np.ndarray) else \
        matrix.astype(np.float64)
    if data.ndim != 2:
        raise ValueError("ratings must be a samples x judges table")
    return data
