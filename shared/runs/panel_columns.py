"""A panel of judges over a whole dataset: each judge's per-row score as a column of its own
(``<metric>_judge_1``, ``<metric>_judge_2``, ...), each judge's run accounted, and the judges'
agreement over every row (a chunk's alpha would be an alpha of 32 rows).

:func:`judge_columns` and :func:`add_judges` run per chunk (from ``chunks.score_chunk``),
:func:`finish_panel` once per metric after the last chunk; the reports read the columns. On Ray,
each batch sends its per-judge accounting and columns to the driver's tally
(:func:`panel_counts`, :func:`add_panel_counts`), which finishes them the same way
(:func:`finish_panel_counts`)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..kit.panel import panel_agreement
from ..kit.results import mean_measured
from .summary import MetricSummary, add_cost

_USAGE_KEYS = ("calls", "cache_hits", "prompt_tokens", "completion_tokens")


def judge_column(name: str, index: int) -> str:
    """The column of judge ``index`` (0-based) of metric ``name``'s panel."""
    return f"{name}_judge_{index + 1}"


def judge_column_index(name: str, column: str) -> int | None:
    """The 0-based judge of a :func:`judge_column` name, ``None`` for any other column."""
    found = re.fullmatch(re.escape(name) + r"_judge_(\d+)", column)
    return int(found[1]) - 1 if found else None


def judge_columns(name: str, row_details: Sequence[Any], judges: int) -> dict[str, list[Any]]:
    """Each judge's per-row score from the rows' ``judge_scores`` (``None``: unmeasured)."""
    scores = [(d.get("judge_scores") if isinstance(d, Mapping) else None) or [None] * judges
              for d in row_details]
    return {judge_column(name, k): [row[k] for row in scores] for k in range(judges)}


def add_judges(summary: MetricSummary, judges: Sequence[Mapping[str, Any]]) -> None:
    """Add one chunk's per-judge accounting (its output's ``judges``) to ``summary.panel``."""
    panel = summary.panel or {"judges": [
        {"judge": j.get("judge"), "provider": j.get("provider"), "model": j.get("model"),
         "base_url": j.get("base_url"), "unmeasured": 0, **dict.fromkeys(_USAGE_KEYS, 0),
         "cost": 0.0} for j in judges]}
    for total, judge in zip(panel["judges"], judges, strict=True):
        total["unmeasured"] += int(judge.get("unmeasured") or 0)
        usage = judge.get("usage") or {}
        for key in _USAGE_KEYS:
            total[key] += int(usage.get(key) or 0)
        total["cost"] = add_cost(total["cost"], judge.get("Cost"))
    summary.panel = panel


def finish_panel(name: str, columns: Mapping[str, list[Any]], summary: MetricSummary) -> None:
    """After the last chunk: each judge's headline over its rows and the judges' agreement
    over every row (``judge_agreement`` also among the summary's aggregates, so a gate can
    name it)."""
    if not summary.panel:
        return
    judged = [columns[judge_column(name, k)] for k in range(len(summary.panel["judges"]))]
    for total, scores in zip(summary.panel["judges"], judged, strict=True):
        total["score"] = mean_measured(scores)
    agreement = panel_agreement(judged)
    summary.panel.update(agreement)
    summary.aggregates["judge_agreement"] = agreement["judge_agreement"]


def panel_counts(name: str, summary: MetricSummary,
                 columns: Mapping[str, list[Any]]) -> dict[str, Any]:
    """One Ray batch's part of a panel: its per-judge accounting and judge columns (``{}``
    without a panel)."""
    if not summary.panel:
        return {}
    judged = {column: list(columns[column]) for column in
              (judge_column(name, k) for k in range(len(summary.panel["judges"])))}
    return {"panel": summary.panel, "judge_scores": judged}


def add_panel_counts(total: dict[str, Any], counts: Mapping[str, Any]) -> None:
    """Add one Ray batch's :func:`panel_counts` to the metric's ``total``."""
    panel = counts.get("panel")
    if not panel:
        return
    if "panel" not in total:
        total["panel"] = {"judges": [dict(judge) for judge in panel["judges"]]}
        total["judge_scores"] = {column: list(values)
                                 for column, values in counts["judge_scores"].items()}
        return
    for into, judge in zip(total["panel"]["judges"], panel["judges"], strict=True):
        for key in ("unmeasured", *_USAGE_KEYS):
            into[key] += judge[key]
        into["cost"] = add_cost(into["cost"], judge["cost"])
    for column, values in counts["judge_scores"].items():
        total["judge_scores"][column].extend(values)


def finish_panel_counts(name: str, total: Mapping[str, Any], summary: MetricSummary) -> None:
    """The Ray tally's panel as :func:`finish_panel` leaves a single-process one."""
    if "panel" not in total:
        return
    summary.panel = {"judges": [dict(judge) for judge in total["panel"]["judges"]]}
    finish_panel(name, total["judge_scores"], summary)
    summary.columns += list(total["judge_scores"])
