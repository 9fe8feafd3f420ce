"""MLflow scorers of our metrics for ``mlflow.genai.evaluate`` (docs/INTEGRATIONS.md).

``mlflow_scorer("faithfulness")`` is an MLflow ``Scorer``: per row, ``outputs`` (a text, or a
dict holding the CLI column ``prediction``) -> predictions, ``expectations["expected_response"]``
-> references, the ``inputs`` fields -> the other inputs by their CLI column names (question,
contexts, ...) or by the key ``columns`` maps an input to. It returns ``Feedback(value,
rationale, metadata)`` with the metric's per-sample score as ``score`` writes it; an unmeasured
row is a ``Feedback`` with an error, never 0. mlflow is imported only when a scorer is made."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from ..runs.rows import MetricRows, RowScore
from .inspect_scorers import checked_columns


def mlflow_row(rows: MetricRows, columns: Mapping[str, str], inputs: Any, outputs: Any,
               expectations: Any) -> dict[str, list[Any]]:
    """One MLflow evaluation row as a one-row batch (CLI column -> [value])."""
    inputs = inputs if isinstance(inputs, Mapping) else {"question": inputs}
    expectations = expectations if isinstance(expectations, Mapping) else {}
    row = rows.mapped(columns, inputs, "inputs")
    for argument, column in rows.columns().items():
        if column in row:
            continue
        if argument == "predictions":
            row[column] = [outputs.get(column) if isinstance(outputs, Mapping) else outputs]
        elif argument == "references" and "expected_response" in expectations:
            row[column] = [expectations["expected_response"]]
        elif column in inputs:
            row[column] = [inputs[column]]
        elif column in expectations:
            row[column] = [expectations[column]]
    return row


def as_feedback(result: RowScore, name: str, key: str) -> Any:
    from mlflow.entities import AssessmentError, Feedback

    metadata = {"score_key": key, **{k: v if isinstance(v, str) else json.dumps(v, default=str)
                                     for k, v in result.details.items()}}
    if result.value is None:
        return Feedback(name=name, error=AssessmentError(
            error_code="UNMEASURED", error_message=result.unmeasured or "unmeasured"),
            rationale=result.unmeasured, metadata=metadata)
    reason = result.details.get("reason")
    return Feedback(name=name, value=result.value,
                    rationale=reason if isinstance(reason, str) else None, metadata=metadata)


def mlflow_scorer(metric: str, *, columns: Mapping[str, str] | None = None,
                  score_key: str | None = None, **options: Any) -> Any:
    """An MLflow ``Scorer`` named ``metric`` for ``mlflow.genai.evaluate(data=...,
    scorers=[...])``; ``options``: the metric's and the judge's, checked now."""
    from mlflow.genai.scorers import scorer

    rows = MetricRows(metric, score_key=score_key, **options)
    mapped = checked_columns(rows, columns)
    lock = threading.Lock()  # MLflow scores rows in threads; a metric object is not thread-safe

    def score(inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Any:
        row = mlflow_row(rows, mapped, inputs, outputs, expectations)
        with lock:
            result = rows.score(row)[0]
        return as_feedback(result, metric, rows.key)

    return scorer(score, name=metric)
