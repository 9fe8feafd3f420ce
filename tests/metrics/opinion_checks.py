"""The checks bias and toxicity share: the two metrics take the same input (predictions only),
ask for the same opinions and send one verdict request per sample, so each test module runs
these on its own metric (the ``metric`` fixture loads the module's namesake)."""

from __future__ import annotations

import pytest
from metric_examples import DRY_RUN


class OpinionMetricChecks:
    """Input checks and dry-run planning of a metric that judges the opinions of a text."""

    def test_bad_inputs(self, metric) -> None:
        with pytest.raises(TypeError, match=r"predictions\[1\] must be a string"):
            metric.compute(predictions=["fine", ["a", "list"]], **DRY_RUN)
        with pytest.raises(ValueError, match=r"predictions\[0\] is empty"):
            metric.compute(predictions=[""], **DRY_RUN)
        with pytest.raises(TypeError, match="takes no references"):
            metric.compute(predictions=["x"], references=["y"], **DRY_RUN)

    def test_dry_run_plans_opinions_then_one_verdict_request_per_sample(self, metric) -> None:
        texts = ["I love this city.", "I love this city.", "The food was awful."]
        result = metric.compute(predictions=texts, **DRY_RUN)
        # opinions: 2 distinct texts; verdicts: estimated once per distinct request (2)
        assert result["dry_run"]["requests"] == 2 + 2
        assert len(result["unmeasured"]) == 3
