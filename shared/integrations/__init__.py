"""Our metrics where evaluation already happens (docs/INTEGRATIONS.md): inspect_ai scorers
(:func:`inspect_scorer`, also registered for ``inspect score --scorer judge_metrics/<metric>``),
MLflow scorers (:func:`mlflow_scorer`), and pytest assertions with honest verdicts
(:func:`assert_metric`, the ``pytest11`` plugin in :mod:`.pytest_plugin`).

Each function imports its module when called: importing this package imports no integration
library, and the pytest plugin's load stays at pytest and the standard library."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .assertions import Verdict


def inspect_scorer(metric: str, *, columns: dict[str, str] | None = None,
                   score_key: str | None = None, **options: Any) -> Any:
    """An inspect_ai ``Scorer`` of ``metric`` (:mod:`.inspect_scorers`)."""
    from .inspect_scorers import inspect_scorer as make

    return make(metric, columns=columns, score_key=score_key, **options)


def mlflow_scorer(metric: str, *, columns: dict[str, str] | None = None,
                  score_key: str | None = None, **options: Any) -> Any:
    """An MLflow ``Scorer`` of ``metric`` (:mod:`.mlflow_scorers`)."""
    from .mlflow_scorers import mlflow_scorer as make

    return make(metric, columns=columns, score_key=score_key, **options)


def assert_metric(metric: str, data: Any, **arguments: Any) -> Verdict:
    """:func:`shared.integrations.assertions.assert_metric` (its arguments and verdicts)."""
    __tracebackhide__ = True  # a failure shows the verdict, not this frame's arguments
    from .assertions import assert_metric as check

    return check(metric, data, **arguments)


__all__ = ["assert_metric", "inspect_scorer", "mlflow_scorer"]
