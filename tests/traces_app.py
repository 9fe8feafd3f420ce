"""An application instrumented as teams instrument theirs, run by the trace tests in a process
of its own (the instrumentations read their settings from the environment once):

    python tests/traces_app.py FAMILY MODEL_URL OUT.jsonl [--hide] [--phoenix URL PROJECT]

FAMILY ``genai`` (``opentelemetry-instrumentation-openai-v2``; its content capture and
convention form come from ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` and
``OTEL_SEMCONV_STABILITY_OPT_IN``) or ``openinference`` (``openinference-instrumentation-openai``;
``--hide`` hides inputs and outputs). The real ``openai`` client talks to the loopback model at
MODEL_URL (tests/fakes/chat_model.py) in three scenes: a plain question, a tool-calling agent
(two calls in one trace, one session) and a RAG answer after a retriever span. Spans and log
records are written to OUT as the OpenTelemetry Collector's file exporter writes them: one
OTLP JSON export request per line (ids in hex, int64 as strings), traces and logs mixed. With
``--phoenix``, the spans also go to the Phoenix server at URL, into project PROJECT, through
OTLP over HTTP (``opentelemetry-exporter-otlp-proto-http``, as Phoenix's docs set it up)."""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    LogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult

DOCUMENTS = ["The Eiffel Tower was completed in 1889 for the World's Fair.",
             "It is 330 metres tall."]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"]}}}]


def any_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode()}
    if isinstance(value, Mapping):
        return {"kvlistValue": {"values": key_values(value)}}
    if isinstance(value, Sequence):
        return {"arrayValue": {"values": [any_value(v) for v in value]}}
    return {}


def key_values(attributes: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    return [{"key": k, "value": any_value(v)} for k, v in (attributes or {}).items()]


class CollectorFile:
    """Appends export requests to one file, a line each, as the Collector's file exporter."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, request: dict[str, Any]) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(request) + "\n")


class SpanFile(SpanExporter):
    def __init__(self, out: CollectorFile) -> None:
        self.out = out

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        for span in spans:
            parent = f"{span.parent.span_id:016x}" if span.parent else ""
            self.out.write({"resourceSpans": [{
                "resource": {"attributes": key_values(span.resource.attributes)},
                "scopeSpans": [{"scope": {"name": span.instrumentation_scope.name},
                                "spans": [{
                    "traceId": f"{span.context.trace_id:032x}",
                    "spanId": f"{span.context.span_id:016x}", "parentSpanId": parent,
                    "name": span.name, "kind": span.kind.value + 1,
                    "startTimeUnixNano": str(span.start_time),
                    "endTimeUnixNano": str(span.end_time),
                    "attributes": key_values(span.attributes),
                    "events": [{"timeUnixNano": str(e.timestamp), "name": e.name,
                                "attributes": key_values(e.attributes)} for e in span.events],
                    "status": {}}]}]}]})
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


class LogFile(LogRecordExporter):
    def __init__(self, out: CollectorFile) -> None:
        self.out = out

    def export(self, batch: Sequence[Any]) -> LogRecordExportResult:
        for item in batch:
            record = getattr(item, "log_record", item)
            raw: dict[str, Any] = {
                "timeUnixNano": str(record.timestamp or 0),
                "observedTimeUnixNano": str(record.observed_timestamp or 0),
                "attributes": key_values(record.attributes),
                "traceId": f"{record.trace_id:032x}" if record.trace_id else "",
                "spanId": f"{record.span_id:016x}" if record.span_id else ""}
            if record.body is not None:
                raw["body"] = any_value(record.body)
            if getattr(record, "event_name", None):
                raw["eventName"] = record.event_name
            self.out.write({"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [
                {"scope": {"name": "app"}, "logRecords": [raw]}]}]})
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


def main(family: str, model_url: str, out_path: str, hide: bool,
         phoenix: tuple[str, str] | None = None) -> None:
    out = CollectorFile(out_path)
    attributes = {"service.name": "traces-app"}
    if phoenix:
        attributes["openinference.project.name"] = phoenix[1]
    resource = Resource.create(attributes)
    tracer_provider = TracerProvider(resource=resource)
    tracer_provider.add_span_processor(SimpleSpanProcessor(SpanFile(out)))
    if phoenix:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        tracer_provider.add_span_processor(SimpleSpanProcessor(
            OTLPSpanExporter(endpoint=f"{phoenix[0]}/v1/traces")))
    logger_provider = LoggerProvider(resource=resource)
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(LogFile(out)))
    session: Any = None
    if family == "genai":
        from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(tracer_provider=tracer_provider,
                                        logger_provider=logger_provider)
    else:
        from openinference.instrumentation import TraceConfig, using_session
        from openinference.instrumentation.openai import OpenAIInstrumentor

        OpenAIInstrumentor().instrument(
            tracer_provider=tracer_provider,
            config=TraceConfig(hide_inputs=hide, hide_outputs=hide))
        session = using_session
    import openai

    client = openai.OpenAI(base_url=model_url, api_key="not-needed", max_retries=0)
    tracer = tracer_provider.get_tracer("traces-app")
    client.chat.completions.create(model="fake-model", messages=[
        {"role": "system", "content": "Answer in one sentence."},
        {"role": "user", "content": "What is the capital of France?"}])
    with tracer.start_as_current_span("weather agent"), \
            (session("conversation-weather") if session else _nothing()):
        messages: list[dict[str, Any]] = [{"role": "user", "content": "What is the weather in "
                                           "Paris? Answer with the tool."}]
        first = client.chat.completions.create(model="fake-model", messages=messages,
                                               tools=TOOLS)
        messages.append(first.choices[0].message.model_dump(exclude_none=True))
        with tracer.start_as_current_span("get_weather") as tool:
            tool.set_attribute("openinference.span.kind", "TOOL")
            messages.append({"role": "tool", "tool_call_id": "call_weather_1",
                             "content": "sunny, 21 C"})
        client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
    with tracer.start_as_current_span("rag answer"):
        with tracer.start_as_current_span("retrieve") as retriever:
            retriever.set_attribute("openinference.span.kind", "RETRIEVER")
            retriever.set_attribute("input.value", "When was the Eiffel Tower completed?")
            for n, text in enumerate(DOCUMENTS):
                retriever.set_attribute(f"retrieval.documents.{n}.document.content", text)
        context = "\n".join(DOCUMENTS)
        client.chat.completions.create(model="fake-model", messages=[
            {"role": "system", "content": f"Answer from these documents:\n{context}"},
            {"role": "user", "content": "When was the Eiffel Tower completed?"}])
    tracer_provider.shutdown()
    logger_provider.shutdown()
    trace.get_tracer_provider()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


if __name__ == "__main__":
    rest = sys.argv[4:]
    at = rest.index("--phoenix") if "--phoenix" in rest else None
    main(sys.argv[1], sys.argv[2], sys.argv[3], "--hide" in rest,
         None if at is None else (rest[at + 1], rest[at + 2]))
