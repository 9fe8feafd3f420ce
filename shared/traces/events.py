"""Scores written back beside the traces: one result per scored (span, score column), as the
OpenTelemetry GenAI ``gen_ai.evaluation.result`` event, in OTLP JSON logs (one
``ExportLogsServiceRequest`` per line, what a Collector's OTLP JSON file receiver reads):

- ``gen_ai.evaluation.name``: the score column (the metric's name; ``rouge1``... for a metric
  with several scores);
- ``gen_ai.evaluation.score.value``: the score; absent on a span the metric left unmeasured;
- ``gen_ai.evaluation.score.label``: ``pass`` or ``fail`` where the metric decides (its
  decision threshold: at or above it, or below it for a metric where lower is better);
- ``gen_ai.evaluation.explanation``: the judge's reason where it gives one, or why the span is
  unmeasured;
- the record's ``traceId`` and ``spanId``: the evaluated span's.
The same results go to Phoenix as span annotations (:mod:`.phoenix`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..kit.registry import METRICS
from ..runs.chunks import score_column_names

EVENT = "gen_ai.evaluation.result"
SCOPE = "judge-metrics"


def _label(name: str, score: float | None) -> str | None:
    spec = METRICS[name]
    if score is None or spec.decision_threshold is None:
        return None
    positive = score >= spec.decision_threshold
    return "pass" if positive != spec.lower_is_better else "fail"


def _details(cell: Any) -> dict[str, Any]:
    if isinstance(cell, str):
        try:
            cell = json.loads(cell)
        except ValueError:
            return {}
    return cell if isinstance(cell, dict) else {}


def evaluation_results(scored: Any, metrics: Iterable[str]) -> list[dict[str, Any]]:
    """``{"trace_id", "span_id", "name", "score", "label", "explanation"}`` for each row of
    ``scored`` (a scored trace dataset) and each score column of ``metrics``; ``score`` ``None``
    where unmeasured."""
    columns = scored.column_names
    out = []
    for name in metrics:
        score_columns = score_column_names(name, METRICS[name])
        details_column = f"{name}_details"
        if details_column not in columns:
            continue
        details = [_details(cell) for cell in scored[details_column]]
        for column in score_columns.values():
            values = scored[column]
            for index, (trace_id, span_id) in enumerate(zip(scored["trace_id"],
                                                             scored["span_id"], strict=True)):
                value = values[index]
                detail = details[index]
                reason = detail.get("unmeasured") if value is None else detail.get("reason")
                out.append({"trace_id": trace_id, "span_id": span_id, "name": column,
                            "score": None if value is None else float(value),
                            "label": _label(name, value),
                            "explanation": reason if isinstance(reason, str) else None})
    return out


def _attribute(key: str, value: Any) -> dict[str, Any]:
    kind = "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: value}}


def event_request(result: Mapping[str, Any], nanos: int | None = None) -> dict[str, Any]:
    """One result as an ``ExportLogsServiceRequest`` holding its one log record."""
    stamp = str(nanos if nanos is not None else time.time_ns())
    attributes = [_attribute("event.name", EVENT),
                  _attribute("gen_ai.evaluation.name", result["name"])]
    for key, field in (("gen_ai.evaluation.score.value", "score"),
                       ("gen_ai.evaluation.score.label", "label"),
                       ("gen_ai.evaluation.explanation", "explanation")):
        if result.get(field) is not None:
            attributes.append(_attribute(key, result[field]))
    record = {"timeUnixNano": stamp, "observedTimeUnixNano": stamp, "severityNumber": 9,
              "severityText": "INFO", "eventName": EVENT, "attributes": attributes,
              "traceId": result["trace_id"], "spanId": result["span_id"]}
    return {"resourceLogs": [{
        "resource": {"attributes": [_attribute("service.name", SCOPE)]},
        "scopeLogs": [{"scope": {"name": SCOPE}, "logRecords": [record]}]}]}


def write_events(path: Path, results: Iterable[Mapping[str, Any]]) -> int:
    """Write the results to ``path`` (replaced), one request per line; their number."""
    lines = [json.dumps(event_request(result), ensure_ascii=False) for result in results]
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    temporary.replace(path)
    return len(lines)
