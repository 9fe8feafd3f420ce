"""summary_coherence: input checks and dry-run planning; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN


def test_bad_inputs(metric) -> None:
    with pytest.raises(ValueError, match=r"sources\[0\] is empty"):
        metric.compute(sources=[" "], predictions=["s"], **DRY_RUN)
    with pytest.raises(ValueError, match="sources is required"):
        metric.compute(predictions=["s"], **DRY_RUN)


def test_dry_run_one_request_per_sample(metric) -> None:
    result = metric.compute(sources=["a text", "b text"], predictions=["a", "b"], **DRY_RUN)
    assert result["dry_run"]["requests"] == 2
    assert result["summary_coherence"] is None
