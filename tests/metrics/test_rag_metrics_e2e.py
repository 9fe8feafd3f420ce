"""The ten LLM-guided metrics end to end, on real judges: the llama.cpp OpenAI-compatible server
and the embedded local model (xgrammar-constrained decoding).

The tiny judge is not expected to be right; what must hold is the pipeline: documented keys,
every sample measured (constrained decoding yields schema-valid answers), scores in range and
equal to the card's formula applied to the returned verdicts, and the request budget: with one
reference and two contexts, the ten metrics on one row send at most 14 first requests through
one shared cache (plus at most one repair each, for an answer failing a grounding check), and a
second run sends none. A row may be unmeasured only for a grounding check (docs/GROUNDING.md:
the tiny judge copied the prompt's placeholder, or gave a reason about another item), which
``invalid_answers`` counts; no measured row keeps an item its text does not support.
"""

from __future__ import annotations

import math
from typing import Any

import evaluate
import numpy as np
import pytest
from faultproxy import FaultProxy
from metric_examples import metric_inputs as inputs

from shared.kit import registry
from shared.kit.invalid_answers import CATEGORIES, category

NAMES = (
    "answer_correctness", "answer_relevance", "bias", "toxicity", "context_precision",
    "context_recall", "context_relevance", "faithfulness", "hallucination", "summary_coherence",
)
ROWS = [
    {
        "question": "What is the capital of France?",
        "prediction": "Paris is the capital of France.",
        "reference": "The capital of France is Paris.",
        "contexts": ["Paris is the capital of France.", "France is in Europe."],
        "source": "Paris is the capital of France. France is in Europe.",
    },
    {  # same reference, contexts and source as the first row: fewer new requests, same checks
        "question": "Which city is the capital of France?",
        "prediction": "I think lovely Paris is the French capital.",
        "reference": "The capital of France is Paris.",
        "contexts": ["Paris is the capital of France.", "France is in Europe."],
        "source": "Paris is the capital of France. France is in Europe.",
    },
]
MAX_REQUESTS_PER_ROW = 14  # 4 extractions (statements, with the question, of the reference;
# opinions) and 10 verdict requests
GROUNDING_KINDS = {"copied_example", "placeholder_reason", "unsupported_items", "empty_extraction",
                   "verdict_mismatch"}  # the last: a reason about another item of the list
YES_NO = {"yes", "no"}


@pytest.fixture(scope="module")
def metrics() -> dict[str, evaluate.Metric]:
    return {name: evaluate.load(registry.metric_path(name)) for name in NAMES}


def run_all(metrics: dict[str, evaluate.Metric], rows: list[dict[str, Any]],
            options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: metrics[name].compute(**inputs(name, rows), **options) for name in NAMES}


def total_calls(results: dict[str, dict[str, Any]]) -> int:
    return sum(result["usage"]["calls"] for result in results.values())


def _share(verdicts: list[dict[str, str]], label: str, empty: float) -> float:
    if not verdicts:
        return empty
    return sum(v["verdict"] == label for v in verdicts) / len(verdicts)


def _check_verdicts(verdicts: list[dict[str, str]], items: list[str], labels: set[str]) -> None:
    assert [v["item"] for v in verdicts] == items
    for verdict in verdicts:
        assert verdict["verdict"] in labels
        assert isinstance(verdict["reason"], str)


# the metrics scored as the share of "yes" verdicts, one per item of a list: where that list is
# (the sample's details, or the row's input) and the score of an empty list
SHARE_OF_YES = {
    "answer_relevance": ("details", "statements", 0.0),
    "bias": ("details", "opinions", 0.0),
    "toxicity": ("details", "opinions", 0.0),
    "faithfulness": ("details", "claims", 1.0),
    "context_relevance": ("row", "contexts", 0.0),
    "hallucination": ("row", "contexts", 0.0),
}


def expected_score(name: str, detail: dict[str, Any], row: dict[str, Any]) -> float:
    """The card's formula applied to the verdicts the metric returned."""
    if name in SHARE_OF_YES:
        where, key, empty = SHARE_OF_YES[name]
        _check_verdicts(detail["verdicts"], (detail if where == "details" else row)[key], YES_NO)
        return _share(detail["verdicts"], "yes", empty)
    if name == "context_precision":
        (verdicts,) = detail["verdicts"]  # one reference
        _check_verdicts(verdicts, row["contexts"], YES_NO)
        useful = [v["verdict"] == "yes" for v in verdicts]
        assert detail["useful"] == useful
        hits = [sum(useful[:k]) / k for k in range(1, len(useful) + 1) if useful[k - 1]]
        return sum(hits) / len(hits) if hits else 0.0
    if name == "context_recall":
        (reference,) = detail["references"]
        _check_verdicts(reference["verdicts"], reference["statements"], YES_NO)
        return _share(reference["verdicts"], "yes", 0.0)
    if name == "answer_correctness":
        (reference,) = detail["references"]
        answer = [v["item"] for v in reference["TP"] + reference["FP"]]
        assert sorted(answer) == sorted(detail["prediction_statements"])
        assert {v["item"] for v in reference["FN"]} <= set(reference["statements"])
        tp, fp, fn = (len(reference[k]) for k in ("TP", "FP", "FN"))
        f1 = tp / (tp + 0.5 * (fp + fn)) if tp else 0.0
        assert reference["f1"] == pytest.approx(f1)
        similarity = min(1.0, max(0.0, reference["similarity"]))
        return 0.75 * f1 + 0.25 * similarity
    raise AssertionError(name)


def check(results: dict[str, dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    for name, result in results.items():
        assert set(result) == {name, "scores", "details", "unmeasured", "invalid_answers",
                               "usage", "Cost"}, name
        unmeasured = {u["index"]: u["reason"] for u in result["unmeasured"]}
        assert all(category(r) in GROUNDING_KINDS for r in unmeasured.values()), unmeasured
        counted = {k: sum(category(r) == k for r in unmeasured.values()) for k in CATEGORIES}
        assert result["invalid_answers"] == counted, name
        scores = result["scores"]
        assert len(scores) == len(rows) == len(result["details"])
        for index, (score, detail, row) in enumerate(zip(scores, result["details"], rows,
                                                         strict=True)):
            if index in unmeasured:
                assert score is None and detail["error"] == unmeasured[index]
                continue
            if name == "summary_coherence":
                assert isinstance(score, int) and 1 <= score <= 5
                assert isinstance(detail["reason"], str)
            else:
                assert 0.0 <= score <= 1.0 and not math.isnan(score)
                assert score == pytest.approx(expected_score(name, detail, row)), name
        measured = [s for s in scores if s is not None]
        if measured:
            assert result[name] == pytest.approx(sum(measured) / len(measured))
        else:
            assert result[name] is None


def check_request_budget(metrics: dict[str, evaluate.Metric], options: dict[str, Any],
                         repairs: Any = None) -> None:
    """``repairs()``: repair requests sent so far (counted by a proxy), or ``None`` when they
    cannot be seen: then each first request may have had one."""
    def within_budget(results: dict[str, dict[str, Any]], repaired_before: int,
                      budget: int = MAX_REQUESTS_PER_ROW) -> tuple[int, int]:
        """(repairs seen so far, first requests of this run)."""
        calls = total_calls(results)
        if repairs is None:
            assert calls <= 2 * budget, {n: r["usage"] for n, r in results.items()}
            return 0, calls
        repaired = repairs() - repaired_before
        assert calls - repaired <= budget, {n: r["usage"] for n, r in results.items()}
        assert repaired <= calls - repaired
        return repaired_before + repaired, calls - repaired

    first = run_all(metrics, ROWS[:1], options)
    check(first, ROWS[:1])
    seen, _ = within_budget(first, 0)

    again = run_all(metrics, ROWS[:1], options)  # only an answer that failed is asked again
    assert all(r["usage"]["calls"] == 0 for r in again.values() if not r["unmeasured"])
    assert {n: r["scores"] for n, r in again.items()} == {n: r["scores"] for n, r in first.items()}
    seen, asked_again = within_budget(again, seen)

    # the second row is new, and the first row's failed answers are asked again (never cached;
    # the same requests as in `again`, answered alike at temperature 0)
    both = run_all(metrics, ROWS, options)
    check(both, ROWS)
    within_budget(both, seen, MAX_REQUESTS_PER_ROW + asked_again)
    assert {n: r["scores"][0] for n, r in both.items()} == {
        n: r["scores"][0] for n, r in first.items()
    }


@pytest.mark.server
def test_ten_metrics_on_the_llama_cpp_server(
    metrics: dict[str, evaluate.Metric], llama_server: str, cache_dir: str
) -> None:
    with FaultProxy(llama_server) as proxy:  # passes everything on; counts repair requests
        options = {
            "provider": "openai-compatible", "base_url": proxy.url, "model": "smollm2",
            "response_format": "json_object", "cache_dir": cache_dir, "show_progress": False,
        }
        check_request_budget(metrics, options, repairs=lambda: sum(
            len(seen.body.get("messages") or []) > 1 for seen in proxy.seen))
        _rest_of_the_server_test(metrics, options)


def _rest_of_the_server_test(metrics: dict[str, evaluate.Metric],
                             options: dict[str, Any]) -> None:

    # answer correctness: the similarity part against sentence-transformers itself, and the
    # F1-only (Valor) definition with a threshold; both from the cache (no new request)
    from sentence_transformers import SentenceTransformer

    from shared.base.defaults import embedding_model_dir

    row = ROWS[0]
    correctness = metrics["answer_correctness"]
    result = correctness.compute(**inputs("answer_correctness", [row]), **options)
    if result["unmeasured"]:  # the tiny judge gave no grounded statements (docs/GROUNDING.md)
        assert category(result["unmeasured"][0]["reason"]) in GROUNDING_KINDS
        assert result["details"][0]["invalid_answer"] in GROUNDING_KINDS
        return  # nothing to compare the similarity part with
    reference = result["details"][0]["references"][0]
    encoder = SentenceTransformer(str(embedding_model_dir()), device="cpu")
    a, b = encoder.encode([row["prediction"], row["reference"]])
    cosine = float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))
    assert reference["similarity"] == pytest.approx(cosine, abs=1e-5)

    f1_only = correctness.compute(**inputs("answer_correctness", [row]), weights=[1, 0],
                                  threshold=0.5, **options)
    assert f1_only["usage"]["calls"] == 0
    detail = f1_only["details"][0]
    assert detail["references"][0]["similarity"] is None
    assert detail["score_before_threshold"] == reference["f1"]
    assert f1_only["scores"] == [1.0 if reference["f1"] >= 0.5 else 0.0]


@pytest.mark.slow
def test_ten_metrics_on_the_local_judge(
    metrics: dict[str, evaluate.Metric], cache_dir: str
) -> None:
    """One row on the embedded transformers judge (xgrammar-constrained): keys, rows unmeasured
    only for a grounding check, the card's formulas and the request budget (each first request
    may get one repair: no proxy sees the local judge's repairs). The rerun and second-row
    checks of the server test are the runner's, not the backend's, and are not repeated here
    (the local judge is the slowest component of the suite)."""
    first = run_all(metrics, ROWS[:1], {"cache_dir": cache_dir, "show_progress": False})
    check(first, ROWS[:1])
    assert total_calls(first) <= 2 * MAX_REQUESTS_PER_ROW, {n: r["usage"]
                                                            for n, r in first.items()}

