"""Invalid judge answers by kind: the reasons the grounding checks
(:mod:`shared.kit.steps.grounding`) and the runner write, read back into the
:data:`CATEGORIES` every judge metric counts (``invalid_answers``).

Apart from the checks themselves so that the metric base, the results and the panel can count
them without importing the judge steps (which import those modules)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

# The failure categories every judge metric counts (``invalid_answers``), in display order.
CATEGORIES = ("copied_example", "placeholder_reason", "unsupported_items", "empty_extraction",
              "verdict_mismatch", "invalid_json", "no_label", "malformed_probabilities")

COPIED = "copied the prompt's example"
PLACEHOLDER = "copied the format placeholder"
UNSUPPORTED = "not supported by the text"
EMPTY = "nothing extracted from a text that has words"
MISMATCH = "verdicts do not match the items asked about"


def category(reason: str) -> str | None:
    """The :data:`CATEGORIES` entry of an unmeasured reason, ``None`` when it is not an invalid
    judge answer (a backend fault, an empty input, ...)."""
    if "invalid judge answer" not in reason:
        return None
    if "invalid judge answer: no label" in reason:
        return "no_label"
    if re.search(r"invalid judge answer: (the probability of|no probability for|label "
                 r"probabilities)", reason):
        return "malformed_probabilities"
    if COPIED in reason:
        return "copied_example"
    if PLACEHOLDER in reason:
        return "placeholder_reason"
    if UNSUPPORTED in reason:
        return "unsupported_items"
    if EMPTY in reason:
        return "empty_extraction"
    if MISMATCH in reason or re.search(
            r"is too (short|long)|(non-unique|fewer|more) items|was expected \(at /", reason):
        return "verdict_mismatch"
    return "invalid_json"


def count_invalid(unmeasured: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Per :data:`CATEGORIES` entry, the unmeasured rows whose reason is that invalid answer."""
    counts = dict.fromkeys(CATEGORIES, 0)
    for row in unmeasured:
        kind = category(str(row.get("reason", "")))
        if kind is not None:
            counts[kind] += 1
    return counts
