"""answer_relevance: input checks and dry-run planning (arithmetic: tests/shared/test_scoring.py;
real judges: test_rag_metrics_e2e.py)."""

from __future__ import annotations

import evaluate
import pytest

from shared.kit import registry

DRY = {"dry_run": True, "show_progress": False, "use_cache": False}


@pytest.fixture(scope="module")
def metric() -> evaluate.Metric:
    return evaluate.load(registry.metric_path("answer_relevance"))


def test_bad_inputs(metric) -> None:
    with pytest.raises(ValueError, match="lengths"):
        metric.compute(questions=["q"], predictions=["a", "b"], **DRY)
    with pytest.raises(ValueError, match=r"questions\[0\] is None"):
        metric.compute(questions=[None], predictions=["a"], **DRY)
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        metric.compute(questions=["q"], predictions=[3], **DRY)
    with pytest.raises(ValueError, match="questions is required"):
        metric.compute(predictions=["a"], **DRY)


def test_dry_run_plans_statements_then_one_verdict_request_per_sample(metric) -> None:
    result = metric.compute(questions=["q1", "q2"], predictions=["Answer one.", "Answer two."],
                            **DRY)
    assert result["dry_run"]["requests"] == 2 + 2
    assert result["scores"] == [None, None]
