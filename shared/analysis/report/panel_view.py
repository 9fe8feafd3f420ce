"""A panel of judges in the run report: each judge's score column beside the panel's, the
spread between the judges per row, the rows where they disagree most, and each judge's
summary with the judges' agreement."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: The share of a panel's rows highlighted as the judges' largest disagreements (at least one).
HIGHLIGHTED_SHARE = 0.1


def judge_columns(columns: Sequence[str], metrics: Sequence[str]) -> dict[str, list[str]]:
    """metric -> its judges' score columns (``<metric>_judge_1``, ...) present, in order."""
    from ...runs.panel_columns import judge_column_index

    found: dict[str, list[str]] = {}
    for metric in metrics:
        indexed = sorted((index, column) for column in columns
                         if (index := judge_column_index(metric, str(column))) is not None)
        if len(indexed) >= 2:
            found[metric] = [column for _, column in indexed]
    return found


def spread_column(metric: str) -> str:
    return f"{metric}_judge_spread"


def spread(values: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, the largest minus the smallest judge score (NaN where fewer than two judges
    measured the row)."""
    table = np.vstack(values).astype(np.float64)
    finite = np.isfinite(table)
    high = np.where(finite, table, -np.inf).max(axis=0)
    low = np.where(finite, table, np.inf).min(axis=0)
    return np.where(finite.sum(axis=0) >= 2, high - low, np.nan)


def most_disagreeing(gaps: np.ndarray, share: float = HIGHLIGHTED_SHARE) -> set[int]:
    """The rows whose spread is among the largest ``share`` (at least one row; a spread of 0
    never counts)."""
    rows = np.flatnonzero(np.isfinite(gaps) & (gaps > 0))
    if rows.size == 0:
        return set()
    count = max(1, int(np.ceil(share * np.isfinite(gaps).sum())))
    ordered = rows[np.argsort(-gaps[rows], kind="stable")]
    return set(ordered[:count].tolist())


def panel_cards(metric: str, columns: Sequence[str], values: Mapping[str, np.ndarray],
                summary: Any, highlighted: int) -> dict[str, Any]:
    """The report's block of one metric's panel: per judge its column, name, mean score and
    (from the run's summary, when known) unmeasured rows, calls, cache hits and cost; the
    judges' alpha."""
    panel = getattr(summary, "panel", None) or {}
    known = panel.get("judges") or []
    judges = []
    for index, column in enumerate(columns):
        judge = known[index] if index < len(known) else {}
        measured = values[column][np.isfinite(values[column])]
        cost = judge.get("cost")
        judges.append({
            "column": column, "judge": judge.get("judge") or f"judge {index + 1}",
            "score": float(measured.mean()) if measured.size else None,
            "unmeasured": judge.get("unmeasured"), "calls": judge.get("calls"),
            "cache_hits": judge.get("cache_hits"),
            "cost": "—" if not judge else ("unknown" if cost is None else f"${cost:.4f}")})
    if "judge_agreement" in panel:
        alpha, ci, level = (panel.get(k) for k in ("judge_agreement", "judge_agreement_ci",
                                                   "judge_agreement_level"))
    else:  # a report of rows alone: the judges' alpha from their columns
        from ...kit.panel import panel_agreement

        agreement = panel_agreement([[None if not np.isfinite(v) else float(v)
                                      for v in values[c]] for c in columns])
        alpha, ci, level = (agreement[k] for k in ("judge_agreement", "judge_agreement_ci",
                                                   "judge_agreement_level"))
    return {"metric": metric, "judges": judges, "alpha": alpha, "ci": ci, "level": level,
            "spread_column": spread_column(metric), "highlighted": highlighted}
