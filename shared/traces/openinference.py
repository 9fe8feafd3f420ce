"""The OpenInference conventions (Phoenix's, ``openinference-instrumentation-*``): which spans
are LLM calls (``openinference.span.kind`` ``LLM``) and retrievals (``RETRIEVER``), an LLM span's
messages from its flattened attributes (``llm.input_messages.N.message.role``,
``...message.content``, ``...message.contents.M.message_content.text``,
``...message.tool_calls.M.tool_call.function.name``...), and the documents a span retrieved
(``retrieval.documents.N.document.content``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .chat import Message, joined, message, tool_call
from .spans import Span

KIND = "openinference.span.kind"
_INDEXED = re.compile(r"(\d+)\.(.*)")


def kind_of(span: Span) -> str | None:
    kind = span.text(KIND)
    return kind.upper() if kind else None


def model_of(span: Span) -> str | None:
    return span.text("llm.model_name")


def _indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """``prefix.N.rest -> value`` attributes grouped by N, in order: ``[{rest: value}]``."""
    groups: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix + "."):
            match = _INDEXED.fullmatch(key[len(prefix) + 1:])
            if match:
                groups.setdefault(int(match.group(1)), {})[match.group(2)] = value
    return [groups[i] for i in sorted(groups)]


def _message(fields: Mapping[str, Any]) -> Message | None:
    role = fields.get("message.role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        return None
    content = fields.get("message.content")
    if not isinstance(content, str):
        content = joined(part.get("message_content.text")
                         for part in _indexed(fields, "message.contents"))
    calls = [tool_call(c.get("tool_call.id"), c.get("tool_call.function.name"),
                       c.get("tool_call.function.arguments"))
             for c in _indexed(fields, "message.tool_calls")]
    ident = fields.get("message.tool_call_id")
    return message("system" if role == "developer" else role, content, calls,
                   ident if isinstance(ident, str) else None)


def messages_of(span: Span) -> tuple[list[Message], list[Message]]:
    """The LLM span's input and output messages (none when it captured no messages)."""
    inputs = [m for m in map(_message, _indexed(span.attributes, "llm.input_messages")) if m]
    output = [m for m in map(_message, _indexed(span.attributes, "llm.output_messages")) if m]
    return inputs, output


def documents_of(span: Span) -> list[str] | None:
    """The text of the documents a span retrieved (its own ``retrieval.documents``), ``None``
    when it recorded none with text."""
    texts = [d.get("document.content") for d in _indexed(span.attributes, "retrieval.documents")]
    texts = [t for t in texts if isinstance(t, str)]
    return texts or None


def conversation_of(span: Span) -> str | None:
    return span.text("session.id")
