"""OpenAI chat messages built from what a span recorded, and the row columns read from them:
``question`` (the whole text of the last user message) and ``prediction`` (the output text,
empty for an output that only calls tools)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

Message = dict[str, Any]


def as_text(value: Any) -> str:
    """A tool result or argument value as text: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def tool_call(ident: Any, name: Any, arguments: Any) -> dict[str, Any]:
    """One call in OpenAI's form; ``arguments`` as JSON text (``None``: not captured, ``{}``)."""
    if arguments is None:
        arguments = {}
    return {"id": str(ident or ""), "type": "function",
            "function": {"name": str(name or ""), "arguments": as_text(arguments)}}


def message(role: str, content: str | None, calls: list[dict[str, Any]] | None = None,
            tool_call_id: str | None = None) -> Message:
    out: Message = {"role": role, "content": content}
    if calls:
        out["tool_calls"] = calls
    if role == "tool":
        out["tool_call_id"] = tool_call_id or ""
        out["content"] = content or ""
    elif content is None and not calls:
        out["content"] = ""
    return out


def joined(texts: Iterable[Any]) -> str | None:
    """Text parts joined with newlines; ``None`` when there is none."""
    parts = [t for t in texts if isinstance(t, str)]
    return "\n".join(parts) if parts else None


def openai_message(value: Mapping[str, Any]) -> Message | None:
    """A message already in OpenAI's form (a request body's, an ATIF step's), its content
    parts joined; ``None`` when it has no known role."""
    role = value.get("role")
    if role not in ("system", "developer", "user", "assistant", "tool"):
        return None
    content = value.get("content")
    if isinstance(content, list):
        content = joined(p.get("text") for p in content if isinstance(p, Mapping))
    calls = [tool_call(c.get("id"), (c.get("function") or {}).get("name"),
                       (c.get("function") or {}).get("arguments"))
             for c in value.get("tool_calls") or () if isinstance(c, Mapping)]
    return message("system" if role == "developer" else role,
                   content if isinstance(content, str) else None, calls,
                   value.get("tool_call_id"))


def captured(messages: list[Message]) -> bool:
    """Whether any message holds content (text or a call's arguments): an instrumentation that
    does not capture content still records the messages' roles and the calls' names."""
    for m in messages:
        if isinstance(m.get("content"), str) and m["content"].strip():
            return True
        for call in m.get("tool_calls") or ():
            if call["function"]["arguments"] not in ("{}", ""):
                return True
    return False


def last_user_text(messages: list[Message]) -> str | None:
    for m in reversed(messages):
        if m["role"] == "user":
            return m.get("content") or ""
    return None


def output_text(output: list[Message]) -> str:
    """The output's text: its assistant messages' content, joined (``""``: it only calls
    tools)."""
    return joined(m.get("content") for m in output if m["role"] == "assistant"
                  and m.get("content")) or ""
