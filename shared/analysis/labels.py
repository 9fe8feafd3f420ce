"""Human labels as ``agree`` reads them: their kind (boolean or numeric ratings) and the
errors of a label column that cannot be compared with scores."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

BOOLEAN = "boolean"
NUMERIC = "numeric"
# words for a boolean label; "1" and "0" are numbers (a column of 1..5 ratings is numeric)
_TRUE = {"true", "yes"}
_FALSE = {"false", "no"}


class LabelError(ValueError):
    """The human-label column cannot be compared with scores."""


class MissingLabelError(LabelError):
    """The label column is not in the data (or holds no label at all)."""


class MixedLabelError(LabelError):
    """The label column mixes kinds (booleans and ratings, numbers and text) or holds text."""


class ConstantLabelError(LabelError):
    """Every label is the same: no statistic of agreement is defined."""


def parse_labels(values: Sequence[Any], name: str = "label", *, allow_constant: bool = False
                 ) -> tuple[np.ndarray, str]:
    """Labels as floats (``NaN`` where missing) and their kind, ``"boolean"`` or ``"numeric"``.

    The kind is the column's: numeric (ratings) when it holds any number other than 0 and 1,
    else boolean (Python/numpy booleans, the words true/false/yes/no, numbers 0 and 1; text
    such as CSV's "1" reads as the number). Missing: ``None``, NaN and a blank text cell (CSV's
    empty cell), as JSON's ``null``. Raises :class:`MissingLabelError`,
    :class:`MixedLabelError` (words or booleans beside ratings, other text) or
    :class:`ConstantLabelError` (not with ``allow_constant``: an estimate of the labels'
    mean is defined whatever they are).
    """
    kinds: set[str] = set()
    out = np.full(len(values), np.nan)
    for i, value in enumerate(values):
        if value is None or (isinstance(value, float) and math.isnan(value)) or (
                isinstance(value, str) and not value.strip()):
            continue
        if isinstance(value, (bool, np.bool_)):
            kinds.add("bool")
            out[i] = float(value)
        elif isinstance(value, (int, float, np.integer, np.floating)):
            if not math.isfinite(float(value)):
                raise MixedLabelError(f"label column {name!r}, row {i}: {value!r} is not finite")
            kinds.add("number")
            out[i] = float(value)
        elif isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            kinds.add("bool")
            out[i] = 1.0 if value.strip().lower() in _TRUE else 0.0
        elif isinstance(value, str) and _is_float(value):
            kinds.add("number")
            out[i] = float(value)
        else:
            raise MixedLabelError(
                f"label column {name!r}, row {i}: {type(value).__name__} value is neither a "
                "boolean nor a number"
            )
    present = out[~np.isnan(out)]
    if present.size == 0:
        raise MissingLabelError(f"label column {name!r} holds no label")
    binary = bool(np.all((present == 0.0) | (present == 1.0)))
    if kinds == {"bool", "number"} and not binary:
        raise MixedLabelError(f"label column {name!r} mixes booleans and numeric ratings")
    if np.unique(present).size < 2 and not allow_constant:
        raise ConstantLabelError(
            f"label column {name!r}: every label is {present[0]:g}; agreement needs at least "
            "two different labels"
        )
    return out, BOOLEAN if binary else NUMERIC


def _is_float(value: str) -> bool:
    try:
        return math.isfinite(float(value))
    except ValueError:
        return False
