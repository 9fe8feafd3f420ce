"""STAND-IN for the conversation module of the tools branch (same interface); replaced at the
merge. OpenAI chat messages: validate + normalise one conversation, and a plain transcript."""

from __future__ import annotations

import json
from typing import Any

from ..base.validation import InputError

ROLES = ("system", "user", "assistant", "tool")


def check_messages(messages: Any, *, argument: str = "messages",
                   index: int | None = None) -> list[dict]:
    if isinstance(messages, str):
        try:
            messages = json.loads(messages)
        except json.JSONDecodeError as error:
            raise InputError(argument, index, f"is not a JSON list of messages ({error.msg})"
                             ) from None
    if not isinstance(messages, list):
        raise InputError(argument, index, "must be a list of messages")
    out = []
    for message in messages:
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise InputError(argument, index, f"has a message with no known role: {message!r}")
        out.append({k: v for k, v in message.items() if v is not None})
    return out


def render(messages: list[dict]) -> str:
    lines = []
    for message in messages:
        role, content = message["role"], message.get("content") or ""
        if content:
            lines.append(f"{role}: {content}")
        for call in message.get("tool_calls") or ():
            function = call.get("function", call)
            lines.append(f"{role} called {function['name']}({function.get('arguments')})")
    return "\n".join(lines)
