"""The input check the reference-based metrics' tests share: a bad value is refused with an error
that names the input at fault."""

from __future__ import annotations

from typing import Any

import pytest


def assert_refused(metric: Any, error: type[Exception], needle: str, **inputs: Any) -> None:
    """``metric`` on two rows (predictions ``a, b``, references ``a, c``, each replaced by
    ``inputs`` where given, with any option ``inputs`` adds) raises ``error``, whose message
    names ``needle``."""
    with pytest.raises(error) as info:
        metric.compute(**{"predictions": ["a", "b"], "references": ["a", "c"], **inputs})
    assert needle in str(info.value)
