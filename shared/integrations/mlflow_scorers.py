"""MLflow scorers of our metrics for ``mlflow.genai.evaluate`` (docs/INTEGRATIONS.md).

``mlflow_scorer("faithfulness")`` is an MLflow ``Scorer``: per row, ``outputs`` (a text, or a
dict holding the CLI column ``prediction``) -> predictions, ``expectations["expected_response"]``
-> references, the ``inputs`` fields -> the other inputs by their CLI column names (question,
contexts, ...) or by the key ``columns`` maps an input to. It returns ``Feedback(value,
rationale, metadata)`` with the metric's per-sample score as ``score`` writes it; an unmeasured
row is a ``Feedback`` with an error, never 0. mlflow is imported only when a scorer is made."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..runs.rows import RowScore
from .hosts import ABSENT, FieldMap, HostScorer

#: MLflow's field map: compute argument -> the row's field that holds it (``outputs``: the
#: text, or a dict's CLI column ``prediction``; ``expected_response``: the expectations'
#: ``expected_response``); every other input from ``inputs`` (a text alone is the question),
#: then ``expectations``, by CLI column name or the key ``columns`` maps it to in ``inputs``.
FIELDS = FieldMap("mlflow", {"predictions": "outputs", "references": "expected_response"},
                  ("inputs", "expectations"))


def mlflow_record(inputs: Any, outputs: Any, expectations: Any,
                  prediction_column: str) -> dict[str, Any]:
    """One MLflow evaluation row as the record :data:`FIELDS` reads."""
    expectations = expectations if isinstance(expectations, Mapping) else {}
    return {
        "outputs": lambda: (outputs.get(prediction_column) if isinstance(outputs, Mapping)
                            else outputs),
        "expected_response": lambda: expectations.get("expected_response", ABSENT),
        "inputs": inputs if isinstance(inputs, Mapping) else {"question": inputs},
        "expectations": expectations,
    }


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

    host = HostScorer(metric, FIELDS, columns, score_key, options)
    prediction = host.rows.columns().get("predictions", "prediction")

    def score(inputs: Any = None, outputs: Any = None, expectations: Any = None) -> Any:
        row = host.row(mlflow_record(inputs, outputs, expectations, prediction), "inputs")
        return as_feedback(host.score(row), metric, host.key)

    return scorer(score, name=metric)
