"""The OpenTelemetry GenAI conventions (``gen_ai.*``): which spans are LLM calls, and their
messages, in both forms the instrumentations write:

- the current JSON form: ``gen_ai.system_instructions``, ``gen_ai.input.messages`` and
  ``gen_ai.output.messages`` (messages of typed parts: ``text``, ``tool_call``,
  ``tool_call_response``...), on the span or on its ``gen_ai.client.inference.operation.details``
  event, as JSON text or as structured values;
- the older event form (the official openai instrumentation's default): one event or log record
  per message, ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``,
  ``gen_ai.tool.message`` and ``gen_ai.choice``, their content in the body.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .chat import Message, as_text, joined, message, tool_call
from .spans import Span, json_value

OPERATION = "gen_ai.operation.name"
CONVERSATION = "gen_ai.conversation.id"
LLM_OPERATIONS = ("chat", "text_completion", "generate_content")
INPUT, OUTPUT, SYSTEM = "gen_ai.input.messages", "gen_ai.output.messages", \
    "gen_ai.system_instructions"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_ROLE_EVENTS = {"gen_ai.system.message": "system", "gen_ai.user.message": "user",
                "gen_ai.assistant.message": "assistant", "gen_ai.tool.message": "tool"}


def is_llm_span(span: Span) -> bool:
    return span.text(OPERATION) in LLM_OPERATIONS


def model_of(span: Span) -> str | None:
    return span.text("gen_ai.response.model") or span.text("gen_ai.request.model")


def messages_of(span: Span) -> tuple[list[Message], list[Message]]:
    """The span's input and output messages in OpenAI's form (roles without content when the
    content was not captured)."""
    attributes = dict(span.attributes)
    for name, record_attributes, _ in span.records:
        if name == DETAILS_EVENT:
            for key in (INPUT, OUTPUT, SYSTEM):
                if key in record_attributes:
                    attributes.setdefault(key, record_attributes[key])
    if any(key in attributes for key in (INPUT, OUTPUT, SYSTEM)):
        return _json_form(attributes)
    return _event_form(span)


def _json_form(attributes: Mapping[str, Any]) -> tuple[list[Message], list[Message]]:
    inputs: list[Message] = []
    instructions = json_value(attributes.get(SYSTEM))
    if isinstance(instructions, list):
        text = joined(p.get("content") for p in instructions if isinstance(p, Mapping))
        if text is not None:
            inputs.append(message("system", text))
    for item in _items(attributes.get(INPUT)):
        inputs.extend(_from_parts(item))
    output: list[Message] = []
    for item in _items(attributes.get(OUTPUT))[:1]:  # the first choice
        output.extend(_from_parts(item))
    return inputs, output


def _items(value: Any) -> list[Mapping[str, Any]]:
    value = json_value(value)
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _from_parts(item: Mapping[str, Any]) -> list[Message]:
    """One GenAI message as OpenAI messages: a message of tool results becomes one tool
    message per result."""
    role = item.get("role")
    parts = [p for p in item.get("parts") or () if isinstance(p, Mapping)]
    results = [p for p in parts if p.get("type") == "tool_call_response"]
    if results:
        return [message("tool", as_text(p.get("response", p.get("result"))),
                        tool_call_id=str(p.get("id") or "")) for p in results]
    if role not in ("system", "user", "assistant", "tool"):
        return []
    calls = [tool_call(p.get("id"), p.get("name"), p.get("arguments"))
             for p in parts if p.get("type") == "tool_call"]
    text = joined(p.get("content") for p in parts if p.get("type") == "text")
    return [message(role, text, calls)]


def _event_form(span: Span) -> tuple[list[Message], list[Message]]:
    inputs: list[Message] = []
    choices: list[tuple[int, Message]] = []
    for name, _, body in span.records:
        body = body if isinstance(body, Mapping) else {}
        if name in _ROLE_EVENTS:
            role = _ROLE_EVENTS[name]
            content = body.get("content")
            inputs.append(message(role, as_text(content) if content is not None else None,
                                  _calls(body.get("tool_calls")), str(body.get("id") or "")))
        elif name == "gen_ai.choice":
            reply = body.get("message") if isinstance(body.get("message"), Mapping) else {}
            content = reply.get("content")
            choices.append((int(body.get("index") or 0), message(
                "assistant", content if isinstance(content, str) else None,
                _calls(reply.get("tool_calls")))))
    output = [m for index, m in sorted(choices, key=lambda c: c[0]) if index == 0][:1]
    return inputs, output


def _calls(value: Any) -> list[dict[str, Any]]:
    calls = []
    for call in value or ():
        if isinstance(call, Mapping):
            function = call.get("function") if isinstance(call.get("function"), Mapping) else {}
            calls.append(tool_call(call.get("id"), function.get("name"),
                                   function.get("arguments")))
    return calls
