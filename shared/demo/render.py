"""Results -> page: the aggregate cards, the per-row table and chart, the usage and unmeasured
rows in markdown, the status box and the text of an error."""

from __future__ import annotations

import html
import itertools
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..base.validation import InputError, where
from ..kit.registry import MetricSpec
from ..kit.results import aggregates_of, results_of
from .inputs import DemoInputError
from .keys import Scrubber

MAX_CELL_CHARS = 120  # input text shown in the per-row results table


def show(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, float):
        return f"{value:.4f}" if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(show(v) for v in value) + "]"
    return str(value)


def _describe(value: Any) -> str:
    """A compact, readable text of a per-row detail (verdicts, reasons, similarities...)."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k}: {_describe(v)}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        if value and all(isinstance(v, Mapping) for v in value):
            return " | ".join(_describe(v) for v in value)
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    return show(value)


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and math.isfinite(value):
        return float(value)
    return None


def _rounded(value: Any) -> float | None:
    number = _number(value)
    return None if number is None else round(number, 4)


def _is_pair_of_numbers(value: Any) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 2 and all(
        _number(v) is not None for v in value)


def aggregates(result: Mapping[str, Any]) -> dict[str, Any]:
    """The run's values shown beside the headline: the output's aggregates (not its per-sample
    lists) that are a number, a string, ``None`` or a pair of numbers (an interval)."""
    return {key: value for key, value in aggregates_of(result).items()
            if key not in ("unmeasured", "usage", "dry_run")
            and (value is None or isinstance(value, (str, int, float))
                 or _is_pair_of_numbers(value))}


def row_columns(result: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The per-row columns, from the output's per-sample results: ``scores`` (one column per
    score for a metric with several, as ROUGE), then the details: one ``details`` column when
    the output reports them as one list, else one column per detail."""
    results = results_of(result)
    columns: dict[str, list[Any]] = {}
    keys = list(dict.fromkeys(key for r in results for key in r.scores))
    if keys:
        for key in keys:
            columns[key] = [r.scores.get(key) for r in results]
    else:
        columns["scores"] = [r.score for r in results]
    if "details" in getattr(result, "per_sample_keys", ()):
        columns["details"] = [dict(r.details) for r in results]
    else:
        for key in dict.fromkeys(key for r in results for key in r.details):
            columns[key] = [r.details.get(key) for r in results]
    return columns


def row_scores(spec: MetricSpec, per_row: Mapping[str, list[Any]]) -> tuple[str, list[Any]] | None:
    """The per-row values the chart shows: the first headline score's (``scores`` for a
    metric with one score)."""
    for key in (*spec.headline, "scores"):
        if key in per_row:
            return key, list(per_row[key])
    return None


def score_histogram(values: Sequence[Any]) -> list[tuple[str, int]]:
    """(bin label, rows) pairs: one bar per value when there are few distinct integers (e.g.
    1-5 ratings), otherwise ten equal bins over [0, 1] (widened to the data's range)."""
    numbers = [v for v in (_number(x) for x in values) if v is not None]
    if not numbers:
        return []
    distinct = sorted(set(numbers))
    if len(distinct) <= 10 and all(v.is_integer() for v in distinct) and max(distinct) > 1:
        return [(f"{v:g}", numbers.count(v)) for v in distinct]
    low, high = min(0.0, min(numbers)), max(1.0, max(numbers))
    width = (high - low) / 10
    counts = [0] * 10
    for v in numbers:
        counts[min(9, int((v - low) / width))] += 1
    return [(f"{low + i * width:.1f}–{low + (i + 1) * width:.1f}", c)
            for i, c in enumerate(counts)]


_CARD = ("display:inline-block;margin:0 12px 12px 0;padding:12px 18px;border-radius:10px;"
         "border:1px solid #d0d7de;min-width:140px;vertical-align:top")


def aggregate_html(spec: MetricSpec, aggregates: Mapping[str, Any], measured: int, total: int,
                   scrub: Scrubber) -> str:
    cards = []
    for key in spec.headline:
        if key in aggregates:
            value = aggregates[key]
            shown = "None (no row measured)" if value is None else show(value)
            cards.append(
                f'<div class="jm-headline" style="{_CARD};background:#f6f8fa">'
                f'<div style="font-size:0.9em;opacity:0.75">{html.escape(key)}</div>'
                f'<div class="jm-value" data-key="{html.escape(key)}" '
                f'style="font-size:2em;font-weight:700">{html.escape(scrub.text(shown))}</div></div>'
            )
    others = [f'<span style="opacity:0.7">{html.escape(k)}</span> '
              f"{html.escape(scrub.text(show(v)))}"
              for k, v in aggregates.items() if k not in spec.headline and k != "Cost"]
    measured_text = f"{measured} of {total} rows measured"
    return (
        f'<div class="jm-aggregate">{"".join(cards)}'
        f'<div style="opacity:0.8">{html.escape(measured_text)}</div>'
        + (f'<div style="margin-top:6px">{" · ".join(others)}</div>' if others else "")
        + "</div>"
    )


_RUNS = itertools.count(1)


def status_html(message: str, level: str) -> str:
    """The status box; ``data-run`` differs on every call, so a repeated message still
    re-renders (a browser test waits for the box to come back)."""
    colours = {"error": ("#fff1f0", "#cf222e"), "warning": ("#fff8c5", "#9a6700"),
               "ok": ("#dafbe1", "#1a7f37")}
    background, border = colours[level]
    return (f'<div class="jm-status jm-{level}" data-run="{next(_RUNS)}" '
            f'role="{"alert" if level != "ok" else "status"}" '
            f'style="padding:10px 14px;border-radius:8px;background:{background};'
            f'border-left:5px solid {border};color:#1f2328">{html.escape(message)}</div>')


def _row_hint(error: Exception, spec: MetricSpec, rows: Sequence[int]) -> str:
    """The message of ``error``; for an :class:`InputError` at a sample of a table column, with
    the table row and the column named after where it is."""
    columns = {**spec.columns, **spec.optional_columns}
    if (isinstance(error, InputError) and error.argument in columns
            and error.sample is not None and error.sample < len(rows)):
        return (f"{where(error.argument, error.index)} (table row {rows[error.sample]}, column "
                f"'{columns[error.argument]}') {error.reason}")
    return str(error)


def usage_markdown(result: Mapping[str, Any]) -> str:
    parts = []
    usage = result.get("usage")
    if isinstance(usage, Mapping):
        parts.append("**Usage:** " + ", ".join(f"{k.replace('_', ' ')} {v}"
                                              for k, v in usage.items()))
    if "Cost" in result:
        cost = result["Cost"]
        parts.append("**Cost:** " + ("unknown (no price for this model)" if cost is None
                                      else f"${cost:.6f}"))
    plan = result.get("dry_run")
    if isinstance(plan, Mapping):
        parts.append("**Dry run (nothing sent):** " + ", ".join(
            f"{k.replace('_', ' ')} {show(v)}" for k, v in plan.items()))
    return "  \n".join(parts)


def unmeasured_markdown(result: Mapping[str, Any], rows: Sequence[int], scrub: Scrubber) -> str:
    unmeasured = result.get("unmeasured") or []
    if not unmeasured:
        return ""
    lines = [f"**Unmeasured rows ({len(unmeasured)})**: not counted in the aggregate."]
    invalid = {k: v for k, v in (result.get("invalid_answers") or {}).items() if v}
    if invalid:  # the grounding checks' counts (docs/GROUNDING.md)
        counts = ", ".join(f"{kind.replace('_', ' ')}: {count}" for kind, count in invalid.items())
        lines.append(f"Invalid judge answers ({_escape_markdown(counts)}).")
    for item in unmeasured:
        index = item.get("index", -1)
        row = rows[index] if isinstance(index, int) and 0 <= index < len(rows) else index
        reason = scrub.text(str(item.get("reason", ""))).replace("\n", " ")
        lines.append(f"- table row {row}: {_escape_markdown(reason)}")
    return "\n".join(lines)


def _escape_markdown(text: str) -> str:
    return html.escape(re.sub(r"([\\`*_{}\[\]<>#|])", r"\\\1", text))


def results_frame(spec: MetricSpec, inputs: Mapping[str, list[Any]], rows: Sequence[int],
                  result: Mapping[str, Any], per_row: Mapping[str, list[Any]],
                  scrub: Scrubber) -> Any:
    """The per-row table: table row, the inputs (shortened), scores, details, unmeasured."""
    import pandas as pd

    columns = {**spec.columns, **spec.optional_columns}
    frame: dict[str, list[Any]] = {"row": list(rows)}
    for argument, values in inputs.items():
        texts = [v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for v in values]
        frame[columns.get(argument, argument)] = [
            t if len(t) <= MAX_CELL_CHARS else t[: MAX_CELL_CHARS - 1] + "…" for t in texts]
    for key, values in per_row.items():
        if all(v is None or _number(v) is not None for v in values):
            frame[key] = [_rounded(v) for v in values]
        else:
            frame[key] = [scrub.text(_describe(v)) for v in values]
    reasons = {item.get("index"): scrub.text(str(item.get("reason", "")))
               for item in result.get("unmeasured") or []}
    if reasons:
        frame["unmeasured"] = [reasons.get(i, "") for i in range(len(rows))]
    return pd.DataFrame(frame)


def error_text(error: Exception, spec: MetricSpec, rows: Sequence[int]) -> str:
    if isinstance(error, DemoInputError):
        return f"Input error: {error}"
    message = _row_hint(error, spec, rows)
    if isinstance(error, (ValueError, TypeError)):
        return f"Input error: {message}"
    return f"The metric failed ({type(error).__name__}): {message}"
