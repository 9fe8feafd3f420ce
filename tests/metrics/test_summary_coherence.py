"""summary_coherence: input checks and dry-run planning; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import evaluate
import pytest

from shared.kit import registry

DRY = {"dry_run": True, "show_progress": False, "use_cache": False}


@pytest.fixture(scope="module")
def metric() -> evaluate.Metric:
    return evaluate.load(registry.metric_path("summary_coherence"))


def test_bad_inputs(metric) -> None:
    with pytest.raises(ValueError, match=r"sources\[0\] is empty"):
        metric.compute(sources=[" "], predictions=["s"], **DRY)
    with pytest.raises(ValueError, match="sources is required"):
        metric.compute(predictions=["s"], **DRY)


def test_dry_run_one_request_per_sample(metric) -> None:
    result = metric.compute(sources=["a text", "b text"], predictions=["a", "b"], **DRY)
    assert result["dry_run"]["requests"] == 2
    assert result["summary_coherence"] is None
