"""context_precision: Valor's empty cases through compute (they need no judge call), input
checks, dry-run planning. The average-precision arithmetic and the seed's worked examples are in
tests/shared/test_scoring.py; real judges in test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN, UNCACHED

Q = "What is the capital of France?"


def test_empty_contexts_and_references_need_no_judge(metric) -> None:
    result = metric.compute(
        questions=[Q, Q, Q], contexts=[[], [], ["Paris is in France."]],
        references=[[], "Paris", []], **UNCACHED,
    )
    assert result["scores"] == [1.0, 0.0, 0.0]
    assert result["context_precision"] == pytest.approx(1 / 3)
    assert result["usage"]["calls"] == 0
    assert result["unmeasured"] == []


def test_bad_inputs(metric) -> None:
    with pytest.raises(TypeError, match=r"contexts\[0\] must be a list of strings"):
        metric.compute(questions=[Q], contexts=["a string"], references=["Paris"], **DRY_RUN)
    with pytest.raises(ValueError, match=r"contexts\[0\]\[1\] is empty"):
        metric.compute(questions=[Q], contexts=[["ok", ""]], references=["Paris"], **DRY_RUN)
    with pytest.raises(ValueError, match=r"references\[0\]\[0\] is None"):
        metric.compute(questions=[Q], contexts=[["ok"]], references=[[None]], **DRY_RUN)


def test_dry_run_one_request_per_reference(metric) -> None:
    result = metric.compute(questions=[Q], contexts=[["a", "b", "c"]],
                            references=[["Paris", "Paris, France"]], **DRY_RUN)
    assert result["dry_run"]["requests"] == 2
