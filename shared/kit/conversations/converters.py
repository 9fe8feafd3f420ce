"""Other tools' conversations in OpenAI's chat format, read by duck typing (none of inspect_ai,
RAGAS or DeepEval is imported here): each converter reads the attributes those packages
document and returns a normalised conversation (:func:`.messages.check_messages`).

- inspect_ai: a ``ChatMessage`` list (``state.messages``): ``.role``, ``.content`` (a string or
  a list of content objects; the ``text`` of each text part), ``.tool_calls`` (``ToolCall`` with
  ``id``, ``function``, ``arguments`` a dict), ``.tool_call_id`` and ``.error`` (a failed
  call's ``ToolCallError``: its message becomes the tool result).
- RAGAS: a ``MultiTurnSample`` (its ``user_input``) or its messages: ``HumanMessage``,
  ``AIMessage`` (``tool_calls``: ``ToolCall(name, args)``) and ``ToolMessage``, which carries no
  call id: each answers the next unanswered call of the AI message before it, in order.
- RAGAS's ``reference_tool_calls`` (:func:`calls_from_ragas`) and DeepEval's ``ToolCall`` lists
  (:func:`calls_from_deepeval`) as ``tool_call_correctness``'s calls.
- DeepEval: a ``ConversationalTestCase`` (``turns`` of ``Turn(role, content, tools_called)``)
  or an ``LLMTestCase`` (``input``, ``tools_called``, ``actual_output``); a ``ToolCall(name,
  input_parameters, output)`` becomes an assistant call and, when it has an output, the tool
  message of its result.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...base.validation import InputError
from .messages import check_messages


def _get(item: Any, name: str, default: Any = None) -> Any:
    """An attribute of an object, or a key of a dict (the documented shape as plain data)."""
    if isinstance(item, Mapping):
        return item.get(name, default)
    return getattr(item, name, default)


def _text(content: Any) -> Any:
    """A content that is a list of content objects -> its text parts joined (another part
    shown as ``[<type>]``, a model's reasoning left out); a string stays."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, Iterable):
        texts = [_get(part, "text") if _get(part, "text") is not None else
                 part if isinstance(part, str) else f"[{_get(part, 'type', 'part')}]"
                 for part in content if _get(part, "type") != "reasoning"]
        return "\n".join(texts)
    return str(content)


def _call(ident: str, name: Any, arguments: Any) -> dict[str, Any]:
    if hasattr(arguments, "model_dump"):
        arguments = arguments.model_dump()
    return {"id": ident, "type": "function",
            "function": {"name": name, "arguments": {} if arguments is None else arguments}}


def _result(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False,
                                                             default=str)


def from_inspect(messages: Iterable[Any]) -> list[dict[str, Any]]:
    """An inspect_ai ``ChatMessage`` list (``TaskState.messages``) as a normalised
    conversation."""
    out = []
    for message in messages:
        converted: dict[str, Any] = {"role": _get(message, "role"),
                                     "content": _text(_get(message, "content"))}
        calls = _get(message, "tool_calls")
        if calls:
            for call in calls:  # inspect keeps {} as the arguments of a call it could not parse
                if _get(call, "parse_error"):
                    raise InputError("messages", None, f"call {_get(call, 'function')!r}: its "
                                     f"arguments could not be parsed ({_get(call, 'parse_error')})")
            converted["tool_calls"] = [
                _call(_get(call, "id"), _get(call, "function"), _get(call, "arguments"))
                for call in calls]
        if converted["role"] == "tool":
            converted["tool_call_id"] = _get(message, "tool_call_id")
            error = _get(message, "error")
            if error is not None:
                said = converted["content"] or ""
                converted["content"] = (said + "\n" if said else "") + (
                    f"Error: {_get(error, 'message', error)}")
        out.append(converted)
    return check_messages(out)


_RAGAS_ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def _ragas_role(message: Any) -> Any:
    kind = _get(message, "type")
    if kind in _RAGAS_ROLES:
        return _RAGAS_ROLES[kind]
    name = type(message).__name__
    return {"HumanMessage": "user", "AIMessage": "assistant", "ToolMessage": "tool"}.get(
        name, _get(message, "role", kind))


def from_ragas(sample_or_messages: Any) -> list[dict[str, Any]]:
    """A RAGAS ``MultiTurnSample`` (or its ``user_input`` list of messages) as a normalised
    conversation."""
    messages = _get(sample_or_messages, "user_input", sample_or_messages)
    if isinstance(messages, str):
        raise TypeError("from_ragas takes a MultiTurnSample or its messages; a single-turn "
                        "sample's user_input is one text, not a conversation")
    out: list[dict[str, Any]] = []
    pending: list[str] = []  # the ids of the last AI message's calls not yet answered
    for position, message in enumerate(messages):
        role = _ragas_role(message)
        converted: dict[str, Any] = {"role": role, "content": _text(_get(message, "content"))}
        if role == "assistant":
            calls = _get(message, "tool_calls") or []
            converted["tool_calls"] = [
                _call(f"call_{position}_{j}", _get(call, "name"), _get(call, "args"))
                for j, call in enumerate(calls)]
            pending = [call["id"] for call in converted["tool_calls"]]
        elif role == "tool":
            converted["tool_call_id"] = pending.pop(0) if pending else None
        out.append(converted)
    return check_messages(out)


def _deepeval_tools(calls: Iterable[Any], position: int) -> list[dict[str, Any]]:
    """An assistant message of DeepEval ``ToolCall``s and a tool message per output."""
    made = [(f"call_{position}_{j}", call) for j, call in enumerate(calls)]
    if not made:
        return []
    out = [{"role": "assistant", "content": None, "tool_calls": [
        _call(ident, _get(call, "name"), _get(call, "input_parameters"))
        for ident, call in made]}]
    out.extend({"role": "tool", "tool_call_id": ident, "content": _result(_get(call, "output"))}
               for ident, call in made if _get(call, "output") is not None)
    return out


def from_deepeval(test_case: Any) -> list[dict[str, Any]]:
    """A DeepEval ``ConversationalTestCase`` (its ``turns``; a turn's ``tools_called`` come
    before its text: the calls, their results, then what the assistant said) or an
    ``LLMTestCase`` (``input``, ``tools_called``, ``actual_output``) as a normalised
    conversation."""
    turns = _get(test_case, "turns")
    out: list[dict[str, Any]] = []
    if turns is None:  # an LLMTestCase
        if _get(test_case, "input") is not None:
            out.append({"role": "user", "content": _get(test_case, "input")})
        out.extend(_deepeval_tools(_get(test_case, "tools_called") or (), 0))
        if _get(test_case, "actual_output") is not None:
            out.append({"role": "assistant", "content": _get(test_case, "actual_output")})
        return check_messages(out)
    for position, turn in enumerate(turns):
        role = _get(turn, "role")
        out.extend(_deepeval_tools(_get(turn, "tools_called") or (), position))
        content = _get(turn, "content")
        if content is not None or role != "assistant":
            out.append({"role": role, "content": content})
    return check_messages(out)


def _call_list(tool_calls: Any, function: str) -> list[Any]:
    if isinstance(tool_calls, (str, bytes, Mapping)) or not isinstance(tool_calls, Iterable):
        raise TypeError(f"{function} takes a list of tool calls, got "
                        f"{type(tool_calls).__name__} (one call: put it in a list)")
    return list(tool_calls)


def calls_from_deepeval(tool_calls: Iterable[Any]) -> list[dict[str, Any]]:
    """DeepEval ``ToolCall``s (``LLMTestCase.tools_called`` or ``expected_tools``) as
    ``tool_call_correctness``'s inputs: ``{"name", "arguments"}``, and a call without
    ``input_parameters`` (DeepEval's names-only expectation, which its ToolCorrectnessMetric
    matches by name) as the name-only ``{"name", "match": "name"}`` (as a call made: no
    arguments)."""
    out = []
    for call in _call_list(tool_calls, "calls_from_deepeval"):
        parameters = _get(call, "input_parameters")
        out.append({"name": _get(call, "name"), "match": "name"} if parameters is None
                   else {"name": _get(call, "name"), "arguments": parameters})
    return out


def calls_from_ragas(sample_or_calls: Any) -> list[dict[str, Any]]:
    """RAGAS ``ToolCall(name, args)``s, or a ``MultiTurnSample``'s ``reference_tool_calls``, as
    plain calls ``{"name", "arguments"}``: ``tool_call_correctness``'s ``expected_tool_calls``
    (arguments matched exactly, as RAGAS's ToolCallAccuracy does)."""
    calls = _get(sample_or_calls, "reference_tool_calls", sample_or_calls)
    return [{"name": _get(call, "name"), "arguments": _get(call, "args") or {}}
            for call in _call_list(calls, "calls_from_ragas")]
