"""shared.runs.batch: score_dataset on an in-memory datasets.Dataset (string metrics; a dry run of a
judge metric behind a counting proxy). Expected numbers come from the metrics' own ``compute``
on the whole, unchunked lists."""

from __future__ import annotations

import json

import datasets
import evaluate
import pytest
from faultproxy import FaultProxy

from shared import UserInputError, score_dataset
from shared.kit import registry
from shared.runs.batch import select_metrics

ROWS = [
    {"question": "Capital of France?", "prediction": "Paris", "reference": ["Paris"]},
    {"question": "Who wrote Hamlet?", "prediction": "Shakespeare wrote it",
     "reference": ["William Shakespeare wrote Hamlet"]},
    {"question": "Largest planet?", "prediction": "Jupiter", "reference": ["Saturn", "Jupiter"]},
    {"question": "Boiling point of water?", "prediction": "100 degrees Celsius at sea level",
     "reference": ["Water boils at 100 degrees Celsius at sea level"]},
    {"question": "Colour of the sky?", "prediction": "green", "reference": ["blue"]},
    {"question": "Speed of light?", "prediction": "about 300,000 km per second",
     "reference": ["roughly 300,000 kilometres per second", "about 186,000 miles per second"]},
    {"question": "Author of 1984?", "prediction": "George Orwell", "reference": ["George Orwell"]},
]


def _dataset() -> datasets.Dataset:
    return datasets.Dataset.from_list(ROWS)


def _load(name: str) -> evaluate.EvaluationModule:
    return evaluate.load(registry.metric_path(name))


def test_rouge_and_bleu_columns_match_one_unchunked_compute() -> None:
    dataset = _dataset()
    scored, summary = score_dataset(dataset, ["rouge", "bleu"], chunk_size=3,
                                    show_progress=False)
    predictions = [r["prediction"] for r in ROWS]
    references = [r["reference"] for r in ROWS]
    rouge = _load("rouge").compute(predictions=predictions, references=references)
    bleu = _load("bleu").compute(predictions=predictions, references=references)

    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert scored[key] == pytest.approx([s[key] for s in rouge["scores"]], abs=1e-12)
    assert scored["bleu"] == pytest.approx(bleu["scores"], abs=1e-12)
    assert set(scored.column_names) == {
        *ROWS[0], "rouge1", "rouge2", "rougeL", "rougeLsum", "rouge_details", "bleu",
        "bleu_details",
    }
    by_name = {m.metric: m for m in summary.metrics}
    for key in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert by_name["rouge"].aggregates[key] == pytest.approx(rouge[key], abs=1e-9)
    assert by_name["bleu"].aggregates["bleu"] == pytest.approx(bleu["bleu"], abs=1e-9)
    assert by_name["bleu"].rows == len(ROWS) and by_name["bleu"].unmeasured == 0
    assert by_name["bleu"].columns == ["bleu", "bleu_details"]


def test_accuracy_takes_the_best_of_several_references() -> None:
    scored, summary = score_dataset(_dataset(), "accuracy", chunk_size=2, show_progress=False)
    accuracy = _load("accuracy")
    expected = []
    for row in ROWS:
        per_reference = accuracy.compute(
            predictions=[row["prediction"]] * len(row["reference"]), references=row["reference"]
        )["scores"]
        expected.append(max(per_reference))
    assert scored["accuracy"] == expected
    assert summary.metrics[0].aggregates["accuracy"] == pytest.approx(sum(expected) / len(ROWS))
    # accuracy takes the list itself (no expansion): it names the matching reference
    details = json.loads(scored["accuracy_details"][2])  # "Jupiter" matches the 2nd reference
    assert details["best_reference"] == 1 and "best_of" not in details
    assert "best_reference" not in json.loads(scored["accuracy_details"][0])  # one reference


def test_metrics_accept_dataset_columns_directly() -> None:
    dataset = _dataset()
    single = dataset.map(lambda r: {"reference": r["reference"][0]})
    accuracy = _load("accuracy")
    from_columns = accuracy.compute(predictions=single["prediction"],
                                    references=single["reference"])
    from_lists = accuracy.compute(predictions=list(single["prediction"]),
                                  references=list(single["reference"]))
    assert from_columns == from_lists


def test_bad_cell_names_the_column_and_the_dataset_row() -> None:
    rows = [dict(r) for r in ROWS]
    rows[5]["prediction"] = None
    with pytest.raises(UserInputError, match=r"column 'prediction', row 5: is None"):
        score_dataset(datasets.Dataset.from_list(rows), ["rouge"], chunk_size=4,
                      show_progress=False)
    rows[5]["prediction"] = "fine"
    rows[6]["reference"] = ["George Orwell", ""]
    with pytest.raises(UserInputError, match=r"column 'reference', row 6, item 1: .*empty"):
        score_dataset(datasets.Dataset.from_list(rows), ["rouge"], chunk_size=4,
                      show_progress=False)


def test_select_all_skips_metrics_whose_columns_are_missing() -> None:
    names, skipped = select_metrics("all", ["question", "prediction", "reference"])
    for name in names:
        assert set(registry.METRICS[name].columns.values()) <= {"question", "prediction",
                                                                 "reference"}
    for name in registry.available():
        assert (name in names) != (name in skipped)
    if "faithfulness" in registry.available():
        assert skipped["faithfulness"] == "needs column(s) contexts"
    with pytest.raises(UserInputError, match="unknown metric 'nope'"):
        select_metrics(["nope"], ["prediction"])
    with pytest.raises(UserInputError, match="needs column\\(s\\) 'reference'"):
        select_metrics(["rouge"], ["prediction"])


def test_options_are_checked_before_any_work() -> None:
    with pytest.raises(UserInputError, match="the run has no option 'temprature'"):
        score_dataset(_dataset(), "rouge", temprature=0, show_progress=False)
    with pytest.raises(UserInputError, match="base_url"):
        score_dataset(_dataset(), "rouge", provider="openai-compatible", show_progress=False)
    with pytest.raises(UserInputError, match="chunk_size"):
        score_dataset(_dataset(), "rouge", chunk_size=0, show_progress=False)


def test_dry_run_sends_nothing_and_adds_no_column(cache_dir: str) -> None:
    with FaultProxy(None, default="status:500") as proxy:
        dataset = _dataset()
        scored, summary = score_dataset(
            dataset, ["l3score", "rouge"], provider="openai-compatible", base_url=proxy.url,
            model="smollm2", cache_dir=cache_dir, dry_run=True, show_progress=False,
        )
        assert proxy.count == 0
    assert scored.column_names == dataset.column_names
    assert summary.dry_run and summary.skipped == {"rouge": "calls no judge (dry run)"}
    (l3,) = summary.metrics
    # one request per (row, reference) pair: l3score takes one reference per request
    assert l3.dry_run["requests"] == sum(len(r["reference"]) for r in ROWS)
    assert l3.dry_run["prompt_tokens"] > 0
    assert l3.calls == 0
    assert "est. cost" in summary.table()


def test_the_run_table_totals_the_judge_requests_sent_and_cached() -> None:
    """The summary says what the run sent in one line (a rerun on a warm cache: 0 sent)."""
    from shared.runs.summary import BatchSummary, MetricSummary

    summary = BatchSummary([
        MetricSummary("faithfulness", {"faithfulness": 0.5}, 4, 0, True, calls=3, cache_hits=5,
                      cost=0.25),
        MetricSummary("rouge", {"rouge1": 0.5}, 4, 0, False),
        MetricSummary("toxicity", {"toxicity": 0.0}, 4, 1, True, calls=0, cache_hits=7, cost=None),
    ], {})
    total = summary.table().splitlines()[-1].split()
    assert total == ["total", "3", "12", "unknown"]
    no_judge = BatchSummary([MetricSummary("rouge", {"rouge1": 0.5}, 4, 0, False)], {})
    assert "total" not in no_judge.table()
