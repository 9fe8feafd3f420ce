"""context_recall: empty contexts (no judge call), input checks, dry-run planning. Arithmetic:
tests/shared/test_scoring.py; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN, UNCACHED


def test_no_contexts_scores_zero_without_a_call(metric) -> None:
    result = metric.compute(contexts=[[]], references=["Paris is the capital."], **UNCACHED)
    assert result["scores"] == [0.0]
    assert result["usage"]["calls"] == 0


def test_bad_inputs(metric) -> None:
    with pytest.raises(ValueError, match=r"references\[0\] is an empty list"):
        metric.compute(contexts=[["c"]], references=[[]], **DRY_RUN)
    with pytest.raises(TypeError, match=r"contexts\[0\] must be a list of strings"):
        metric.compute(contexts=["c"], references=["r"], **DRY_RUN)


def test_dry_run_statements_exact_then_one_request_per_reference(metric) -> None:
    result = metric.compute(contexts=[["c1", "c2"], []], references=[["r1", "r2"], "r3"], **DRY_RUN)
    # statements of r1 and r2 (the sample without contexts sends nothing), then 2 verdicts
    assert result["dry_run"]["requests"] == 2 + 2
    assert result["scores"] == [None, 0.0]
