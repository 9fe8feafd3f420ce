"""toxicity: input checks and dry-run planning (arithmetic: tests/shared/test_scoring.py; real
judges: test_rag_metrics_e2e.py)."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN


def test_bad_inputs(metric) -> None:
    with pytest.raises(TypeError, match=r"predictions\[1\] must be a string"):
        metric.compute(predictions=["fine", ["a", "list"]], **DRY_RUN)
    with pytest.raises(ValueError, match=r"predictions\[0\] is empty"):
        metric.compute(predictions=[""], **DRY_RUN)
    with pytest.raises(TypeError, match="takes no references"):
        metric.compute(predictions=["x"], references=["y"], **DRY_RUN)


def test_dry_run_plans_opinions_then_one_verdict_request_per_sample(metric) -> None:
    texts = ["I love this city.", "I love this city.", "The food was awful."]
    result = metric.compute(predictions=texts, **DRY_RUN)
    # opinions: 2 distinct texts; verdicts: estimated once per distinct request (2)
    assert result["dry_run"]["requests"] == 2 + 2
    assert len(result["unmeasured"]) == 3
