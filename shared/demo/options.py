"""A metric's options in the page: which there are (with their kinds and defaults), and the
``compute`` value of an option field."""

from __future__ import annotations

import ast
import inspect
import json
import re
from dataclasses import dataclass
from typing import Any

from ..config import JUDGE_OPTION_NAMES
from ..registry import MetricSpec
from .inputs import DemoInputError
from .render import _show


@dataclass(frozen=True)
class OptionSpec:
    """One metric option shown in the page: ``kind`` is bool, int, float, json or text."""

    name: str
    kind: str
    default: Any
    doc: str = ""


_ARG_LINE = re.compile(r"^ {4}(\w+) \((.*?)\):\s*(.*)$")
_DEFAULT = re.compile(r"\bDefault:?\s+(.*?)(?:\.(?:\s|$)|:|\s\(|$)")
_MISSING = object()


def _documented_args(inputs_description: str) -> dict[str, tuple[str, str]]:
    """``name -> (type text, description)`` from the ``Args:`` section of a metric's
    ``inputs_description`` (``    name (type): description``, continued on deeper lines)."""
    args: dict[str, list[str]] = {}
    current: str | None = None
    in_args = False
    for line in (inputs_description or "").splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            in_args = line.strip().rstrip(":") == "Args"
            current = None
            continue
        if not in_args:
            continue
        match = _ARG_LINE.match(line)
        if match:
            current = match.group(1)
            args[current] = [match.group(2), match.group(3).strip()]
        elif line.startswith(" " * 8) and current:
            args[current][1] += " " + line.strip()
        else:
            current = None
    return {name: (kind, doc) for name, (kind, doc) in args.items()}


def _kind(type_text: str, default: Any) -> str | None:
    text = type_text.lower()
    if "callable" in text:
        return None  # no way to type a function into a page
    if isinstance(default, bool) or "bool" in text:
        return "bool"
    if isinstance(default, (list, tuple, dict)) or any(
        word in text for word in ("list", "pair", "dict", "tuple", "sequence")
    ):
        return "json"
    if isinstance(default, float) or "float" in text:
        return "float"
    if isinstance(default, int) or re.search(r"\bint\b", text):
        return "int"
    return "text"


def metric_options(metric: Any, spec: MetricSpec) -> list[OptionSpec]:
    """The options a metric takes besides its inputs (and, for a judge metric, besides the judge
    options), in the order its documentation lists them, with their defaults."""
    inputs = {i.name for i in getattr(type(metric), "INPUTS", ())}
    inputs |= set(spec.columns) | set(spec.optional_columns)
    skip = inputs | (set(JUDGE_OPTION_NAMES) if spec.judge else set())
    documented = _documented_args(getattr(metric, "inputs_description", "") or "")
    signature: dict[str, Any] = {}
    for param in inspect.signature(type(metric)._compute).parameters.values():
        if param.kind in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY) and param.name != "self":
            signature[param.name] = param.default
    names = [n for n in documented if n not in skip]
    names += [n for n, d in signature.items() if n not in skip and n not in names and d is not
              inspect.Parameter.empty]
    options = []
    for name in names:
        type_text, doc = documented.get(name, ("", ""))
        default = signature.get(name, _MISSING)
        if default in (_MISSING, None, inspect.Parameter.empty):
            default = _documented_default(doc)
        kind = _kind(type_text, default)
        if kind is not None:
            options.append(OptionSpec(name, kind, default, doc))
    return options


def _documented_default(doc: str) -> Any:
    match = _DEFAULT.search(doc)
    if not match:
        return None
    try:
        return ast.literal_eval(match.group(1).strip())
    except (ValueError, SyntaxError):
        return None



def option_value(option: OptionSpec, value: Any) -> Any:
    """The ``compute`` value of an option field, or ``_MISSING`` for "use the default"."""
    if option.kind == "bool":
        return bool(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return _MISSING
    if option.kind == "int":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value
    if option.kind == "float":
        return float(value) if isinstance(value, (int, float)) else value
    if option.kind == "json":
        if not isinstance(value, str):
            return value
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise DemoInputError(
                f"option {option.name}: not valid JSON ({error.msg}); e.g. {_show(option.default)}"
            ) from None
    return value



def _field_value(option: OptionSpec, value: Any) -> Any:
    if option.kind == "json":
        return "" if value is None else json.dumps(value)
    if option.kind == "text":
        return "" if value is None else str(value)
    return value
