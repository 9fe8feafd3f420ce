"""Gate a metric run in a pytest test: the pattern for your own CI (docs/GATES.md).

``assert_gates`` raises ``AssertionError`` listing every failed gate with its value and its
95% interval (the one ``assert_metric`` reads), so a failing gate reads like any failing test.
Run it with ``pytest examples/test_gates_example.py`` (the suite runs it too:
tests/test_examples.py). Fast: string metrics on the shipped sample, no judge."""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import evaluate

from shared import assert_gates, score_dataset

REPO = Path(__file__).resolve().parents[1]
ROWS = [json.loads(line) for line in
        (REPO / "examples" / "rag_sample.jsonl").read_text(encoding="utf-8").splitlines()]


def test_rouge_of_the_sample_answers() -> None:
    """A metric's compute() result: gate the lower bound of its interval, not the mean."""
    rouge = evaluate.load(str(REPO / "metrics" / "rouge"))
    result = rouge.compute(predictions=[r["prediction"] for r in ROWS],
                           references=[r["reference"] for r in ROWS])
    assert_gates(result, ["rouge.rougeL>=0.3", "rouge.rouge1>=0.35"], gate_on="lower")


def test_a_scored_dataset() -> None:
    """What score_dataset returns (the scored rows and their summary), several metrics."""
    rows = [{"prediction": r["prediction"], "reference": r["reference"] if isinstance(
        r["reference"], list) else [r["reference"]]} for r in ROWS]  # one column type for arrow
    run = score_dataset(datasets.Dataset.from_list(rows), ["rouge", "bleu"], show_progress=False)
    assert_gates(run, ["rouge.rougeL>=0.5", "bleu>=0.15"], max_unmeasured=0.0)
