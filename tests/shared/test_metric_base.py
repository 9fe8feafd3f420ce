"""ValidatedMetric: compute's direct path gives what evaluate's Arrow round trip gives, and the
add / add_batch workflow validates and scores like compute."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import evaluate
import pytest

from shared.kit.registry import metric_path

# evaluate's cache files are per experiment id; a private one keeps other processes' out
EXPERIMENT = f"{Path(__file__).stem}-{os.getpid()}"
WORDS = "the a cat dog sat on mat quick brown fox jumps over lazy river bank".split()


def load(name: str) -> evaluate.EvaluationModule:
    return evaluate.load(str(metric_path(name)), experiment_id=EXPERIMENT)


def sentences(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(1, 12))) for _ in range(n)]


def several_references(n: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    pool = sentences(3 * n, seed)
    return [rng.sample(pool, rng.randint(1, 3)) for _ in range(n)]


CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("accuracy", {"references": sentences(120, 2)}, {"fuzzy_match": True, "seed": 7}),
    ("bleu", {"references": several_references(120, 3)}, {}),
    ("rouge", {"references": several_references(120, 4)}, {"use_stemmer": True}),
]


@pytest.mark.parametrize(("name", "inputs", "options"), CASES, ids=[c[0] for c in CASES])
def test_direct_compute_equals_evaluate_round_trip(name: str, inputs: dict, options: dict) -> None:
    metric = load(name)
    predictions = sentences(120, 1)
    direct = metric.compute(predictions=predictions, **inputs, **options)
    metric.add_batch(predictions=predictions[:50], **{k: v[:50] for k, v in inputs.items()})
    metric.add_batch(predictions=predictions[50:], **{k: v[50:] for k, v in inputs.items()})
    assert metric.compute(**options) == direct  # through evaluate's Arrow cache file
    assert metric.compute(predictions=predictions, **inputs, **options) == direct  # state reset


def test_add_one_sample_at_a_time() -> None:
    metric = load("accuracy")
    predictions, references = ["Paris", "london", "Tokyo!"], ["paris", "London", "Berlin"]
    for prediction, reference in zip(predictions, references, strict=True):
        metric.add(prediction=prediction, reference=reference)
    assert metric.compute(seed=1) == metric.compute(
        predictions=predictions, references=references, seed=1
    )


def test_compute_with_inputs_after_add_batch_scores_both() -> None:
    """evaluate's own rule: inputs given to compute join the batches added before."""
    metric = load("accuracy")
    metric.add_batch(predictions=["a", "b"], references=["a", "x"])
    result = metric.compute(predictions=["c"], references=["c"], return_confidence=False)
    assert (result["correct"], result["total"]) == (2, 3)


def test_add_batch_validates_like_compute() -> None:
    metric = load("accuracy")
    with pytest.raises(TypeError, match=r"predictions\[1\] must be a string"):
        metric.add_batch(predictions=["a", 3], references=["a", "b"])
    with pytest.raises(ValueError, match="one entry per sample"):
        metric.add_batch(predictions=["a"], references=["a", "b"])
    with pytest.raises(TypeError, match="takes only predictions, references; give seed"):
        metric.add_batch(predictions=["a"], references=["a"], seed=1)
    with pytest.raises(ValueError, match="predictions is required"):
        metric.compute()  # nothing was added


def test_optional_input_given_to_compute_after_add_batch_is_checked() -> None:
    metric = load("answer_correctness")
    metric.add_batch(predictions=["Paris."], references=[["Paris is the capital."]])
    with pytest.raises(ValueError, match="questions=2"):
        metric.compute(questions=["Capital?", "Another?"], dry_run=True)
    result = metric.compute(predictions=["Paris."], references=["Paris."], dry_run=True)
    assert "dry_run" in result


@pytest.mark.parametrize("name", ["accuracy", "rouge", "bleu"])
def test_string_metrics_score_with_the_collector_paused_and_restore_it(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    metric = load(name)
    states: list[bool] = []
    compute = type(metric)._compute

    def spying_compute(self: Any, **kwargs: Any) -> Any:
        states.append(gc.isenabled())
        return compute(self, **kwargs)

    monkeypatch.setattr(type(metric), "_compute", spying_compute)
    metric.compute(predictions=["a cat sat"], references=["a cat sat"])
    assert states == [False]
    assert gc.isenabled()
    with pytest.raises(ValueError):
        metric.compute(predictions=["a"], references=["a", "b"])
    assert gc.isenabled()
