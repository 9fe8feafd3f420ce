"""The inputs of ``tool_call_correctness`` read into one form each, refused in one line naming
the argument, the sample and the item:

- an expected call: a plain call (``{"name", "arguments"}`` or OpenAI's ``{"type":
  "function", "function": {...}}``, arguments matched exactly), a name-only call (``{"name",
  "match": "name"}``: any arguments; DeepEval's names-only ``expected_tools``) or BFCL's
  possible answer (``{NAME: {ARG: [accepted values...]}}``, ``""`` among the values: may be
  left out; an accepted dict is itself ``{KEY: [accepted values]}``, and so is each dict of an
  accepted list of dicts: anything else is refused), all as ``{"name", "accepted": {ARG:
  [values]}, "exact": bool, "any_arguments": bool}`` (a plain call's value as the one accepted
  value);
- a tool's schema: OpenAI's ``{"type": "function", "function": {"name", "parameters"}}`` or
  BFCL's bare ``{"name", "description", "parameters"}``, as ``{"name", "types": {ARG: [type,
  item type]}, "required": [...]}``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....base.validation import Index, InputError, InputTypeError
from ...conversations.messages import arguments_of, as_items, check_call


def _at(index: Index, j: int) -> Index:
    return j if index is None else (index, j)


def _is_plain(call: Mapping[str, Any]) -> bool:
    """A plain or OpenAI call, not BFCL's possible answer: a text ``name``, or a ``function``
    object with a text ``name`` (a BFCL tool may be called ``function``: ``{"function":
    {ARG: [...]}}`` is its possible answer)."""
    body = call.get("function")
    return isinstance(call.get("name"), str) or (
        isinstance(body, Mapping) and isinstance(body.get("name"), str))


def _accepted_dict(value: Mapping[str, Any], name: str, key: str, argument: str,
                   at: Index) -> None:
    for inner, values in value.items():
        if not isinstance(values, list):
            raise InputTypeError(argument, at, f"call {name!r}: an accepted dict of {key!r} "
                                 f"holds {inner!r}: {type(values).__name__}, where BFCL's "
                                 "possible answer has a list of accepted values")


def _possible_answer(call: Mapping[str, Any], argument: str, at: Index) -> dict[str, Any]:
    if len(call) != 1:
        raise InputError(argument, at, "is neither a call ({'name', 'arguments'}) nor BFCL's "
                         "possible answer ({NAME: {ARG: [accepted values]}}, one name)")
    (name, accepted), = call.items()
    arguments = arguments_of(accepted, argument, at, name)
    for key, values in arguments.items():
        if not isinstance(values, list):
            raise InputTypeError(argument, at, f"call {name!r}: the accepted values of {key!r} "
                                 f"must be a list (BFCL's possible answer), got "
                                 f"{type(values).__name__}")
        for value in values:  # an accepted dict, or list of dicts: {KEY: [values]} each
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, Mapping):
                    _accepted_dict(item, name, key, argument, at)
    return {"name": name, "accepted": arguments, "exact": False, "any_arguments": False}


def _name_only(call: Mapping[str, Any], argument: str, at: Index) -> dict[str, Any]:
    if call.get("match") != "name" or call.get("arguments") is not None:
        raise InputError(argument, at, f"has match {call.get('match')!r}: the one match is "
                         "'name' (the call's name only), given without arguments")
    plain = check_call({"name": call.get("name")}, argument, at)
    return {"name": plain["name"], "accepted": {}, "exact": False, "any_arguments": True}


def check_expected(calls: Any, argument: str = "expected_tool_calls", index: Index = None
                   ) -> list[dict[str, Any]]:
    """One sample's expected calls (a list, or its JSON text), in the form of the module
    docstring."""
    out = []
    for j, call in enumerate(as_items(calls, argument, index, "expected tool calls")):
        at = _at(index, j)
        if not isinstance(call, Mapping):
            raise InputTypeError(argument, at, "must be a call or BFCL's possible answer (a JSON "
                                 f"object), got {type(call).__name__}")
        if "match" in call and _is_plain(call):
            out.append(_name_only(call, argument, at))
        elif _is_plain(call):
            plain = check_call(call, argument, at)
            out.append({"name": plain["name"], "exact": True, "any_arguments": False,
                        "accepted": {k: [v] for k, v in plain["arguments"].items()}})
        else:
            out.append(_possible_answer(call, argument, at))
    return out


def _declared(schema: Any) -> list[str | None]:
    """An argument's declared type and its items' type (``None`` when not given)."""
    if not isinstance(schema, Mapping):
        return [None, None]
    kind = schema.get("type")
    items = schema.get("items")
    item_type = items.get("type") if isinstance(items, Mapping) else None
    return [kind if isinstance(kind, str) else None,
            item_type if isinstance(item_type, str) else None]


def check_tools(tools: Any, argument: str = "tools", index: Index = None
                ) -> list[dict[str, Any]] | None:
    """One sample's tool schemas (a list, or its JSON text; ``None``: not given), in the form of
    the module docstring."""
    if tools is None:
        return None
    out = []
    for j, tool in enumerate(as_items(tools, argument, index, "tool schemas")):
        at = _at(index, j)
        body = tool.get("function") if isinstance(tool, Mapping) and isinstance(
            tool.get("function"), Mapping) else tool
        if not isinstance(body, Mapping) or not isinstance(body.get("name"), str):
            raise InputError(argument, at, "is not a tool schema ({'name', 'parameters'}, or "
                             "OpenAI's {'type': 'function', 'function': {...}})")
        parameters = body.get("parameters") or {}
        properties = parameters.get("properties") if isinstance(parameters, Mapping) else None
        required = parameters.get("required") if isinstance(parameters, Mapping) else None
        if not isinstance(properties or {}, Mapping) or not isinstance(required or [], list):
            raise InputTypeError(argument, at, f"tool {body['name']!r}: parameters must hold "
                                 "'properties' (an object) and 'required' (a list)")
        out.append({"name": body["name"],
                    "types": {k: _declared(v) for k, v in (properties or {}).items()},
                    "required": [r for r in required or [] if isinstance(r, str)]})
    return out


def check_made(calls: Any, argument: str = "tool_calls", index: Index = None
               ) -> list[dict[str, Any]] | None:
    """One sample's calls made (a list, or its JSON text; ``None``: not given): ``{"name",
    "arguments"}`` each."""
    if calls is None:
        return None
    made = as_items(calls, argument, index, "tool calls")
    return [{"name": c["name"], "arguments": c["arguments"]}
            for c in (check_call(call, argument, _at(index, j)) for j, call in enumerate(made))]
