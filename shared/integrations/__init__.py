"""Our metrics where evaluation already happens (docs/INTEGRATIONS.md): inspect_ai scorers
(:func:`inspect_scorer`, also registered for ``inspect score --scorer shared/<metric>``), MLflow
scorers (:func:`mlflow_scorer`), and pytest assertions with honest verdicts
(:func:`assert_metric`, the ``pytest11`` plugin in :mod:`.pytest_plugin`).

Names are loaded lazily: importing this package imports no integration library, and the pytest
plugin's load stays at pytest and the standard library."""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "inspect_scorer": "inspect_scorers:inspect_scorer",
    "mlflow_scorer": "mlflow_scorers:mlflow_scorer",
    "assert_metric": "assertions:assert_metric",
    "Verdict": "assertions:Verdict",
    "UnmeasuredError": "assertions:UnmeasuredError",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module_name, _, attribute = _EXPORTS[name].partition(":")
    value = getattr(importlib.import_module(f".{module_name}", __name__), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
