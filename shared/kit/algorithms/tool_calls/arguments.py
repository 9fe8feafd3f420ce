"""One call's arguments against a reference call's, in the modes of openevals 0.2
(``create_trajectory_match_evaluator``'s ``tool_args_match_mode`` and overrides):

- ``exact``: the same arguments, as JSON values (key order never matters; ``1`` equals ``1.0``;
  :func:`.values.same_json`);
- ``subset``: every argument made is in the reference call, with the same value (the call made
  may leave arguments out);
- ``superset``: every argument of the reference call is made, with the same value (the call made
  may add arguments);
- ``ignore``: the names alone;
- an override per tool: one of those modes, or a list of argument key paths (``"city"``,
  ``"filters.date.from"``: a dot steps into an object) that must be present in both calls and
  equal; the other arguments are not read.

Every check returns ``None`` when the arguments match, else why not, in one line.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ....base.options import Option
from .values import same_json

ARGS_MODES = ("exact", "subset", "superset", "ignore")

Rule = str | tuple[str, ...]  # a mode, or the key paths compared
MISSING = object()


def check_args_overrides(name: str, value: Any) -> dict[str, Rule] | None:
    """``args_overrides`` checked: ``None``, or a mapping (or its JSON text) tool name -> a mode
    of :data:`ARGS_MODES` or a non-empty list of argument key paths."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            raise ValueError(f"{name} is not valid JSON ({error.msg})") from None
    if not isinstance(value, Mapping):
        raise TypeError(f"{name} must map a tool name to an arguments mode or a list of key "
                        f"paths, got {type(value).__name__}")
    out: dict[str, Rule] = {}
    for tool, rule in value.items():
        if not isinstance(tool, str) or not tool:
            raise TypeError(f"{name}: a tool name must be a non-empty string, got {tool!r}")
        if isinstance(rule, str):
            if rule not in ARGS_MODES:
                raise ValueError(f"{name}[{tool!r}] must be one of {', '.join(ARGS_MODES)} or a "
                                 f"list of argument key paths, got {rule!r}")
            out[tool] = rule
            continue
        if not isinstance(rule, (list, tuple)) or not rule or not all(
                isinstance(path, str) and path.strip(".") and "" not in path.split(".")
                for path in rule):
            raise ValueError(f"{name}[{tool!r}] must be an arguments mode or a non-empty list "
                             f"of key paths such as ['city', 'dates.from'], got {rule!r}")
        out[tool] = tuple(rule)
    return out


# the option of every metric that compares tool-call arguments (tool_call_correctness,
# trajectory_match): per tool, another mode or the key paths to compare
ARGS_OVERRIDES_OPTION = Option(
    "args_overrides", dict, None, nullable=True, check=check_args_overrides, type_doc="dict",
    doc="per tool name: an args_mode, or a list of argument key paths to compare "
    '(e.g. {"search": ["query", "filters.date"]}); the others use args_mode')


def rule_for(tool: str, args_mode: str, overrides: Mapping[str, Rule] | None) -> Rule:
    """The rule one tool's calls are compared by: its override, else ``args_mode``."""
    if overrides and tool in overrides:
        return overrides[tool]
    return args_mode


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _extra(made: Mapping[str, Any], reference: Mapping[str, Any]) -> str | None:
    """Why not every argument made is in the reference call with the same value."""
    for key, value in made.items():
        if key not in reference:
            return f"argument {key!r} is not in the reference call"
        if not same_json(value, reference[key]):
            return f"argument {key!r} is {_shown(value)}, not {_shown(reference[key])}"
    return None


def _lacking(made: Mapping[str, Any], reference: Mapping[str, Any]) -> str | None:
    """Why not every argument of the reference call is made with the same value."""
    for key, value in reference.items():
        if key not in made:
            return f"argument {key!r} is missing"
        if not same_json(made[key], value):
            return f"argument {key!r} is {_shown(made[key])}, not {_shown(value)}"
    return None


def at_path(arguments: Mapping[str, Any], path: str) -> Any:
    """The value at a key path (``"a.b"``: ``arguments["a"]["b"]``), or :data:`MISSING`."""
    current: Any = arguments
    for part in path.split("."):
        if not isinstance(current, Mapping) or part not in current:
            return MISSING
        current = current[part]
    return current


def args_error(made: Mapping[str, Any], reference: Mapping[str, Any], rule: Rule
               ) -> str | None:
    """Why the arguments of a call made do not match a reference call's under ``rule``
    (``None``: they match)."""
    if rule == "ignore":
        return None
    if rule == "exact":
        return _extra(made, reference) or _lacking(made, reference)
    if rule == "subset":
        return _extra(made, reference)
    if rule == "superset":
        return _lacking(made, reference)
    for path in rule:
        mine, theirs = at_path(made, path), at_path(reference, path)
        if mine is MISSING:
            return f"key path {path!r} is missing"
        if theirs is MISSING:
            return f"key path {path!r} is not in the reference call"
        if not same_json(mine, theirs):
            return f"key path {path!r} is {_shown(mine)}, not {_shown(theirs)}"
    return None
