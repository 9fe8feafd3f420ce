"""SampleResult, MetricOutput, build_output and results_of: the per-sample contract."""

from __future__ import annotations

import json
import math
import pickle

import pytest

from shared import get_judge, judge_config
from shared.kit.results import (
    MetricOutput,
    SampleResult,
    aggregates_of,
    build_output,
    mean_measured,
    results_of,
    with_results,
)


def test_constructors_mark_measured_and_unmeasured() -> None:
    good = SampleResult.measured(0.5, verdicts=["yes"])
    bad = SampleResult.unmeasured("judge timed out", step="verdicts")
    assert (good.score, dict(good.details), good.is_measured) == (0.5, {"verdicts": ["yes"]}, True)
    assert bad.score is None and not bad.is_measured
    assert bad.unmeasured_reason == "judge timed out"
    assert dict(bad.details) == {"error": "judge timed out", "step": "verdicts"}
    with pytest.raises(AttributeError):
        good.score = 1.0  # type: ignore[misc]


def test_value_reads_one_of_several_scores() -> None:
    rouge = SampleResult(0.4, {}, None, {"rouge1": 0.4, "rougeL": 0.3})
    assert rouge.value("rougeL") == 0.3 and rouge.value("rouge2") is None
    assert SampleResult.measured(0.7).value("bleu") == 0.7


def test_build_output_without_a_judge() -> None:
    results = [SampleResult.measured(1.0, a=1), SampleResult.measured(0.0, a=2)]
    output = build_output({"score": 0.5}, results)
    assert output == {"score": 0.5, "scores": [1.0, 0.0], "details": [{"a": 1}, {"a": 2}]}
    assert results_of(output) == tuple(results)
    assert aggregates_of(output) == {"score": 0.5}
    with_unmeasured = build_output({"score": float("nan")},
                                   [SampleResult.unmeasured("r"), SampleResult(float("nan"))])
    assert with_unmeasured["score"] is None and with_unmeasured["scores"] == [None, None]
    assert with_unmeasured["unmeasured"] == [{"index": 0, "reason": "r"}]


def test_build_output_with_a_judge_has_the_documented_keys() -> None:
    judge = get_judge(judge_config(provider="openai-compatible", model="gpt-4o-mini",
                                   base_url="http://127.0.0.1:9/v1"))
    reason = "verdicts: invalid judge answer: the reason is a format placeholder"
    results = [SampleResult.measured(1.0), SampleResult.unmeasured(reason)]
    output = build_output({"M": 1.0}, results, judge)
    assert list(output) == ["M", "scores", "details", "unmeasured", "invalid_answers", "usage",
                            "Cost"]
    assert output["unmeasured"] == [{"index": 1, "reason": reason}]
    assert output["usage"]["calls"] == 0


def test_output_is_a_plain_dict_to_json_and_pickle() -> None:
    output = with_results({"bleu": 0.5, "scores": [0.5]}, lambda: [SampleResult(0.5)],
                          ["scores"])
    assert json.loads(json.dumps(output)) == {"bleu": 0.5, "scores": [0.5]}
    copy = pickle.loads(pickle.dumps(output))
    assert isinstance(copy, MetricOutput) and copy == output
    assert results_of(copy) == (SampleResult(0.5),)
    assert copy.per_sample_keys == frozenset({"scores"})


def test_results_are_built_once_and_only_when_asked() -> None:
    calls = []

    def make() -> list[SampleResult]:
        calls.append(1)
        return [SampleResult(1.0)]

    output = with_results({"x": 1}, make, [])
    assert calls == []
    assert results_of(output) == results_of(output) == (SampleResult(1.0),)
    assert calls == [1]


def test_results_of_refuses_a_plain_dict() -> None:
    with pytest.raises(TypeError, match="not a judge-metrics output"):
        results_of({"scores": [1.0]})


def test_mean_measured_skips_unmeasured() -> None:
    assert mean_measured([1.0, None, float("nan"), 0.0]) == 0.5
    assert mean_measured([]) is None
    assert not math.isnan(mean_measured([True, False]) or 0.0)
