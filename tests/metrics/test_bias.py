"""bias: input checks and dry-run planning (arithmetic: tests/shared/test_scoring.py; real
judges: test_rag_metrics_e2e.py). The checks are bias's and toxicity's alike (opinion_checks.py)."""

from __future__ import annotations

from opinion_checks import OpinionMetricChecks


class TestBias(OpinionMetricChecks):
    """The opinion-metric checks, on bias."""
