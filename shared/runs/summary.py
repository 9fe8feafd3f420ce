"""What a run reports: the per-metric summaries and their plain-text table (shared by the
single-process and the Ray engine, and by compare/agree)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from ..base.errors import UserInputError

# ``from shared.runs.summary import BatchInputError``, the name scripts outside the package use,
# is the user-error type itself.
BatchInputError = UserInputError


@dataclass
class MetricSummary:
    """What one metric did over the whole dataset."""

    metric: str
    aggregates: dict[str, float | None]
    rows: int
    unmeasured: int
    judge: bool
    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0
    cached_prompt_tokens: int = 0  # read from the provider's prompt cache
    cache_saving: float | None = 0.0  # USD the prompt cache saved
    dry_run: dict[str, Any] | None = None
    columns: list[str] = field(default_factory=list)
    seconds: float = 0.0
    invalid_answers: dict[str, int] = field(default_factory=dict)  # unmeasured, per kind
    # a panel of judges: each judge (label, headline over its rows, usage, Cost) and the
    # judges' agreement (shared.runs.panel_columns)
    panel: dict[str, Any] | None = None


@dataclass
class BatchSummary:
    """The result of :func:`score_dataset` besides the scored dataset."""

    metrics: list[MetricSummary]
    skipped: dict[str, str]
    dry_run: bool = False
    ray: dict[str, int] | None = None  # engine="ray": {"workers": ..., "batches": ...}

    def as_dict(self) -> dict[str, Any]:
        return {"metrics": [asdict(m) for m in self.metrics], "skipped": dict(self.skipped),
                "dry_run": self.dry_run}

    def table(self) -> str:
        """A plain-text table of the run (the CLI prints it)."""
        if self.dry_run:
            header = ["metric", "requests", "prompt tokens", "completion tokens", "est. cost"]
            rows = []
            for m in self.metrics:
                plan = m.dry_run or {}
                rows.append([m.metric, _int(plan.get("requests")), _int(plan.get("prompt_tokens")),
                             _int(plan.get("completion_tokens")), _money(plan.get("cost"))])
            total = total_plan(self.metrics)
            rows.append(["total", _int(total["requests"]), _int(total["prompt_tokens"]),
                         _int(total["completion_tokens"]), _money(total["cost"])])
            batch_costs = [(m.dry_run or {}).get("batch_cost") for m in self.metrics]
            if any(cost is not None for cost in batch_costs):
                batch: float | None = 0.0
                for cost in batch_costs:
                    batch = add_cost(batch, cost)
                return (format_table(header, rows)
                        + f"\nthrough the batch API (--batch): est. cost {_money(batch)}")
        else:
            header = ["metric", "aggregate(s)", "rows", "unmeasured", "calls", "cache hits",
                      "cost", "invalid answers"]
            rows = []
            for m in self.metrics:
                aggregates = " ".join(f"{k}={_number(v)}" for k, v in m.aggregates.items())
                judged = ([str(m.calls), str(m.cache_hits), _money(m.cost),
                           _invalid(m.invalid_answers)] if m.judge else ["-"] * 4)
                rows.append([m.metric, aggregates, str(m.rows), str(m.unmeasured), *judged])
            judged_metrics = [m for m in self.metrics if m.judge]
            if judged_metrics:  # what the run sent: 0 on a rerun (docs/RELIABILITY.md)
                cost: float | None = 0.0
                for m in judged_metrics:
                    cost = add_cost(cost, m.cost)
                rows.append(["total", "", "", "", str(sum(m.calls for m in judged_metrics)),
                             str(sum(m.cache_hits for m in judged_metrics)), _money(cost), ""])
                cached = sum(m.cached_prompt_tokens for m in judged_metrics)
                if cached:
                    saving: float | None = 0.0
                    for m in judged_metrics:
                        saving = add_cost(saving, m.cache_saving)
                    return (format_table(header, rows) + f"\nprompt cache: {cached} prompt "
                            f"tokens read from the provider's cache, {_money(saving)} saved")
        return format_table(header, rows)


def total_plan(metrics: Iterable[MetricSummary]) -> dict[str, Any]:
    total: dict[str, Any] = {"requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
                             "cost": 0.0}
    for m in metrics:
        plan = m.dry_run or {}
        for key in ("requests", "prompt_tokens", "completion_tokens"):
            total[key] += int(plan.get(key) or 0)
        total["cost"] = add_cost(total["cost"], plan.get("cost"))
    return total


def _invalid(counts: Mapping[str, int]) -> str:
    """``copied_example=2,placeholder_reason=1`` (the non-zero kinds), or ``0``."""
    shown = ",".join(f"{kind}={count}" for kind, count in counts.items() if count)
    return shown or "0"


def add_cost(total: float | None, cost: Any) -> float | None:
    if total is None or not is_number(cost):
        return None
    return total + float(cost)


def _int(value: Any) -> str:
    return "-" if value is None else f"{int(value):,}"


def _money(value: Any) -> str:
    return "unknown" if value is None else f"${float(value):.4f}"


def _number(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def format_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
             for row in [header, [("-" * w) for w in widths], *rows]]
    return "\n".join(lines)


def is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return True
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError):
        return False
