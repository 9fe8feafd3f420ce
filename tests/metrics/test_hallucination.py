"""hallucination: no contexts is a named input error raised before any call; dry-run planning.
Arithmetic: tests/shared/test_scoring.py; real judges: test_rag_metrics_e2e.py."""

from __future__ import annotations

import pytest
from metric_examples import UNCACHED


def test_empty_contexts_is_an_input_error(metric) -> None:
    with pytest.raises(ValueError, match=r"contexts\[1\] is empty"):
        # no judge options: the error comes before any judge is configured or called
        metric.compute(predictions=["a", "b"], contexts=[["c"], []])


def test_dry_run_one_request_per_sample(metric) -> None:
    result = metric.compute(predictions=["a", "b"], contexts=[["c"], ["d", "e"]], dry_run=True,
                            **UNCACHED)
    assert result["dry_run"]["requests"] == 2
