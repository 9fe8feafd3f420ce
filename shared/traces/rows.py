"""Spans -> rows with the CLI's column names: one row per LLM span (agent, tool, chain and
retriever spans give none), or one per conversation.

A row: ``trace_id``, ``span_id`` (lowercase hex), ``conversation_id`` (``gen_ai.conversation.id``
or OpenInference's ``session.id``; ``None`` without), ``messages`` (input then output, OpenAI
chat messages, tool calls included), ``question`` (the whole text of the last user message),
``prediction`` (the output text; ``""`` for an output that only calls tools), ``contexts`` (only
when retrieval content was captured: the span's own ``retrieval.documents``, else the documents
of the retriever spans of the same trace that started before it), ``model``, ``start_time`` and
``end_time`` (ISO 8601, UTC), ``duration_ms``, ``input_tokens``, ``output_tokens`` and
``content_captured``. A span whose content was not captured still gives a row, with
``content_captured`` false and ``messages``, ``question`` and ``prediction`` ``None``."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from . import genai, openinference
from .chat import Message, captured, last_user_text, output_text
from .spans import Span

Row = dict[str, Any]


def iso_time(nanos: int | None) -> str | None:
    if nanos is None:
        return None
    seconds, rest = divmod(nanos, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")


def nanos_of(text: Any) -> int | None:
    """An ISO 8601 time (``Z`` or an offset) as nanoseconds since the epoch, the inverse of
    :func:`iso_time`, in integers (a float of 1.8e18 nanoseconds is off by up to 256);
    ``None`` for anything else."""
    if not isinstance(text, str):
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(moment.timestamp()) * 1_000_000_000 + moment.microsecond * 1000


def span_rows(spans: Iterable[Span]) -> list[Row]:
    """One row per LLM span, in the order of the spans' start (file order for equal starts)."""
    ordered = sorted(enumerate(spans), key=lambda item: (item[1].start_ns or 0, item[0]))
    spans = [span for _, span in ordered]
    retrieved: dict[str, list[tuple[int, list[str]]]] = {}
    for span in spans:
        documents = openinference.documents_of(span)
        if documents and openinference.kind_of(span) == "RETRIEVER":
            retrieved.setdefault(span.trace_id, []).append((span.start_ns or 0, documents))
    rows = []
    for span in spans:
        kind = openinference.kind_of(span)
        inputs, output = openinference.messages_of(span) if kind == "LLM" else ([], [])
        if kind in (None, "LLM") and not (inputs or output) and genai.is_llm_span(span):
            # the GenAI conventions (a store such as Phoenix may give such a span the kind LLM)
            inputs, output = genai.messages_of(span)
            model = genai.model_of(span)
            usage = (span.number("gen_ai.usage.input_tokens"),
                     span.number("gen_ai.usage.output_tokens"))
        elif kind == "LLM":
            model = openinference.model_of(span)
            usage = (span.number("llm.token_count.prompt"),
                     span.number("llm.token_count.completion"))
        else:
            continue
        contexts = openinference.documents_of(span) or [
            text for start, documents in retrieved.get(span.trace_id, ())
            if start <= (span.start_ns or 0) for text in documents] or None
        conversation = (span.text(genai.CONVERSATION) or openinference.conversation_of(span))
        rows.append(row(span, inputs, output, model, usage, contexts, conversation))
    return rows


def row(span: Span, inputs: list[Message], output: list[Message], model: str | None,
        usage: tuple[int | None, int | None], contexts: list[str] | None,
        conversation: str | None) -> Row:
    messages = inputs + output
    ok = captured(messages)
    duration = (None if span.start_ns is None or span.end_ns is None
                else (span.end_ns - span.start_ns) / 1e6)
    out: Row = {
        "trace_id": span.trace_id, "span_id": span.span_id, "conversation_id": conversation,
        "messages": messages if ok else None,
        "question": last_user_text(inputs) if ok else None,
        "prediction": output_text(output) if ok else None,
        "model": model, "start_time": iso_time(span.start_ns), "end_time": iso_time(span.end_ns),
        "duration_ms": duration, "input_tokens": usage[0], "output_tokens": usage[1],
        "content_captured": ok,
    }
    if contexts:
        out["contexts"] = list(contexts)
    return out


def conversation_rows(rows: list[Row]) -> list[Row]:
    """One row per conversation (``conversation_id``; a span without one is a conversation of
    its own trace), its spans in time order: ``messages`` the whole conversation (a span that
    resends the history so far extends it; a span that does not adds its new messages),
    ``question`` and ``prediction`` of its last span, the ids of its last span (where its scores
    are written back), tokens summed, ``spans`` the number of LLM spans. A conversation with a
    span whose content was not captured is not captured."""
    groups: dict[str, list[Row]] = {}
    for item in rows:
        groups.setdefault(item["conversation_id"] or f"trace:{item['trace_id']}", []).append(item)
    out = []
    for group in groups.values():
        if all(r["start_time"] for r in group):  # else as read (an ATIF step without time)
            group = sorted(group, key=lambda r: r["start_time"])
        last = group[-1]
        ok = all(r["content_captured"] for r in group)
        messages: list[Message] = []
        for item in group if ok else ():
            messages = _extended(messages, item["messages"])
        contexts = [c for r in group for c in r.get("contexts") or ()]
        merged: Row = {
            "trace_id": last["trace_id"], "span_id": last["span_id"],
            "conversation_id": last["conversation_id"], "messages": messages if ok else None,
            "question": last["question"], "prediction": last["prediction"],
            "model": last["model"], "start_time": group[0]["start_time"],
            "end_time": last["end_time"],
            "duration_ms": _total(r["duration_ms"] for r in group),
            "input_tokens": _total(r["input_tokens"] for r in group),
            "output_tokens": _total(r["output_tokens"] for r in group),
            "content_captured": ok, "spans": len(group),
        }
        if contexts:
            merged["contexts"] = list(dict.fromkeys(contexts))
        out.append(merged)
    return out


def _extended(so_far: list[Message], messages: list[Message]) -> list[Message]:
    """``so_far`` followed by what ``messages`` adds: the part after their longest overlap
    (a span that resends the history overlaps all of it), its system messages dropped once the
    conversation has begun."""
    if not so_far:
        return list(messages)
    for k in range(min(len(so_far), len(messages)), 0, -1):
        if so_far[-k:] == messages[:k]:
            return so_far + messages[k:]
    return so_far + [m for m in messages if m["role"] != "system"]


def _total(values: Iterable[Any]) -> Any:
    numbers = [v for v in values if v is not None]
    return sum(numbers) if numbers else None
