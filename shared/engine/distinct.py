"""Distinct list items: JSON Schema's ``uniqueItems``, as the judge steps use it.

The extraction steps declare their lists of strings ``uniqueItems``: a weak judge, once it
repeats an item, repeats it until ``maxItems`` (on ``make run`` a third of the embedded judge's
answer characters), and the steps drop repeats anyway. Two strings are the same item when
equal after whitespace normalisation (:func:`item_key`, as the steps' ``clean_items``
compares); other items when equal as JSON.

- :func:`without_repeats`: an answer with each ``uniqueItems`` array's repeats dropped (the
  first kept). The runner applies it before validating, so a provider that does not enforce
  the keyword is not refused for a repeat.
- :func:`without_unique_items`: the schema without the keyword, for providers whose
  structured-output subset does not take it.
- :func:`closed_at_repeat`: the local decoders' stop: an answer's text cut before the first
  repeated string of a ``uniqueItems`` array and closed to JSON that satisfies the schema.
"""

from __future__ import annotations

import json
from typing import Any

_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SCHEMA_LISTS = ("prefixItems", "anyOf", "allOf", "oneOf")
_SCHEMA_VALUES = ("items", "additionalProperties", "not", "if", "then", "else", "contains")


def item_key(item: Any) -> str:
    """What two items are compared by: a string's words, anything else its JSON."""
    if isinstance(item, str):
        return " ".join(item.split())
    return json.dumps(item, sort_keys=True)


def declares_unique(schema: Any) -> bool:
    """Whether ``uniqueItems: true`` appears at some schema position of ``schema``."""
    if not isinstance(schema, dict):
        return False
    return schema.get("uniqueItems") is True or any(
        declares_unique(sub) for sub in _subschemas(schema))


def without_unique_items(schema: Any) -> Any:
    """A copy of ``schema`` with no ``uniqueItems`` keyword at any schema position (a property
    named ``uniqueItems`` stays)."""
    if not isinstance(schema, dict):
        return schema
    out = {key: value for key, value in schema.items() if key != "uniqueItems"}
    for key in _SCHEMA_MAPS:
        if isinstance(out.get(key), dict):
            out[key] = {name: without_unique_items(sub) for name, sub in out[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(out.get(key), list):
            out[key] = [without_unique_items(sub) for sub in out[key]]
    for key in _SCHEMA_VALUES:
        if isinstance(out.get(key), dict):
            out[key] = without_unique_items(out[key])
    return out


def without_repeats(value: Any, schema: Any) -> Any:
    """``value`` with the repeats of each array whose schema says ``uniqueItems`` dropped (the
    first occurrence kept), following ``properties``, ``additionalProperties``, ``items`` and
    ``prefixItems``; the rest unchanged."""
    if not isinstance(schema, dict):
        return value
    if isinstance(value, dict):
        return {key: without_repeats(item, _member(schema, key)) for key, item in value.items()}
    if not isinstance(value, list):
        return value
    items = [without_repeats(item, _element(schema, index)) for index, item in enumerate(value)]
    if schema.get("uniqueItems") is not True:
        return items
    seen: set[str] = set()
    kept = []
    for item in items:
        key = item_key(item)
        if key not in seen:
            seen.add(key)
            kept.append(item)
    return kept


def closed_at_repeat(text: str, schema: dict[str, Any], is_valid: Any) -> str | None:
    """``text`` (a JSON answer, whole or begun) cut before the first string that repeats an
    earlier string of its ``uniqueItems`` array, its open arrays and objects closed; ``None``
    when there is no such repeat, or the closed text is not valid JSON that ``is_valid`` (a
    callable on the parsed value) accepts: a list cut below its ``minItems``, an object whose
    later required properties never came."""
    frames: list[_Frame] = []
    position = 0
    while position < len(text):
        char = text[position]
        top = frames[-1] if frames else None
        if char == '"':
            end = _string_end(text, position)
            if end < 0:
                return None
            if top is not None and not top.array and top.expect_key:
                top.key, top.expect_key = _loads(text[position:end + 1]), False
            elif top is not None and top.array and top.seen is not None:
                key = item_key(_loads(text[position:end + 1]))
                if key in top.seen:
                    return _closed(text[:position], frames, is_valid)
                top.seen.add(key)
            position = end + 1
            continue
        if char in "[{":
            frames.append(_Frame(char == "[", _value_schema(top, schema)))
        elif char in "]}" and frames:
            frames.pop()
        elif char == "," and top is not None:
            if top.array:
                top.index += 1
            else:
                top.expect_key = True
        position += 1
    return None


class _Frame:
    """An open array or object of the answer being read, with its schema (or None)."""

    def __init__(self, array: bool, schema: Any) -> None:
        self.array, self.schema = array, schema if isinstance(schema, dict) else None
        self.index, self.key, self.expect_key = 0, None, not array
        unique = array and self.schema is not None and self.schema.get("uniqueItems") is True
        self.seen: set[str] | None = set() if unique else None


def _value_schema(frame: _Frame | None, root: dict[str, Any]) -> Any:
    """The schema of a value beginning inside ``frame`` (the root at the top)."""
    if frame is None:
        return root
    if frame.schema is None:
        return None
    return _element(frame.schema, frame.index) if frame.array else _member(frame.schema,
                                                                            frame.key)


def _member(schema: dict[str, Any], key: Any) -> Any:
    properties = schema.get("properties")
    if isinstance(properties, dict) and key in properties:
        return properties[key]
    return schema.get("additionalProperties")


def _element(schema: dict[str, Any], index: int) -> Any:
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list) and index < len(prefix):
        return prefix[index]
    return schema.get("items")


def _subschemas(schema: dict[str, Any]) -> list[Any]:
    subs: list[Any] = []
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            subs.extend(schema[key].values())
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            subs.extend(schema[key])
    subs.extend(schema[key] for key in _SCHEMA_VALUES if isinstance(schema.get(key), dict))
    return subs


def _string_end(text: str, start: int) -> int:
    """The index of the quote closing the string opened at ``start``; -1 if not closed yet."""
    position = start + 1
    while position < len(text):
        if text[position] == "\\":
            position += 2
        elif text[position] == '"':
            return position
        else:
            position += 1
    return -1


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _closed(head: str, frames: list[_Frame], is_valid: Any) -> str | None:
    head = head.rstrip()
    if head.endswith(","):
        head = head[:-1]
    text = head + "".join("]" if frame.array else "}" for frame in reversed(frames))
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return text if is_valid(value) else None
