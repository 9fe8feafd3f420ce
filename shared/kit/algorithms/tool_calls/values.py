"""One argument's value against its accepted values, by the rules of the Berkeley Function
Calling Leaderboard's AST checker for Python (bfcl-eval, ``ast_checker.py``), written from its
public definition:

- the declared type is checked first: an ``int`` where a float is declared counts as that float,
  never the reverse; a value of the accepted values' type passes too (BFCL's "variable": the
  accepted value names a variable, e.g. a string where a number is declared); an array's items
  are checked one level deep against each accepted list;
- then the value: strings (and the strings in lists and dicts) compare after BFCL's
  standardisation (:func:`standardise`); a dict against each accepted dict, key by key (its
  keys may be left out where ``""`` is accepted); a list of dicts dict by dict, in order;
  anything else by Python's equality against the accepted values.

``""`` among the accepted values marks an argument that may be left out (the caller checks
that). Every function returns ``None`` when the value passes, else the reason it does not.
"""

from __future__ import annotations

import json
import re
from typing import Any

# declared type (BFCL's names, and JSON Schema's object/number) -> the Python type it means
TYPES: dict[str, type] = {
    "string": str, "integer": int, "float": float, "number": float, "boolean": bool,
    "array": list, "tuple": list, "dict": dict, "object": dict, "any": str,
}
_ITEMS_CHECKED = ("array", "tuple")  # the declared types whose items are checked too

_STANDARDISED_AWAY = re.compile(r"[ ,./\-_*^]")


def standardise(text: str) -> str:
    """BFCL's string standardisation: spaces and ``,./-_*^`` removed, lower case, single
    quotes as double quotes (``"April 1, 2024"`` and ``"april 1 2024"`` are equal)."""
    return _STANDARDISED_AWAY.sub("", text).lower().replace("'", '"')


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _first_type(accepted: list[Any]) -> type | None:
    """The type of the first accepted value that is not ``""`` (the may-be-left-out mark)."""
    return next((type(v) for v in accepted if v != ""), None)


def _item_passes(item: Any, accepted_list: Any, item_type: type) -> bool:
    return type(item) is item_type or type(item) is _first_type(accepted_list)


def type_error(value: Any, accepted: list[Any], declared: str, item_type: str | None
               ) -> tuple[str | None, bool]:
    """Whether ``value`` has the declared type (BFCL's type check): ``(reason or None,
    is_variable)``; ``is_variable``: the value is read as a variable (compared as it is)."""
    wanted = TYPES[declared]
    accepted_type = _first_type(accepted)
    if type(value) is wanted:
        nested = TYPES.get(item_type or "") if declared in _ITEMS_CHECKED else None
        if nested is not None and not any(
                not isinstance(candidate, list)
                or all(_item_passes(item, candidate, nested) for item in value)
                for candidate in accepted):
            return (f"has an item that is not of type {item_type} (declared {declared} of "
                    f"{item_type}): {_shown(value)}"), False
        return None, accepted_type is not None and accepted_type is not wanted
    if accepted_type is not None and type(value) is accepted_type:
        return None, True
    return f"has type {type(value).__name__} where {declared} is declared: {_shown(value)}", False


def _standard(value: Any) -> Any:
    return standardise(value) if isinstance(value, str) else value


def dict_error(value: dict[str, Any], accepted: list[Any]) -> str | None:
    """A dict against each accepted dict (``{key: [accepted values]}``); passes when one
    accepts every key given (standardised strings) and every key it needs is given."""
    reason = "matches none of the accepted dicts"
    for candidate in accepted:
        if candidate == "":
            continue
        reason = None
        for key, item in value.items():
            if key not in candidate:
                reason = f"has the unexpected key {key!r}"
                break
            if _standard(item) not in [_standard(v) for v in candidate[key]]:
                reason = f"has {key!r} = {_shown(item)}, not one of {_shown(candidate[key])}"
                break
        if reason is None:
            missing = [key for key, values in candidate.items()
                       if key not in value and "" not in values]
            if missing:
                reason = f"lacks the key {missing[0]!r}"
        if reason is None:
            return None
    return reason


def list_of_dicts_error(value: list[Any], accepted: list[Any]) -> str | None:
    """A list of dicts against each accepted list of dicts, dict by dict in order."""
    reason = "matches none of the accepted lists of dicts"
    for candidate in accepted:
        if len(value) != len(candidate):
            reason = f"has {len(value)} dicts where {len(candidate)} are accepted"
            continue
        reason = next((f"item {k} {error}" for k, (item, wanted) in
                       enumerate(zip(value, candidate, strict=True))
                       if (error := dict_error(item, [wanted])) is not None), None)
        if reason is None:
            return None
    return reason


def value_error(value: Any, accepted: list[Any], declared: str | None,
                item_type: str | None = None) -> str | None:
    """Why ``value`` is not accepted (``None``: it is), BFCL's way. ``declared``: the
    argument's type in the tool's schema, or ``None`` when no schema gives it: then the
    accepted values' own type stands for it."""
    if declared not in TYPES:
        accepted_type = _first_type(accepted)
        declared = next((name for name, kind in TYPES.items() if kind is accepted_type), None)
        item_type = None
    if declared is not None:
        if declared in ("float", "number") and type(value) is int:
            value = float(value)
        reason, is_variable = type_error(value, accepted, declared, item_type)
        if reason is not None:
            return reason
        wanted = TYPES[declared]
        if not is_variable and wanted is dict:
            return dict_error(value, accepted)
        if not is_variable and wanted is list and TYPES.get(item_type or "") is dict:
            return list_of_dicts_error(value, accepted)
        if not is_variable and wanted is str:
            if standardise(value) in [standardise(v) for v in accepted if isinstance(v, str)]:
                return None
            return f"is {_shown(value)}, not one of {_shown(accepted)} (standardised)"
        if not is_variable and wanted is list:
            if [_standard(v) for v in value] in [[_standard(v) for v in candidate]
                                                 for candidate in accepted]:
                return None
            return f"is {_shown(value)}, not one of {_shown(accepted)} (standardised)"
    if value in accepted:
        return None
    return f"is {_shown(value)}, not one of {_shown(accepted)}"


def same_json(a: Any, b: Any) -> bool:
    """Equality of two decoded JSON values: numbers by value (``1`` equals ``1.0``), a boolean
    never a number, lists in order, objects key by key."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same_json, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_json(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b
