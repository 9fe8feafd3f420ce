"""answer_correctness: input checks before any call, dry-run planning. The F1/weights arithmetic
is tested in tests/shared/test_scoring.py; real judges in test_rag_metrics_e2e.py."""

from __future__ import annotations

import math

import pytest
from metric_examples import DRY_RUN

P = ["Einstein was born in Spain in 1879."]
R = ["Einstein was born in 1879 in Germany."]


@pytest.mark.parametrize(
    ("weights", "error", "match"),
    [
        ([-0.5, 1.5], ValueError, r"weights\[0\] is negative"),
        ([0, 0], ValueError, "weights must not sum to 0"),
        ([1.0], ValueError, "weights must have 2 entries"),
        ([1.0, math.nan], TypeError, r"weights\[1\]"),
        ([1.0, "0.5"], TypeError, r"weights\[1\]"),
        ("0.75,0.25", TypeError, "weights must be a list"),
    ],
)
def test_bad_weights_are_named(metric, weights, error, match) -> None:
    with pytest.raises(error, match=match):
        metric.compute(predictions=P, references=R, weights=weights, **DRY_RUN)


@pytest.mark.parametrize("threshold", [-0.1, 1.5, math.nan])
def test_threshold_must_be_in_unit_interval(metric, threshold) -> None:
    with pytest.raises(ValueError, match="threshold"):
        metric.compute(predictions=P, references=R, threshold=threshold, **DRY_RUN)


def test_bad_inputs_name_argument_and_index(metric) -> None:
    with pytest.raises(ValueError, match="lengths"):
        metric.compute(predictions=P * 2, references=R, **DRY_RUN)
    with pytest.raises(ValueError, match=r"references\[1\] is an empty list"):
        metric.compute(predictions=P * 2, references=[R[0], []], **DRY_RUN)
    with pytest.raises(ValueError, match=r"references\[0\]\[1\] is None"):
        metric.compute(predictions=P, references=[[R[0], None]], **DRY_RUN)
    with pytest.raises(ValueError, match=r"predictions\[0\] is empty"):
        metric.compute(predictions=["  "], references=R, **DRY_RUN)
    with pytest.raises(TypeError, match=r"predictions\[0\] must be a string"):
        metric.compute(predictions=[["a list"]], references=R, **DRY_RUN)
    with pytest.raises(ValueError, match="lengths"):
        metric.compute(predictions=P, references=R, questions=["q1", "q2"], **DRY_RUN)
    with pytest.raises(TypeError, match="has no option 'weight' \\(did you mean 'weights'\\?\\)"):
        metric.compute(predictions=P, references=R, weight=[1, 0], **DRY_RUN)
    with pytest.raises(TypeError, match="embedding_model"):
        metric.compute(predictions=P, references=R, embedding_model=3, **DRY_RUN)


def test_dry_run_counts_statements_exactly_and_one_classification_per_reference(metric) -> None:
    result = metric.compute(predictions=P * 2, references=[R, [R[0], "Einstein was a physicist."]],
                            questions=["Where was Einstein born?"] * 2, **DRY_RUN)
    # statements: 3 distinct texts (the prediction, two distinct references); classification:
    # one per (sample, reference), of which (P, R[0]) appears twice and is planned once
    assert result["dry_run"]["requests"] == 3 + 2
    assert result["usage"]["calls"] == 0
    assert result["answer_correctness"] is None
    assert [u["index"] for u in result["unmeasured"]] == [0, 1]
    assert all("dry run" in u["reason"] for u in result["unmeasured"])


def test_similarity_of_long_texts_is_windowed(metric) -> None:
    """The embedding part alone (no judge): an answer and a reference that share their first
    ~300 words and then differ are no longer 1.0 (the model alone reads only the shared start);
    short texts keep the plain cosine similarity and get no window note."""
    import sys

    import numpy as np

    from shared import embed_texts
    from shared.kit import embeddings

    similarities = sys.modules[type(metric).__module__]._similarities
    start = " ".join(f"the committee reviewed item {k} of the budget." for k in range(40))
    answer = start + " " + " ".join(f"rain fell on field {k} all night." for k in range(150))
    reference = start + " " + " ".join(f"the orchestra played piece {k}." for k in range(150))
    short_a, short_r = "Einstein was born in 1879.", "Einstein was born in Germany in 1879."
    sims, read = similarities([answer, short_a], [[reference, short_r], [short_r]], None)
    truncated = embed_texts([answer, reference])
    assert float(truncated[0] @ truncated[1]) > 0.99  # what cutting both at 256 pieces says
    assert sims[0][0] < 0.95
    assert read[0][0]["answer_windows"] > 1 and read[0][0]["reference_windows"] > 1
    assert read[0][0]["cut"] is False and read[1] == [None]
    rows = embed_texts([short_a, short_r])
    # (encoded in another batch: float32 rounding may differ)
    assert sims[1][0] == pytest.approx(float(rows[0] @ rows[1]), abs=1e-6)
    assert len(read[0]) == 2 and read[0][1]["reference_windows"] == 1
    assert embeddings.MAX_WINDOWS >= read[0][0]["answer_windows"]
    assert np.isfinite(sims[0][1])
