"""A metric's options in the page: the declared ones (``OPTIONS`` of the metric class, see
``shared.base.options``) that a field can hold, and the ``compute`` value of an option field."""

from __future__ import annotations

import json
import re
from typing import Any

from ..base.options import DuplicateKeyError, Option, json_value
from .inputs import DemoInputError
from .render import show

MISSING = object()


def metric_options(metric: Any) -> list[Option]:
    """The options a metric declares that the page can show as a field, in declaration order
    (not the judge options: the judge fields set those; not a function-valued option)."""
    return [option for option in getattr(type(metric), "OPTIONS", ()) if option.kind is not None]


def unset_number(option: Option) -> bool:
    """A number option whose default is ``None`` (unset, e.g. accuracy's ``threshold``): its
    field is a text box, empty for unset. A number field cannot show "unset" (Gradio's
    ``Number(value=None)`` shows and sends 0, which is a threshold like any other)."""
    return option.kind in ("int", "float") and option.default is None


def option_value(option: Option, value: Any) -> Any:
    """The ``compute`` value of an option field, or ``MISSING`` for "use the default"."""
    if option.kind == "bool":
        return bool(value)
    if value is None or (isinstance(value, str) and not value.strip()):
        return MISSING
    if option.kind in ("int", "float") and isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise DemoInputError(f"option {option.name}: {value.strip()!r} is not a number; "
                                 "leave it empty for the default") from None
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
            return json_value(value)
        except DuplicateKeyError as error:
            raise DemoInputError(f"option {option.name}: {error}") from None
        except json.JSONDecodeError as error:
            raise DemoInputError(
                f"option {option.name}: not valid JSON ({error.msg}); e.g. {json_example(option)}"
            ) from None
    return value


def json_example(option: Option) -> str:
    """An example of a JSON option's value: its default, else the example its doc gives
    (``e.g. {"1": "rude"}``), else one of its type."""
    if option.default is not None:
        return show(option.default)
    found = re.search(r"e\.g\. (\{.*\}|\[.*\])", option.doc or "")
    if found:
        try:
            return json.dumps(json.loads(found.group(1)))
        except ValueError:
            pass
    return '{"key": "value"}' if option.type is dict else '["first", "second"]'


def option_choices(option: Option) -> list[tuple[str, Any]] | None:
    """The (label, value) pairs of a dropdown for an option with declared ``choices`` (with an
    empty "the default" entry where the option may be left unset); ``None`` without choices."""
    if not option.choices:
        return None
    pairs = [(str(choice), choice) for choice in option.choices]
    if option.nullable or option.default is None:
        pairs.insert(0, ("(none: the default)", ""))
    return pairs


def field_value(option: Option, value: Any) -> Any:
    if option.kind == "json":
        return "" if value is None else json.dumps(list(value) if isinstance(value, tuple)
                                                   else value)
    if option.kind == "text" or unset_number(option):
        return "" if value is None else str(value)
    return value
