"""The paired statistics of two runs' scores on the same rows: delta with a paired-bootstrap
interval, exact McNemar (0/1 scores) or Wilcoxon signed-rank (graded ones), wins/ties/losses,
and Holm's adjustment across a report's score columns (scipy; Holm's rule written out)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..kit import stats

DEFAULT_RESAMPLES = 2000
MCNEMAR = "exact McNemar (two-sided binomial test on discordant pairs)"
WILCOXON = "Wilcoxon signed-rank (two-sided; zero differences dropped)"


def compare_scores(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    *,
    higher_is_better: bool = True,
    confidence: float = 0.95,
    n_resamples: int = DEFAULT_RESAMPLES,
    seed: int | None = stats.DEFAULT_SEED,
) -> dict[str, Any]:
    """The paired statistics of two equally long score arrays with no missing value."""
    from scipy import stats as sps

    first = np.asarray(a, dtype=np.float64)
    second = np.asarray(b, dtype=np.float64)
    n = int(first.size)
    out: dict[str, Any] = {"n_paired": n, "mean_a": None, "mean_b": None, "delta": None,
                           "low": None, "high": None, "test": None, "statistic": None,
                           "p_value": None, "wins": 0, "ties": 0, "losses": 0, "note": "",
                           "kind": _kind(first, second)}
    if n == 0:
        out["note"] = "no pair measured in both runs"
        return out
    diff = second - first
    better = diff if higher_is_better else -diff
    out.update(mean_a=float(first.mean()), mean_b=float(second.mean()), delta=float(diff.mean()),
               wins=int(np.count_nonzero(better > 0)), ties=int(np.count_nonzero(better == 0)),
               losses=int(np.count_nonzero(better < 0)))
    out["low"], out["high"] = stats.paired_difference_ci(
        first, second, confidence=confidence, n_resamples=n_resamples, seed=seed)
    if out["kind"] == "binary":
        up = int(np.count_nonzero(diff > 0))
        down = int(np.count_nonzero(diff < 0))
        out["test"] = MCNEMAR
        out["statistic"] = float(up)
        if up + down == 0:
            out["p_value"] = 1.0
            out["note"] = "no discordant pair"
        else:
            out["p_value"] = float(sps.binomtest(up, up + down, 0.5).pvalue)
    else:
        out["test"] = WILCOXON
        if not np.any(diff != 0):
            out["p_value"] = 1.0
            out["note"] = "every pair ties"
        else:
            result = sps.wilcoxon(second, first)
            out["statistic"] = float(result.statistic)
            out["p_value"] = float(result.pvalue)
    return out


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values (Holm 1979): the i-th smallest of m times
    (m - i + 1), made non-decreasing in that order, at most 1; ``None`` stays ``None``.

    Written out rather than taken from statsmodels' ``multipletests``, which gives the same
    values (the tests compare them) but runs a full ``gc.collect()`` on every Holm call: 0.3 s a
    call in a process with torch and gradio loaded, and a minute of this project's test suite.
    """
    present = [i for i, p in enumerate(p_values) if p is not None]
    adjusted: list[float | None] = [None] * len(p_values)
    if not present:
        return adjusted
    p = np.array([float(p_values[i]) for i in present])
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, np.maximum.accumulate(p[order] * (p.size - np.arange(p.size))))
    for rank, index in enumerate(order):
        adjusted[present[index]] = float(stepped[rank])
    return adjusted


def _kind(a: np.ndarray, b: np.ndarray) -> str:
    both = np.concatenate([a, b])
    return "binary" if both.size and np.all((both == 0) | (both == 1)) else "graded"
