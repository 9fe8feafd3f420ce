"""One conversation format, OpenAI's chat messages, checked and normalised.

A message is ``{"role": "system"|"developer"|"user"|"assistant"|"tool", "content": ...}``
(``developer``: OpenAI's name for the system message of its newer models); an assistant
message may carry ``tool_calls`` (OpenAI's ``{"id", "type": "function", "function": {"name",
"arguments"}}``, ``arguments`` a JSON object as text or as a dict) and may then have no content;
a tool message answers one earlier call through its ``tool_call_id``.

:func:`check_messages` returns the normalised conversation: every message a new dict with
``role`` and ``content`` (a string, or ``None`` on an assistant message that only calls tools;
OpenAI's list of content parts joined into one string), ``tool_calls`` in OpenAI's form with
``arguments`` decoded to a dict, ``tool_call_id`` on tool messages (and ``name`` when given).
Every refusal is an :class:`~shared.base.validation.InputError` naming the argument, the sample
and the message: ``messages[3][2] ...`` (the batch scorer turns it into ``column 'messages',
row 3, item 2: ...``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from ...base import validation
from ...base.validation import Index, InputError, InputTypeError

ROLES = ("system", "developer", "user", "assistant", "tool")  # developer: OpenAI's system
MAX_DEPTH = 64  # the deepest nesting of a call's arguments read (deeper: refused in one line)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValueError(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def strict_json(text: str) -> Any:
    """JSON text decoded as JSON defines it: ``NaN``/``Infinity`` and an object's repeated key
    (which ``json.loads`` takes, keeping the last) are a ``ValueError``; so is nesting too deep
    to decode (``json.loads`` would exhaust the stack)."""
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_no_repeats)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def check_plain_value(value: Any, argument: str, index: Index, what: str) -> None:
    """A decoded value's numbers finite and its nesting at most :data:`MAX_DEPTH` deep
    (iterative: a value nested thousands deep is refused, not a ``RecursionError``)."""
    stack = [(value, 0)]
    while stack:
        current, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise InputError(argument, index, f"{what} are nested more than {MAX_DEPTH} "
                             "levels deep")
        if isinstance(current, float) and not math.isfinite(current):
            raise InputError(argument, index, f"{what} hold {current}, not a JSON number")
        if isinstance(current, Mapping):
            stack.extend((v, depth + 1) for v in current.values())
        elif isinstance(current, (list, tuple)):
            stack.extend((v, depth + 1) for v in current)


def _at(index: Index, *path: int) -> Index:
    """``index`` (the sample's, or ``None``) extended by ``path``."""
    if index is None:
        return path if len(path) > 1 else path[0]
    head = index if isinstance(index, tuple) else (index,)
    return (*head, *path)


def decoded(value: Any, argument: str, index: Index, what: str) -> Any:
    """``value``, or the JSON it holds when it is a string (a CSV cell, an API's text)."""
    if isinstance(value, str):
        try:
            return strict_json(value)
        except json.JSONDecodeError as error:
            raise InputError(argument, index, f"is not valid JSON {what} ({error.msg} at "
                             f"character {error.pos})") from None
        except ValueError as error:
            raise InputError(argument, index, f"is not valid JSON {what} ({error})") from None
    return value


def as_items(value: Any, argument: str, index: Index, what: str) -> list[Any]:
    """A list (of messages, calls...) from a list, tuple, array or its JSON text."""
    value = decoded(value, argument, index, what)
    if isinstance(value, (Mapping, bytes)) or value is None:
        raise InputTypeError(argument, index, f"must be a list of {what}, got "
                             f"{type(value).__name__}")
    return validation.as_list(argument, value, index)


def arguments_of(value: Any, argument: str, index: Index, name: str) -> dict[str, Any]:
    """A call's arguments as a dict: a JSON object as text, or a mapping (``None``: none)."""
    if value is None:
        return {}
    if isinstance(value, str):
        try:
            value = strict_json(value)
        except json.JSONDecodeError as error:
            raise InputError(argument, index, f"call {name!r}: arguments are not valid JSON "
                             f"({error.msg} at character {error.pos})") from None
        except ValueError as error:
            raise InputError(argument, index, f"call {name!r}: arguments are not valid JSON "
                             f"({error})") from None
    check_plain_value(value, argument, index, f"call {name!r}: its arguments")
    if not isinstance(value, Mapping):
        raise InputTypeError(argument, index, f"call {name!r}: arguments must be a JSON "
                             f"object, got {type(value).__name__}")
    for key in value:
        if not isinstance(key, str):
            raise InputTypeError(argument, index, f"call {name!r}: argument names must be "
                                 f"strings, got {key!r}")
    return dict(value)


def check_call(call: Any, argument: str, index: Index) -> dict[str, Any]:
    """One tool call, OpenAI's form (``{"id", "type": "function", "function": {"name",
    "arguments"}}``) or the plain ``{"name", "arguments"}``: ``{"id", "name", "arguments"}``
    with the arguments decoded (``id`` ``None`` when not given)."""
    if not isinstance(call, Mapping):
        raise InputTypeError(argument, index, "must be a tool call (a JSON object with a "
                             f"name), got {type(call).__name__}")
    body = call.get("function") if isinstance(call.get("function"), Mapping) else call
    kind = call.get("type")
    if kind not in (None, "function"):
        raise InputError(argument, index, f"is a tool call of type {kind!r}; only 'function' "
                         "calls are read")
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError(argument, index, "is a tool call without a name (give 'name', or "
                         "OpenAI's 'function': {'name', 'arguments'})")
    validation.unicode_text(argument, name, index)
    ident = call.get("id")
    if ident is not None and not isinstance(ident, str):
        raise InputTypeError(argument, index, f"call {name!r}: id must be a string")
    return {"id": ident, "name": name,
            "arguments": arguments_of(body.get("arguments"), argument, index, name)}


def check_calls(calls: Any, *, argument: str = "tool_calls", index: Index = None
                ) -> list[dict[str, Any]]:
    """A list of tool calls (or its JSON text), each as :func:`check_call` returns it."""
    items = [] if calls is None else as_items(calls, argument, index, "tool calls")
    return [check_call(call, argument, _at(index, j)) for j, call in enumerate(items)]


def _content(value: Any, argument: str, index: Index) -> str | None:
    """A message's content as one string: a string, ``None``, or OpenAI's content parts (the
    text parts joined by newlines; another part shown as ``[<type>]``)."""
    if value is None:
        return None
    if isinstance(value, str):
        return validation.unicode_text(argument, value, index)
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, (list, tuple)):
        raise InputTypeError(argument, index, "content must be a string or a list of content "
                             f"parts, got {type(value).__name__}")
    parts = []
    for part in value:
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, Mapping) and isinstance(part.get("text"), str):
            parts.append(part["text"])
        elif isinstance(part, Mapping):
            parts.append(f"[{part.get('type', 'part')}]")
        else:
            raise InputTypeError(argument, index, "content parts must be objects or strings, "
                                 f"got {type(part).__name__}")
    return validation.unicode_text(argument, "\n".join(parts), index)


def _generated_id(position: int, j: int, given: set[str]) -> str:
    """An id for a call that has none: ``call_<message>_<call>``, made longer until it is no id
    the conversation gives a call itself (a real ``call_0_0`` keeps its id)."""
    ident = f"call_{position}_{j}"
    while ident in given:
        ident = f"{ident}_"
    return ident


def _given_ids(items: list[Any]) -> set[str]:
    """The ids the conversation's calls carry themselves."""
    found = set()
    for message in items:
        calls = message.get("tool_calls") if isinstance(message, Mapping) else None
        if isinstance(calls, (list, tuple)):
            found.update(c["id"] for c in calls
                         if isinstance(c, Mapping) and isinstance(c.get("id"), str))
    return found


def _message(message: Any, argument: str, at: Index, called: dict[str, str],
             position: int, given: set[str]) -> dict[str, Any]:
    if not isinstance(message, Mapping):
        raise InputTypeError(argument, at, "must be a message (a JSON object with a role), got "
                             f"{type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise InputError(argument, at, f"has role {role!r}; a role is one of "
                         f"{', '.join(ROLES)}")
    out: dict[str, Any] = {"role": role,
                           "content": _content(message.get("content"), argument, at)}
    if isinstance(message.get("name"), str):
        out["name"] = message["name"]
    calls = message.get("tool_calls")
    if calls:
        if role != "assistant":
            raise InputError(argument, at, f"is a {role} message with tool_calls; only an "
                             "assistant message calls tools")
        out["tool_calls"] = []
        for j, call in enumerate(as_items(calls, argument, at, "tool calls")):
            checked = check_call(call, argument, at)
            ident = checked["id"] or _generated_id(position, j, given)
            if ident in called:
                raise InputError(argument, at, f"repeats the tool call id {ident!r}")
            called[ident] = checked["name"]
            out["tool_calls"].append({"id": ident, "type": "function", "function": {
                "name": checked["name"], "arguments": checked["arguments"]}})
    if role == "tool":
        ident = message.get("tool_call_id")
        if ident not in called:
            known = ", ".join(map(repr, called)) or "none"
            raise InputError(argument, at, f"is a tool message whose tool_call_id {ident!r} "
                             f"matches no earlier tool call (earlier ids: {known})")
        out["tool_call_id"] = ident
        out["content"] = out["content"] or ""
    elif out["content"] is None and not out.get("tool_calls"):
        raise InputError(argument, at, f"is a {role} message without content")
    return out


def check_messages(messages: Any, *, argument: str = "messages", index: int | None = None
                   ) -> list[dict[str, Any]]:
    """One conversation, checked and normalised (module docstring): a list of messages or its
    JSON text. ``argument`` and ``index`` (the sample) name it in an error, with the message's
    position: ``messages[3][2] has role 'bot'; ...``."""
    items = as_items(messages, argument, index, "messages")
    called: dict[str, str] = {}
    given = _given_ids(items)
    return [_message(message, argument, _at(index, j), called, j, given)
            for j, message in enumerate(items)]


def user_turns(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """``(position, text)`` of each user message of a normalised conversation, in order."""
    return [(i, m["content"] or "") for i, m in enumerate(messages) if m["role"] == "user"]


def assistant_turns(messages: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """``(position, text)`` of each assistant message that says something (a message that only
    calls tools is no turn of the conversation), in order."""
    return [(i, m["content"]) for i, m in enumerate(messages)
            if m["role"] == "assistant" and (m["content"] or "").strip()]


def tool_calls_made(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The calls of the assistant messages of a normalised conversation, in order, as
    ``{"id", "name", "arguments"}`` (arguments a dict)."""
    return [{"id": call["id"], "name": call["function"]["name"],
             "arguments": call["function"]["arguments"]}
            for m in messages if m["role"] == "assistant"
            for call in m.get("tool_calls", ())]


_SPEAKERS = {"system": "System", "developer": "Developer", "user": "User",
             "assistant": "Assistant"}


def render(messages: list[dict[str, Any]]) -> str:
    """A plain transcript of a normalised conversation for a judge's prompt: one block per
    message (``User: ...``), each tool call as ``Assistant called NAME({...}) [id]`` and each
    result as ``Tool result of NAME [id]: ...``."""
    names = {call["id"]: call["function"]["name"]
             for m in messages for call in m.get("tool_calls", ())}
    lines = []
    for m in messages:
        if m["role"] == "tool":
            ident = m["tool_call_id"]
            lines.append(f"Tool result of {names.get(ident, '?')} [{ident}]: {m['content']}")
            continue
        if (m["content"] or "").strip() or not m.get("tool_calls"):
            lines.append(f"{_SPEAKERS[m['role']]}: {m['content'] or ''}")
        for call in m.get("tool_calls", ()):
            arguments = json.dumps(call["function"]["arguments"], ensure_ascii=False,
                                   sort_keys=True)
            lines.append(f"Assistant called {call['function']['name']}({arguments}) "
                         f"[{call['id']}]")
    return "\n".join(lines)
