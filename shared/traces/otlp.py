"""OTLP JSON as the OpenTelemetry Collector's file exporter writes it: one
``ExportTraceServiceRequest`` (``{"resourceSpans": [...]}``) or ``ExportLogsServiceRequest``
(``{"resourceLogs": [...]}``) per line, traces and logs mixed in one file when the Collector
exports both there. Plain JSON: no OpenTelemetry package is needed to read it.

Log records (and span events) are joined to their span by trace and span id: an instrumentation
that writes message content as events (the official openai instrumentation's default) puts it
there, not on the span. A record's name is its ``eventName`` field, else its ``event.name``
attribute. Fields are read by their JSON names (``traceId``) or their proto names
(``trace_id``), both of which proto3's JSON mapping accepts."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..base.errors import UserInputError
from .spans import Record, Span, any_value, field, hex_id, key_values


def _nanos(value: Any) -> int | None:
    try:
        number = int(value)
    except (TypeError, ValueError):
        return None
    return number or None


def _documents(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """``(line number, request)`` for each request of the file: one per line, or the whole
    file as one JSON document (a request written with indentation)."""
    text = path.read_text(encoding="utf-8")
    lines = [(n, line) for n, line in enumerate(text.splitlines(), 1) if line.strip()]
    try:
        parsed = [(n, json.loads(line)) for n, line in lines]
    except ValueError:
        try:
            parsed = [(1, json.loads(text))]
        except ValueError as error:
            raise UserInputError(f"{path}: not OTLP JSON (one JSON request per line): "
                                 f"{error}") from None
    for n, document in parsed:
        for item in document if isinstance(document, list) else [document]:
            if not isinstance(item, Mapping):
                raise UserInputError(f"{path}, line {n}: not an OTLP JSON request")
            yield n, item


def read_spans(paths: Path | list[Path]) -> list[Span]:
    """Every span of the file (or files: a Collector's rotated ones), in file order, with the
    log records and span events that belong to it, wherever they were written."""
    spans: list[Span] = []
    logs: dict[tuple[str, str], list[Record]] = {}
    for path, n, request in ((p, n, r) for p in ([paths] if isinstance(paths, Path) else paths)
                             for n, r in _documents(p)):
        if field(request, "resourceSpans") is None and field(request, "resourceLogs") is None:
            raise UserInputError(f"{path}, line {n}: neither resourceSpans nor resourceLogs: "
                                 "not an OTLP JSON export")
        for resource in field(request, "resourceSpans") or ():
            for scope in field(resource, "scopeSpans") or field(
                    resource, "instrumentationLibrarySpans") or ():
                spans.extend(_span(raw) for raw in field(scope, "spans") or ())
        for resource in field(request, "resourceLogs") or ():
            for scope in field(resource, "scopeLogs") or ():
                for raw in field(scope, "logRecords") or ():
                    key = (hex_id(field(raw, "traceId")), hex_id(field(raw, "spanId")))
                    if key[0] and key[1]:
                        logs.setdefault(key, []).append(_log_record(raw))
    for span in spans:
        span.records.extend(logs.get((span.trace_id, span.span_id), ()))
    return [span for span in spans if span.trace_id and span.span_id]


def _span(raw: Mapping[str, Any]) -> Span:
    records: list[Record] = []
    for event in field(raw, "events") or ():
        attributes = key_values(field(event, "attributes"))
        records.append((str(field(event, "name") or ""), attributes, attributes))
    return Span(trace_id=hex_id(field(raw, "traceId")) or "",
                span_id=hex_id(field(raw, "spanId")) or "",
                parent_id=hex_id(field(raw, "parentSpanId")),
                name=str(field(raw, "name") or ""),
                start_ns=_nanos(field(raw, "startTimeUnixNano")),
                end_ns=_nanos(field(raw, "endTimeUnixNano")),
                attributes=key_values(field(raw, "attributes")), records=records)


def _log_record(raw: Mapping[str, Any]) -> Record:
    attributes = key_values(field(raw, "attributes"))
    name = field(raw, "eventName") or attributes.get("event.name") or ""
    return str(name), attributes, any_value(field(raw, "body"))
