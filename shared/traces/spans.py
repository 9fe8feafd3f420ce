"""One span as every trace reader sees it, whatever file or server it came from: ids as
lowercase hex, times in Unix nanoseconds, attributes as a flat ``key -> Python value`` dict, and
the content records joined to it (span events, and the log records an instrumentation wrote
instead of span attributes, each as ``(event name, attributes, body)``)."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from typing import Any

Record = tuple[str, dict[str, Any], Any]


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start_ns: int | None
    end_ns: int | None
    attributes: dict[str, Any]
    records: list[Record] = field(default_factory=list)

    def text(self, key: str) -> str | None:
        value = self.attributes.get(key)
        return value if isinstance(value, str) else None

    def number(self, key: str) -> int | None:
        value = self.attributes.get(key)
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return int(value)
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
        return None


_MISSING = object()


def field(raw: Any, name: str, default: Any = None) -> Any:
    """Field ``name`` of an OTLP JSON object, by its JSON name (``traceId``) or, as proto3's
    JSON mapping also accepts, by its proto name (``trace_id``)."""
    if not isinstance(raw, dict):
        return default
    value = raw.get(name, _MISSING)
    if value is _MISSING:
        value = raw.get(re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower(), default)
    return value


def any_value(value: Any) -> Any:
    """An OTLP JSON ``AnyValue`` (``{"stringValue": ...}``, ``{"kvlistValue": {"values":
    [...]}}``...) as a Python value; ``int64`` values, which proto3 JSON writes as strings,
    as ints; bytes (base64) as their hex text."""
    if not isinstance(value, dict):
        return value
    for name, read in (("stringValue", str), ("boolValue", bool), ("intValue", int),
                       ("doubleValue", float)):
        found = field(value, name, _MISSING)
        if found is not _MISSING:
            return read(found)
    array = field(value, "arrayValue", _MISSING)
    if array is not _MISSING:
        return [any_value(v) for v in (array or {}).get("values", [])]
    kvlist = field(value, "kvlistValue", _MISSING)
    if kvlist is not _MISSING:
        return key_values((kvlist or {}).get("values", []))
    data = field(value, "bytesValue", _MISSING)
    if data is not _MISSING:
        return base64.b64decode(data).hex()
    return None


def key_values(items: Any) -> dict[str, Any]:
    """OTLP JSON's ``[{"key": ..., "value": AnyValue}, ...]`` as a dict."""
    return {item["key"]: any_value(item.get("value")) for item in items or ()
            if isinstance(item, dict) and "key" in item}


def hex_id(value: Any) -> str | None:
    """A trace or span id as lowercase hex (OTLP JSON writes hex; a ``0x`` prefix or capitals,
    as some exporters write them, are accepted); ``None`` for an empty or all-zero id."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip().lower().removeprefix("0x")
    return None if not text.strip("0") else text


def json_value(value: Any) -> Any:
    """An attribute that holds JSON: its text parsed (a structured value as it is); ``None``
    when the text is no JSON."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value
