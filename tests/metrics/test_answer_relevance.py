"""answer_relevance: input checks and dry-run planning (arithmetic: tests/shared/test_scoring.py;
real judges: test_rag_metrics_e2e.py)."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN


def test_bad_inputs(metric) -> None:
    with pytest.raises(ValueError, match="lengths"):
        metric.compute(questions=["q"], predictions=["a", "b"], **DRY_RUN)
    with pytest.raises(ValueError, match=r"questions\[0\] is None"):
        metric.compute(questions=[None], predictions=["a"], **DRY_RUN)
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        metric.compute(questions=["q"], predictions=[3], **DRY_RUN)
    with pytest.raises(ValueError, match="questions is required"):
        metric.compute(predictions=["a"], **DRY_RUN)


def test_dry_run_plans_statements_then_one_verdict_request_per_sample(metric) -> None:
    result = metric.compute(questions=["q1", "q2"], predictions=["Answer one.", "Answer two."],
                            **DRY_RUN)
    assert result["dry_run"]["requests"] == 2 + 2
    assert result["scores"] == [None, None]
