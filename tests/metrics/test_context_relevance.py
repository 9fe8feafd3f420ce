"""context_relevance: empty contexts (no judge call), input checks, dry-run planning. Arithmetic:
tests/shared/test_scoring.py; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import UNCACHED


def test_no_contexts_scores_zero_without_a_call(metric) -> None:
    result = metric.compute(questions=["q?"], contexts=[[]], **UNCACHED)
    assert result["scores"] == [0.0]
    assert result["context_relevance"] == 0.0
    assert result["usage"]["calls"] == 0


def test_bad_inputs_and_dry_run(metric) -> None:
    with pytest.raises(ValueError, match="lengths"):
        metric.compute(questions=["q", "r"], contexts=[["c"]], dry_run=True, **UNCACHED)
    result = metric.compute(questions=["q", "r"], contexts=[["c"], ["d", "e"]], dry_run=True,
                            **UNCACHED)
    assert result["dry_run"]["requests"] == 2
