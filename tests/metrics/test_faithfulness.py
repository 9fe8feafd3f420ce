"""faithfulness: no contexts (0.0, no judge call), input checks, dry-run planning. Arithmetic
(no claims: 1.0): tests/shared/test_scoring.py; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import UNCACHED


def test_no_contexts_scores_zero_without_a_call(metric) -> None:
    result = metric.compute(predictions=["Paris is the capital of France."], contexts=[[]],
                            **UNCACHED)
    assert result["scores"] == [0.0]
    assert result["usage"]["calls"] == 0


def test_bad_inputs_and_dry_run(metric) -> None:
    with pytest.raises(TypeError, match=r"contexts\[0\]\[0\] must be a string"):
        metric.compute(predictions=["p"], contexts=[[1]], dry_run=True, **UNCACHED)
    result = metric.compute(predictions=["p", "q"], contexts=[["c"], []], dry_run=True, **UNCACHED)
    # claims of the first answer only (the second has no contexts), then one verdict request
    assert result["dry_run"]["requests"] == 1 + 1
    assert result["scores"] == [None, 0.0]
