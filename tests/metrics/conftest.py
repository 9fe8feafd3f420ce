"""Fixtures of the metric tests."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest

from shared.kit import registry


@pytest.fixture(scope="module")
def metric(request: pytest.FixtureRequest) -> evaluate.Metric:
    """The metric a test module is named after (``tests/metrics/test_<name>.py``), loaded once
    per module."""
    name = Path(request.module.__file__).stem.removeprefix("test_")
    return evaluate.load(registry.metric_path(name))
