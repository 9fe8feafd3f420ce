"""Phoenix both ways (``score --phoenix URL --project NAME``): a project's spans read through
Phoenix's client API (``arize-phoenix-client``, the ``traces`` extra) into the same rows as a
trace file's, and the scores logged back as span annotations (name = score column, score,
label, explanation). Every annotation carries the identifier ``judge-metrics``, on which Phoenix
keeps one annotation per span and name, so a rerun updates the annotations instead of adding
more."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..base.errors import UserInputError
from .openinference import KIND
from .rows import Row, conversation_rows, nanos_of, span_rows
from .spans import Record, Span, hex_id

IDENTIFIER = "judge-metrics"
MAX_SPANS = 1_000_000
_BATCH = 100


def _client(url: str) -> Any:
    try:
        from phoenix.client import Client
    except ImportError:
        raise UserInputError("--phoenix needs Phoenix's client: pip install "
                             "'judge-metrics[traces]'") from None
    return Client(base_url=url)


def _errors(url: str, what: str, error: Exception) -> UserInputError:
    response = getattr(error, "response", None)
    status = f" (HTTP {response.status_code})" if response is not None else ""
    first_line = (str(error).splitlines() or [type(error).__name__])[0]
    return UserInputError(f"Phoenix at {url}: cannot {what}{status}: {first_line}")


def flattened(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested attributes (``{"llm": {"input_messages": [{"message": ...}]}}``, as Phoenix may
    return them) as OpenTelemetry's flat keys (``llm.input_messages.0.message.role``); flat
    ones as they are."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flattened(item, f"{prefix}{key}."))
        return out
    if isinstance(value, list) and any(isinstance(v, Mapping) for v in value):
        out = {}
        for index, item in enumerate(value):
            out.update(flattened(item, f"{prefix}{index}."))
        return out
    return {prefix[:-1]: value}


def as_span(raw: Mapping[str, Any]) -> Span:
    """A span of Phoenix's REST API (``context``, ``parent_id``, ``attributes``, ``events``)."""
    context = raw.get("context") or {}
    records: list[Record] = []
    for event in raw.get("events") or ():
        attributes = flattened(event.get("attributes") or {})
        records.append((str(event.get("name") or ""), attributes, attributes))
    attributes = flattened(raw.get("attributes") or {})
    kind = raw.get("span_kind")
    if isinstance(kind, str) and kind.upper() != "UNKNOWN":  # Phoenix keeps the kind apart
        attributes.setdefault(KIND, kind.upper())
    return Span(trace_id=hex_id(context.get("trace_id")) or "",
                span_id=hex_id(context.get("span_id")) or "",
                parent_id=hex_id(raw.get("parent_id")), name=str(raw.get("name") or ""),
                start_ns=nanos_of(raw.get("start_time")), end_ns=nanos_of(raw.get("end_time")),
                attributes=attributes, records=records)


def read_project(url: str, project: str, *, by: str = "span") -> list[Row]:
    """The rows of Phoenix project ``project`` at ``url``: one per LLM span, or per
    conversation (``by="conversation"``)."""
    client = _client(url)
    try:
        spans = client.spans.get_spans(project_identifier=project, limit=MAX_SPANS)
    except Exception as error:  # httpx's errors, the client's ValueError
        raise _errors(url, f"read the spans of project {project!r}", error) from None
    rows = span_rows(as_span(raw) for raw in spans)
    return conversation_rows(rows) if by == "conversation" else rows


def annotations(results: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The results (:func:`judge_metrics.traces.events.evaluation_results`) as Phoenix span
    annotations; an unmeasured one keeps its reason as the explanation, with no score."""
    from ..kit.registry import METRICS

    out = []
    for result in results:
        answer = {key: result[key] for key in ("score", "label", "explanation")
                  if result.get(key) is not None}
        if not answer:
            continue
        metric = next((name for name in METRICS if result["name"] == name
                       or result["name"].startswith(name)), None)
        kind = "LLM" if metric is not None and METRICS[metric].judge else "CODE"
        out.append({"name": result["name"], "span_id": result["span_id"],
                    "annotator_kind": kind, "identifier": IDENTIFIER, "result": answer,
                    "metadata": {"unmeasured": result.get("score") is None}})
    return out


def log_annotations(url: str, project: str, results: Iterable[Mapping[str, Any]]) -> int:
    """Log the results to Phoenix as span annotations; how many were logged."""
    client = _client(url)
    items = annotations(results)
    try:
        for start in range(0, len(items), _BATCH):
            client.spans.log_span_annotations(span_annotations=items[start:start + _BATCH],
                                              sync=True)
    except Exception as error:
        raise _errors(url, f"log annotations to project {project!r}", error) from None
    return len(items)
